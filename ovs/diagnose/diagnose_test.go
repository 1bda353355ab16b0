package diagnose

import (
	"os"
	"strings"
	"testing"

	"rig/internal/testutil/sysfstree"
	"rig/ovs"
)

// Log lines recorded from ovs-vswitchd-dpdk 3.1.0 / DPDK 22.11.11 on this VM.
var recorded = map[string]ovs.LogTail{
	"bad-pci": {
		"2026-11-30T13:35:36.885Z|00098|dpdk|ERR|EAL: Cannot find device (0000:99:00.0)",
		"2026-11-30T13:35:36.885Z|00099|dpdk|ERR|EAL: Failed to attach device on primary process",
		"2026-11-30T13:35:36.885Z|00100|netdev_dpdk|WARN|Error attaching device '0000:99:00.0' to DPDK",
	},
	"malformed": {
		"2026-11-30T13:35:36.885Z|00093|dpdk|ERR|EAL: Driver cannot attach the device (net_null1)",
		"2026-11-30T13:35:36.885Z|00095|netdev_dpdk|WARN|Error attaching device 'net_null1,foo=bar,,=' to DPDK",
	},
	"memif": {
		"2026-11-30T13:35:43.197Z|00140|dpdk|ERR|memif_socket_create(): Failed to setup socket /tmp/ovsx/memif.sock: Address already in use",
		"2026-11-30T13:35:43.197Z|00141|dpdk|ERR|EAL: Driver cannot attach the device (net_memif1)",
	},
	"mempool": {
		"2026-11-30T13:35:53.774Z|00060|netdev_dpdk|ERR|Failed to create mempool \"ovs043f488100021580016384\" with a request of 8192 mbufs",
		"2026-11-30T13:35:53.774Z|00061|netdev_dpdk|ERR|Failed to create memory pool for netdev n0, with MTU 1500 on socket 0: Cannot allocate memory",
	},
	"nomem": {
		"2026-11-30T13:36:00.617Z|00014|dpdk|ERR|EAL: Not enough memory available on socket 0! Requested: 4096MB, available: 1024MB",
		"2026-11-30T13:36:00.617Z|00015|dpdk|ERR|EAL: Cannot init memory",
		"2026-11-30T13:36:00.617Z|00016|dpdk|EMER|Unable to initialize DPDK: Cannot allocate memory",
	},
	// mlx5 text from DPDK drivers/common/mlx5/linux/mlx5_common_os.c as logged
	// by the EAL (not provoked here: no mlx5 hardware).
	"mlx5": {
		"2026-11-30T13:00:00.000Z|00050|dpdk|WARN|mlx5_common: No Verbs device matches PCI device 0000:03:00.0, are kernel drivers loaded?",
		"2026-11-30T13:00:00.000Z|00051|dpdk|ERR|EAL: Driver cannot attach the device (0000:03:00.0)",
	},
}

func TestDiagnose(t *testing.T) {
	h := sysfstree.FakeRoot(t, map[string]string{
		"/sys/bus/pci/devices/0000:03:00.0/vendor":      "0x15b3\n",
		"/sys/bus/pci/devices/0000:03:00.1/vendor":      "0x15b3\n",
		"/sys/bus/pci/devices/0000:03:00.1/infiniband":  "<dir>",
		"/sys/bus/pci/devices/0000:04:00.0/vendor":      "0x8086\n",
		"/sys/bus/pci/devices/0000:03:00.1/infiniband/": "<dir>",
	})
	up := &ovs.State{DPDKInitialized: true, OtherConfig: map[string]string{"dpdk-init": "try", "dpdk-socket-mem": "32", "dpdk-socket-limit": "48"}}
	attach := func(d string) string { return "Error attaching device '" + d + "' to DPDK" }
	cases := []struct {
		name, log string
		st        *ovs.State
		ifc       ovs.Interface
		kind      string
		cause     string
	}{
		{"bad pci", "bad-pci", up, ovs.Interface{Name: "p0", Type: "dpdk", OFPort: -1, Error: attach("0000:99:00.0"), Options: map[string]string{"dpdk-devargs": "0000:99:00.0"}},
			ProblemPCIAbsent, "PCI device 0000:99:00.0 does not exist"},
		{"short bdf", "", up, ovs.Interface{Name: "p0", Type: "dpdk", OFPort: -1, Error: attach("99:00.0"), Options: map[string]string{"dpdk-devargs": "99:00.0"}},
			ProblemPCIAbsent, "0000:99:00.0 does not exist"},
		{"mlx5 no rdma", "mlx5", up, ovs.Interface{Name: "pf0hpf", Type: "dpdk", OFPort: -1, Error: attach("0000:03:00.0,representor=[65535]"), Options: map[string]string{"dpdk-devargs": "0000:03:00.0,representor=[65535]"}},
			ProblemMlx5NoRDMA, "has no RDMA device"},
		{"mlx5 no rdma, sysfs only", "", up, ovs.Interface{Name: "p0", Type: "dpdk", OFPort: -1, Error: attach("0000:03:00.0"), Options: map[string]string{"dpdk-devargs": "0000:03:00.0"}},
			ProblemMlx5NoRDMA, "mlx5_ib"},
		{"mlx5 with rdma", "", up, ovs.Interface{Name: "p1", Type: "dpdk", OFPort: -1, Error: attach("0000:03:00.1"), Options: map[string]string{"dpdk-devargs": "0000:03:00.1"}},
			ProblemAttachFailed, "the mlx5 PMD could not attach 0000:03:00.1; mlx5 is bifurcated (the device stays bound to mlx5_core"},
		{"intel", "", up, ovs.Interface{Name: "p2", Type: "dpdk", OFPort: -1, Error: attach("0000:04:00.0"), Options: map[string]string{"dpdk-devargs": "0000:04:00.0"}},
			ProblemWrongDriver, "could not attach PCI device 0000:04:00.0: it is bound to no driver; a non-mlx5 NIC must be bound to vfio-pci"},
		{"malformed", "malformed", up, ovs.Interface{Name: "mal", Type: "dpdk", OFPort: -1, Error: attach("net_null1,foo=bar,,="), Options: map[string]string{"dpdk-devargs": "net_null1,foo=bar,,="}},
			ProblemBadDevargs, "malformed devargs"},
		{"unknown key", "malformed", up, ovs.Interface{Name: "mal", Type: "dpdk", OFPort: -1, Error: attach("net_null1,foo=bar"), Options: map[string]string{"dpdk-devargs": "net_null1,foo=bar"}},
			ProblemBadDevargs, "rejected the devargs"},
		{"memif in use", "memif", up, ovs.Interface{Name: "m1", Type: "dpdk", OFPort: -1, Error: attach("net_memif1,role=server,socket=/tmp/ovsx/memif.sock"), Options: map[string]string{"dpdk-devargs": "net_memif1,role=server,socket=/tmp/ovsx/memif.sock"}},
			ProblemMemifSocketInUse, "memif socket is already in use"},
		{"mempool", "mempool", up, ovs.Interface{Name: "n0", Type: "dpdk", OFPort: -1, Error: "could not add network device n0 to ofproto (Invalid argument)", Options: map[string]string{"dpdk-devargs": "net_null0"}},
			ProblemMempool, "dpdk-socket-mem=32 dpdk-socket-limit=48 MB is too small"},
		{"dpdk not initialised: hugepages", "nomem", &ovs.State{OtherConfig: map[string]string{"dpdk-init": "try", "dpdk-socket-mem": "4096"}},
			ovs.Interface{Name: "n0", Type: "dpdk", OFPort: -1, Error: "could not open network device n0 (Address family not supported by protocol)", Options: map[string]string{"dpdk-devargs": "net_null0"}},
			ProblemNoHugepages, "asks for 4096 MB on socket 0 but only 1024 MB"},
		{"dpdk-init unset", "", &ovs.State{OtherConfig: map[string]string{}},
			ovs.Interface{Name: "n0", Type: "dpdk", OFPort: -1, Error: "could not open network device n0 (Address family not supported by protocol)"},
			ProblemDPDKNotRequested, "dpdk-init is unset, so ovs-vswitchd never initialises DPDK"},
		{"in use", "", up, ovs.Interface{Name: "b", Type: "dpdk", OFPort: -1, Error: "'b' is trying to use device 'net_null0' which is already in use by 'a'"},
			ProblemDevargsInUse, "same DPDK device"},
		{"no devargs", "", up, ovs.Interface{Name: "b", Type: "dpdk", OFPort: -1, Error: "'b' is missing 'options:dpdk-devargs'. The old 'dpdk<port_id>' names are not supported"},
			ProblemNoDevargs, "needs options:dpdk-devargs"},
		{"kernel port", "", up, ovs.Interface{Name: "eth9", Type: "system", OFPort: -1, Error: "could not open network device eth9 (No such device)"},
			ProblemNoSuchNetdev, "no network device eth9"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Diagnose(h, c.st, c.ifc, recorded[c.log])
			// mlx5 is bifurcated: no hint may send it to vfio-pci or ask for
			// a PCI address "bound for DPDK"
			if strings.HasPrefix(c.name, "mlx5") {
				txt := d.Cause + " " + d.Fix
				if strings.Contains(txt, "bound for DPDK") || strings.Contains(txt, "bind the device to vfio-pci") || strings.Contains(txt, "dpdk-devbind") ||
					!strings.Contains(txt, "mlx5_core") {
					t.Errorf("mlx5 hint: %s", txt)
				}
			}
			if d.Kind != c.kind || !strings.Contains(d.Cause, c.cause) || d.Fix == "" || d.Object != "ovs: port "+c.ifc.Name {
				t.Fatalf("got %+v\nwant kind %s, cause containing %q", d, c.kind, c.cause)
			}
			if c.log != "" && c.kind != ProblemDevargsInUse && len(d.Evidence) == 0 {
				t.Errorf("no log evidence quoted: %+v", d)
			}
			seen := map[string]bool{}
			for _, e := range d.Evidence {
				if seen[e] {
					t.Errorf("evidence repeated: %q", e)
				}
				seen[e] = true
			}
		})
	}
}

// The exact hints for an attached-but-failing mlx5 device (stays on
// mlx5_core) and for a non-mlx5 NIC (vfio-pci, naming its current driver).
func TestDiagnoseAttachHints(t *testing.T) {
	h := sysfstree.FakeRoot(t, map[string]string{
		"/sys/bus/pci/devices/0000:03:00.1/vendor":     "0x15b3\n",
		"/sys/bus/pci/devices/0000:03:00.1/infiniband": "<dir>",
		"/sys/bus/pci/devices/0000:04:00.0/vendor":     "0x8086\n",
		"/sys/bus/pci/drivers/ixgbe":                   "<dir>",
	})
	if err := os.Symlink("../../../bus/pci/drivers/ixgbe", h.Path("/sys/bus/pci/devices/0000:04:00.0/driver")); err != nil {
		t.Fatal(err)
	}
	up := &ovs.State{DPDKInitialized: true, OtherConfig: map[string]string{"dpdk-init": "try"}}
	d := Diagnose(h, up, ovs.Interface{Name: "p1", Type: "dpdk", OFPort: -1, Error: "Error attaching device '0000:03:00.1' to DPDK",
		Options: map[string]string{"dpdk-devargs": "0000:03:00.1"}}, nil)
	if want := "keep 0000:03:00.1 bound to mlx5_core (do not bind it to vfio-pci); check that `rdma link` lists it, that `devlink dev eswitch show pci/0000:03:00.1` says mode switchdev when the devargs name a representor, and read the evidence lines from the ovs-vswitchd log"; d.Fix != want {
		t.Errorf("mlx5 fix:\n got %s\nwant %s", d.Fix, want)
	}
	d = Diagnose(h, up, ovs.Interface{Name: "p2", Type: "dpdk", OFPort: -1, Error: "Error attaching device '0000:04:00.0' to DPDK",
		Options: map[string]string{"dpdk-devargs": "0000:04:00.0"}}, nil)
	if d.Kind != ProblemWrongDriver || d.Cause != "DPDK could not attach PCI device 0000:04:00.0: it is bound to the kernel driver ixgbe, which DPDK cannot use; a non-mlx5 NIC must be bound to vfio-pci for DPDK" ||
		d.Fix != "bind 0000:04:00.0 to vfio-pci: dpdk-devbind.py --bind=vfio-pci 0000:04:00.0 (modprobe vfio-pci first), then `rig up`" {
		t.Errorf("intel: cause %s\nfix %s", d.Cause, d.Fix)
	}
}
