package lab

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// A reader of a card attribute never sees it empty or torn while the port
// keeper rewrites it (before: truncate, then write), the inode stays, and a
// shorter value is padded (readers trim, as for sysfs).
func TestWriteAttrNeverEmptyForReaders(t *testing.T) {
	p := filepath.Join(t.TempDir(), "state")
	if err := os.WriteFile(p, []byte("4: ACTIVE\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(p)
	var stop atomic.Bool
	bad := make(chan string, 1)
	go func() {
		for !stop.Load() {
			b, err := os.ReadFile(p)
			if v := strings.TrimSpace(string(b)); err != nil || (v != "4: ACTIVE" && v != "1: DOWN") {
				select {
				case bad <- v:
				default:
				}
				return
			}
		}
	}()
	for i := 0; i < 20000; i++ {
		v := "1: DOWN"
		if i%2 == 1 {
			v = "4: ACTIVE"
		}
		if err := writeAttr(p, v); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	select {
	case v := <-bad:
		t.Fatalf("a reader saw %q", v)
	default:
	}
	after, _ := os.Stat(p)
	if !os.SameFile(before, after) {
		t.Error("the file was replaced: a lab view that binds it would keep the old one")
	}
	if err := writeAttr(p, "1: DOWN"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "1: DOWN  \n" {
		t.Errorf("content %q, want the value padded to the file's length", b)
	}
}
