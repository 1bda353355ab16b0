package system

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"rig/internal/testutil/hugetest"
	"rig/playbooks"
	"rig/provision"
)

// TestDownRefusesAFIFOStateFile: rig down with a FIFO for its state file
// fails at once, naming it, and runs no step.
func TestDownRefusesAFIFOStateFile(t *testing.T) {
	k := hugetest.NewFakeKernel(t, 2048, []int64{2048}, []int{0})
	s := hpStep(t, k, &playbooks.HugepagesSpec{Pages: []playbooks.HugepageReservation{{Size: "2M", Count: 8}}})
	if err := os.MkdirAll(filepath.Dir(s.state.Path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(s.state.Path, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan provision.StepResult, 1)
	go func() { done <- runOne(t, s.Down(provision.DownOptions{}), provision.RunApply) }()
	select {
	case res := <-done:
		if res.Status != provision.StatusFailed || !errors.Is(res.Err, provision.ErrStateUntrusted) || !strings.Contains(res.Error, "it is a named pipe") || len(k.Writes) != 0 {
			t.Fatalf("%s %s writes %q", res.Status, res.Error, k.Writes)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("rig down hangs on a FIFO state file")
	}
}
