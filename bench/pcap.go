package bench

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
)

// ReadPcap returns the frames of an Ethernet pcap file (FCS not included,
// as captured). Frames longer than maxLen are an error: they would not fit
// an mbuf.
func ReadPcap(path string, maxLen int) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("pcap %s: %w", path, err)
	}
	defer f.Close()
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
