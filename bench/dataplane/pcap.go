package dataplane

import (
	"errors"
	"fmt"
	"io"

	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"rig/internal/host"
)

// MaxPcapSize bounds the capture file ReadPcap reads: its frames are all
// held in memory (and copied into mbufs) before the run.
const MaxPcapSize = 256 << 20

// ReadPcap returns the frames of an Ethernet pcap file (FCS not included,
// as captured). Frames longer than maxLen are an error: they would not fit
// an mbuf.
func ReadPcap(path string, maxLen int) ([][]byte, error) {
	f, err := host.OpenLiveRegular(path) // a FIFO or a device is refused at once
	if err != nil {
		return nil, fmt.Errorf("pcap %s: %w: give a libpcap capture file", path, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, fmt.Errorf("pcap %s: %w", path, err)
	} else if fi.Size() > MaxPcapSize {
		return nil, fmt.Errorf("pcap %s: %d bytes, more than the %d MiB rig replays (every frame is held in memory): cut it, e.g. editcap -r %s out.pcap 1-100000", path, fi.Size(), MaxPcapSize>>20, path)
	}
	r, err := pcapgo.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("pcap %s: %w (want a libpcap file; pcapng is not supported)", path, err)
	}
	if r.LinkType() != layers.LinkTypeEthernet {
		return nil, fmt.Errorf("pcap %s: link type %v, want Ethernet", path, r.LinkType())
	}
	var frames [][]byte
	for {
		data, ci, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("pcap %s: frame %d: %w", path, len(frames)+1, err)
		}
		if ci.CaptureLength < ci.Length {
			return nil, fmt.Errorf("pcap %s: frame %d truncated (%d of %d bytes captured): replay needs whole frames", path, len(frames)+1, ci.CaptureLength, ci.Length)
		}
		if len(data) < 14 || len(data) > maxLen {
			return nil, fmt.Errorf("pcap %s: frame %d is %d bytes, want 14..%d", path, len(frames)+1, len(data), maxLen)
		}
		frames = append(frames, append([]byte(nil), data...))
	}
	if len(frames) == 0 {
		return nil, fmt.Errorf("pcap %s: no frames", path)
	}
	return frames, nil
}
