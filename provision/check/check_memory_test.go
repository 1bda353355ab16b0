package check

import (
	"errors"
	"testing"

	"rig/bench"
	"rig/bench/dataplane"
	"rig/playbooks"
)

// CheckMemoryMB sizes the check's dataplane as bench sizes a run: the
// largest frame size counts, a memif path's extra rx queues count, and
// a vhost-user path takes what the same loop over virtio-user ports does.
func TestCheckMemoryMB(t *testing.T) {
	mb := func(sp playbooks.CheckSpec) int {
		t.Helper()
		n, err := CheckMemoryMB(&sp)
		if errors.Is(err, bench.ErrNoDataplane) {
			t.Skip("rig built without cgo: no dataplane to size")
		}
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	small := mb(playbooks.CheckSpec{FrameSize: 64})
	want, err := dataplane.MemoryMB(bench.Config{Role: bench.RoleLoop, FrameSize: 64,
		VDevs: []string{"net_virtio_user0,path=/x/a.sock,server=1,queues=1", "net_virtio_user1,path=/x/b.sock,server=1,queues=1"}})
	if err != nil {
		t.Fatal(err)
	}
	if small != want || small <= 32 {
		t.Errorf("vhost-user check at 64 B: %d MiB, want %d (bench's size of the same loop, above its 32 MiB slack)", small, want)
	}
	if jumbo := mb(playbooks.CheckSpec{FrameSizes: []int{64, 9000}}); jumbo <= small {
		t.Errorf("frame_sizes [64, 9000]: %d MiB, not above 64 B's %d", jumbo, small)
	}
	if memif := mb(playbooks.CheckSpec{FrameSize: 64, Transport: playbooks.TransportMemif}); memif <= small {
		t.Errorf("memif: %d MiB, not above vhost-user's %d (one rx queue per PMD thread, plus one)", memif, small)
	}
	if ports := mb(playbooks.CheckSpec{FrameSize: 64, Topology: playbooks.TopologyThroughPorts, Ports: []string{"p0", "p1"}}); ports != small {
		t.Errorf("through-ports: %d MiB, want %d (the same queues and pool as through-bridge)", ports, small)
	}
}
