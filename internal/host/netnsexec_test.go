package host

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// InNetNS's thread goes back to this process's netns when fn is done (and
// is not ended): a main thread left in another netns would make the whole
// process look like one of that netns's (/proc/PID/ns/net is the main
// thread's), and Go parks the main thread instead of ending it.
func TestPrivilegedInNetNSThreadComesBack(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skipf("privileged test: needs root to create a network namespace (euid %d); CI runs as root", os.Geteuid())
	}
	name := fmt.Sprintf("rig-host-test-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	self, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	var tid int
	var inside string
	if err := InNetNS(filepath.Join("/run/netns", name), func() error {
		tid = unix.Gettid()
		inside, err = os.Readlink("/proc/thread-self/ns/net")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if inside == self {
		t.Fatalf("fn ran in this process's netns %s, want %s's", self, name)
	}
	after, err := os.Readlink(fmt.Sprintf("/proc/self/task/%d/ns/net", tid))
	if err != nil {
		t.Fatalf("InNetNS's thread %d is gone (%v): it was ended instead of brought back", tid, err)
	}
	if after != self {
		t.Fatalf("InNetNS's thread %d is still in %s after fn, want this process's %s", tid, after, self)
	}
}
