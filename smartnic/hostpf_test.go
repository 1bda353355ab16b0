package smartnic

import "testing"

// The host's view of a BlueField (bf2-host): its PF netdevs are host PF 0
// and 1 by their functions' IDs; tmfifo_net0, and a ConnectX host's PFs,
// are none.
func TestHostPFFixtures(t *testing.T) {
	for _, c := range []struct {
		root, netdev string
		pf           int
		ok           bool
	}{
		{"bf2-host", "enp225s0f0np0", 0, true},
		{"bf2-host", "enp225s0f1np1", 1, true},
		{"bf2-host", "tmfifo_net0", 0, false},
		{"bf2-host", "nope0", 0, false},
		{"cx6dx-host", "enp59s0f0np0", 0, false},
	} {
		if pf, ok := HostPF(hostFixture(c.root), c.netdev); pf != c.pf || ok != c.ok {
			t.Errorf("%s %s: PF %d %v, want %d %v", c.root, c.netdev, pf, ok, c.pf, c.ok)
		}
	}
}
