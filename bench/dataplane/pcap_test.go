package dataplane

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"rig/internal/host"
)

// samplePcap is a libpcap file as tcpdump writes it (via pcapgo's writer).
func samplePcap(t testing.TB, frames ...[]byte) []byte {
	var b bytes.Buffer
	w := pcapgo.NewWriter(&b)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		if err := w.WritePacket(captureInfo(len(f)), f); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

func TestReadPcap(t *testing.T) {
	dir := t.TempDir()
	f1, f2 := bytes.Repeat([]byte{1}, 60), bytes.Repeat([]byte{2}, 1514)
	p := filepath.Join(dir, "a.pcap")
	if err := os.WriteFile(p, samplePcap(t, f1, f2), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := ReadPcap(p, 9000)
	if err != nil || len(got) != 2 || !bytes.Equal(got[0], f1) || !bytes.Equal(got[1], f2) {
		t.Fatalf("ReadPcap: %d frames, %v", len(got), err)
	}
	if _, err := ReadPcap(p, 1000); err == nil {
		t.Error("1514 B frame with max 1000: want an error")
	}
	empty := filepath.Join(dir, "e.pcap")
	if err := os.WriteFile(empty, samplePcap(t), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPcap(empty, 9000); err == nil {
		t.Error("pcap without frames: want an error")
	}
	if _, err := ReadPcap(filepath.Join(dir, "missing.pcap"), 9000); err == nil {
		t.Error("missing file: want an error")
	}
	// a FIFO is refused at once (a blocking open would wait for a writer
	// for ever), and so is a device
	fifo := filepath.Join(dir, "fifo.pcap")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, "/dev/zero"} {
		done := make(chan error, 1)
		go func() { _, err := ReadPcap(p, 9000); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, host.ErrNotRegular) || !strings.Contains(err.Error(), "pcap "+p) {
				t.Errorf("%s: %v, want not a regular file naming it", p, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: ReadPcap still blocked after 5 s", p)
		}
	}
}

func FuzzReadPcap(f *testing.F) {
	f.Add(samplePcap(f, bytes.Repeat([]byte{0xab}, 60)))
	f.Add(samplePcap(f, bytes.Repeat([]byte{1}, 14), bytes.Repeat([]byte{2}, 1514)))
	f.Add([]byte("not a pcap"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "f.pcap")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		frames, err := ReadPcap(p, 9000)
		if err == nil && len(frames) == 0 {
			t.Fatal("no error and no frames")
		}
		for _, fr := range frames {
			if len(fr) < 14 || len(fr) > 9000 {
				t.Fatalf("frame of %d bytes accepted", len(fr))
			}
		}
	})
}
