package pcidev

import (
	"testing"

	"rig/internal/testutil"
	"rig/playbooks"
	"rig/provision"
	"rig/provision/steptest"
)

// TestSRIOVDownRefusesRecords: a VF count over sriov_totalvfs (8) or an
// eSwitch mode that is none is refused before any write.
func TestSRIOVDownRefusesRecords(t *testing.T) {
	k := &sriovKernel{t: t, root: steptest.CopyHostRoot(t, "cx6dx-host"), mode: "legacy"}
	pfs := []playbooks.SRIOVPF{{PF: "enp59s0f0np0", NumVFs: intp(4), Eswitch: "switchdev"}}
	s := sriovStepFor(t, k, pfs, "")
	testutil.PlantState(t, s.state.Path, `{"version": 1, "sriov": [{"bdf": "0000:3b:00.0", "numvfs": 9999, "eswitch": "switchdev; reboot"}]}`)
	steptest.WantRefused(t, steptest.RunStep(t, s.Down(provision.DownOptions{})), s.state.Path,
		"sriov[0].numvfs: 9999 is outside 0..8 (0000:3b:00.0's sriov_totalvfs)", `sriov[0].eswitch: "switchdev; reboot" is not an eSwitch mode`)
	if len(k.writes)+len(k.sets) != 0 {
		t.Fatalf("writes %q sets %q", k.writes, k.sets)
	}
}

// TestBindDownRefusesRecords: an original driver that climbs out of
// /sys/bus/pci/drivers, a driver other than the playbook's, and a record
// found by the playbook's netdev whose address is not the function the
// netdev is on now are refused before any sysfs write.
func TestBindDownRefusesRecords(t *testing.T) {
	for _, c := range []struct{ name, rec, want string }{
		{"original driver path", `{"bdf": "0000:00:04.0", "netdev": "ens5", "originalDriver": "../../../../../etc/x", "driver": "vfio-pci"}`, `bound[0].originalDriver: "../../../../../etc/x" is not a driver's name`},
		{"driver", `{"bdf": "0000:00:04.0", "netdev": "ens5", "originalDriver": "virtio-pci", "driver": "uio_pci_generic"}`, `bound[0].driver: "uio_pci_generic": this playbook's bind section binds to vfio-pci`},
		{"another function", `{"bdf": "0000:03:00.0", "netdev": "ens5", "originalDriver": "", "driver": "vfio-pci"}`, "bound[0].bdf: 0000:03:00.0, but the playbook's ens5 is on 0000:00:04.0 now"},
		{"bad address", `{"bdf": "../0000:00:04.0", "netdev": "ens5", "originalDriver": "virtio-pci", "driver": "vfio-pci"}`, `bound[0].bdf: "../0000:00:04.0" is not a PCI address`},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := bindRoot(t)
			s, k, _ := bindStepFor(t, root, &playbooks.BindSpec{Devices: []string{"ens5"}}, "")
			testutil.PlantState(t, s.state.Path, `{"version": 1, "bound": [`+c.rec+`]}`)
			steptest.WantRefused(t, steptest.RunStep(t, s.Down(provision.DownOptions{})), s.state.Path, c.want)
			if len(k.writes) != 0 {
				t.Fatalf("writes %q", k.writes)
			}
		})
	}
}
