package ovs

import (
	"testing"

	"rig/internal/testutil/sysfstree"
)

// The scan for another ovs-vswitchd reads /proc through the host seam:
// the process itself, zombies and other programs do not count.
func TestOtherVswitchdAliveReadsProcThroughSeam(t *testing.T) {
	h := sysfstree.FakeRoot(t, map[string]string{
		"/proc/100/comm": "ovs-vswitchd\n",
		"/proc/100/stat": "100 (ovs-vswitchd) S 1 100 100 0 -1",
		"/proc/200/comm": "ovs-vswitchd\n",
		"/proc/200/stat": "200 (ovs-vswitchd) Z 1 200 200 0 -1",
		"/proc/300/comm": "bash\n",
		"/proc/300/stat": "300 (bash) S 1 300 300 0 -1",
	})
	if otherVswitchdAlive(h, 100) {
		t.Error("pid 100 is ours, 200 a zombie, 300 bash: want no other vswitchd")
	}
	if !otherVswitchdAlive(h, 42) {
		t.Error("pid 100 runs ovs-vswitchd and is not ours: want another vswitchd")
	}
	if otherVswitchdAlive(sysfstree.FakeRoot(t, nil), 1) {
		t.Error("an empty /proc under the root: want no other vswitchd")
	}
}

// No tap names, no netlink: removeTaps does nothing before it needs the seam.
func TestRemoveTapsNothingToDo(t *testing.T) {
	if err := removeTaps(sysfstree.FakeRoot(t, nil), nil, 1); err != nil {
		t.Fatalf("removeTaps(nil): %v", err)
	}
}
