package buildcheck

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// exitFailure is cmd/rig's exit code for a failed command.
const exitFailure = 1

// rig builds without cgo (provisioning only) for amd64 and arm64; that
// build's bench engines fail with exit 1 and say the dataplane is not in
// it, and the pure-Go line-rate table still works.
func TestBuildsWithoutCgo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds rig twice")
	}
	bin := filepath.Join(t.TempDir(), "rig-nocgo")
	for _, arch := range []string{"arm64", "amd64"} {
		cmd := exec.Command("go", "build", "-o", bin, "rig/cmd/rig")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOARCH="+arch)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("CGO_ENABLED=0 GOARCH=%s go build: %v\n%s", arch, err, out)
		}
	}
	if runtime.GOARCH != "amd64" {
		return // the last build is amd64's
	}
	out, err := exec.Command(bin, "bench", "loop", "--vdev", "net_ring0", "--count", "10").CombinedOutput()
	var xe *exec.ExitError
	if !errors.As(err, &xe) || xe.ExitCode() != exitFailure ||
		!strings.Contains(string(out), "the DPDK dataplane was not built into this rig (built without cgo); rebuild with cgo and libdpdk-dev: make build") {
		t.Errorf("no-cgo rig bench loop: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin, "bench", "linerate", "--link-speed", "25G").CombinedOutput(); err != nil || !strings.Contains(string(out), "37.202") {
		t.Errorf("no-cgo rig bench linerate: %v\n%s", err, out)
	}
}
