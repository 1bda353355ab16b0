package ovs_test

import (
	"strings"
	"testing"

	"rig/ovs"
	"rig/ovs/ovstest"
)

// ResolveDOCAName reads what OVS-DOCA reads (netdev_doca_generate_devargs):
// uplink, host-PF and SF representors resolve; a netdev without a PCI
// function, a platform device or no netdev at all does not.
func TestResolveDOCAName(t *testing.T) {
	h := ovstest.BF3Root(t, nil)
	for name, want := range map[string]string{
		"p0":          "uplink (phys_port_name p0) of 0000:03:00.0",
		"pf0hpf":      "host-PF representor (phys_port_name c1pf0) on 0000:03:00.0",
		"pf1hpf":      "host-PF representor (phys_port_name c1pf1) on 0000:03:00.1",
		"en3f0pf0sf0": "SF 0 representor (phys_port_name pf0sf0) on 0000:03:00.0",
	} {
		n, err := ovs.ResolveDOCAName(h, name)
		if err != nil || n.String() != want {
			t.Errorf("%s: %v %q, want %q", name, err, n, want)
		}
	}
	for name, want := range map[string]string{
		"tmfifo_net0": "netdev tmfifo_net0: OVS-DOCA cannot resolve it: it has no PCI function",
		"oob_net0":    "netdev oob_net0: OVS-DOCA cannot resolve it: it has no PCI function",
		"nosuch0":     "netdev nosuch0: no netdev nosuch0",
	} {
		if _, err := ovs.ResolveDOCAName(h, name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
}
