package diagnose

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rig/internal/host"
	"rig/internal/testutil/sysfstree"
	"rig/ovs"
)

// Log lines of attach failures, exactly as ovs-vswitchd-dpdk 3.1.0 with
// DPDK 22.11.11 (Debian) logged them on this VM (private instance,
// dpdk-init=try; --no-pci unless said), each provoked with
// `ovs-vsctl add-port br0 NAME -- set Interface NAME type=dpdk
// options:dpdk-devargs=...`. Sources of the texts: DPDK
// lib/eal/common/eal_common_dev.c (local_dev_probe, rte_dev_probe),
// drivers/net/af_packet/rte_eth_af_packet.c (rte_pmd_init_internals),
// drivers/net/virtio/virtio_pci_ethdev.c, drivers/bus/pci/pci_common.c,
// lib/ethdev/rte_ethdev.c (eth_dev_validate_mtu); OvS lib/netdev-dpdk.c,
// lib/netdev.c, lib/dpif-netdev.c, lib/dpif.c, vswitchd/bridge.c.
var recordedAttach = map[string]ovs.LogTail{
	// devargs "net_nosuch0": no driver of that name
	"no-driver": {
		`2026-12-02T01:00:11.140Z|00095|dpdk|ERR|EAL: failed to parse device "net_nosuch0"`,
		`2026-12-02T01:00:11.140Z|00096|dpdk|ERR|EAL: failed to parse device "net_nosuch0"`,
		"2026-12-02T01:00:11.140Z|00097|dpdk|ERR|EAL: Failed to attach device on primary process",
		"2026-12-02T01:00:11.140Z|00098|netdev_dpdk|WARN|Error attaching device 'net_nosuch0' to DPDK",
		"2026-12-02T01:00:11.140Z|00099|netdev|WARN|nodrv: could not set configuration (Invalid argument)",
	},
	// devargs "net_af_packet7,iface=nosuchif9": the driver exists, its device does not
	"afpacket-no-iface": {
		"2026-12-02T01:00:11.376Z|00154|dpdk|ERR|rte_pmd_init_internals(): net_af_packet7: ioctl failed (SIOCGIFINDEX):No such device",
		"2026-12-02T01:00:11.376Z|00155|dpdk|ERR|EAL: Driver cannot attach the device (net_af_packet7)",
		"2026-12-02T01:00:11.376Z|00156|dpdk|ERR|EAL: Failed to attach device on primary process",
		"2026-12-02T01:00:11.376Z|00157|netdev_dpdk|WARN|Error attaching device 'net_af_packet7,iface=nosuchif9' to DPDK",
		"2026-12-02T01:00:11.376Z|00158|netdev|WARN|afp: could not set configuration (Invalid argument)",
	},
	// devargs "net_null8,foo=bar": the driver rejects an unknown key, saying nothing itself
	"unknown-key": {
		"2026-12-02T01:00:11.053Z|00077|dpdk|ERR|EAL: Driver cannot attach the device (net_null8)",
		"2026-12-02T01:00:11.053Z|00078|dpdk|ERR|EAL: Failed to attach device on primary process",
		"2026-12-02T01:00:11.053Z|00079|netdev_dpdk|WARN|Error attaching device 'net_null8,foo=bar' to DPDK",
		"2026-12-02T01:00:11.053Z|00080|netdev|WARN|bad2: could not set configuration (Invalid argument)",
	},
	// devargs "0000:00:01.0", a PCI device this VM has, with dpdk-extra=--no-pci
	"no-pci": {
		"2026-12-02T01:00:11.298Z|00138|dpdk|ERR|EAL: Cannot find device (0000:00:01.0)",
		"2026-12-02T01:00:11.298Z|00139|dpdk|ERR|EAL: Failed to attach device on primary process",
		"2026-12-02T01:00:11.298Z|00140|netdev_dpdk|WARN|Error attaching device '0000:00:01.0' to DPDK",
		"2026-12-02T01:00:11.298Z|00141|netdev|WARN|pcireal: could not set configuration (Invalid argument)",
	},
	// devargs "0000:00:03.0", this VM's virtio NIC, still on the kernel's virtio-pci (no --no-pci)
	"kernel-driver": {
		"2026-12-02T01:01:07.694Z|00061|dpdk|INFO|EAL: Probe PCI driver: net_virtio (1af4:1041) device: 0000:00:03.0 (socket -1)",
		"2026-12-02T01:01:07.694Z|00062|dpdk|ERR|eth_virtio_pci_init(): Failed to init PCI device",
		"2026-12-02T01:01:07.694Z|00063|dpdk|ERR|EAL: Driver cannot attach the device (0000:00:03.0)",
		"2026-12-02T01:01:07.694Z|00064|dpdk|ERR|EAL: Failed to attach device on primary process",
		"2026-12-02T01:01:07.694Z|00065|netdev_dpdk|WARN|Error attaching device '0000:00:03.0' to DPDK",
		"2026-12-02T01:01:07.694Z|00066|netdev|WARN|vnet: could not set configuration (Invalid argument)",
	},
	// devargs "net_af_packet3,iface=h13a" (a veth) with mtu_request=9000:
	// attached, but the datapath cannot add it; no mempool line
	"mtu": {
		"2026-12-02T01:00:17.812Z|00616|netdev_dpdk|WARN|Rx checksum offload is not supported on port 0",
		"2026-12-02T01:00:17.813Z|00617|dpdk|ERR|Frame size (9018) > device max frame size (1518) for port_id 0",
		"2026-12-02T01:00:17.813Z|00618|netdev_dpdk|ERR|Interface afm MTU (9000) setup error: Invalid argument",
		"2026-12-02T01:00:17.813Z|00619|netdev_dpdk|ERR|Interface afm(rxq:1 txq:1 lsc interrupt mode:false) configure error: Invalid argument",
		"2026-12-02T01:00:17.813Z|00620|dpif_netdev|ERR|Failed to set interface afm new configuration",
		"2026-12-02T01:00:17.813Z|00621|dpif|WARN|netdev@ovs-netdev: failed to add afm as port: Invalid argument",
		"2026-12-02T01:00:17.813Z|00622|bridge|WARN|could not add network device afm to ofproto (Invalid argument)",
	},
	// a type=system port on a netdev bridge naming no netdev
	"no-netdev": {
		"2026-12-02T01:00:11.787Z|00245|bridge|WARN|could not open network device eth9 (No such device)",
	},
	// From a public third-party OvS-DPDK log (a NIC on vfio-pci sharing its
	// IOMMU group); the text is DPDK 22.11's "EAL: %s VFIO group is not
	// viable! ..." (lib/eal/linux/eal_vfio.c, also in librte_eal.so.23 here).
	"vfio-not-viable": {
		"2022-11-25T01:10:52.810Z|00093|dpdk|ERR|EAL: 0000:01:00.1 VFIO group is not viable! Not all devices in IOMMU group bound to VFIO or unbound",
		"2022-11-25T01:10:52.810Z|00094|dpdk|ERR|EAL: Driver cannot attach the device (0000:01:00.1)",
		"2022-11-25T01:10:52.810Z|00095|dpdk|ERR|EAL: Failed to attach device on primary process",
		"2022-11-25T01:10:52.810Z|00096|netdev_dpdk|WARN|Error attaching device '0000:01:00.1' to DPDK",
		"2022-11-25T01:10:52.810Z|00097|netdev|WARN|dpdk0: could not set configuration (Invalid argument)",
	},
	// eal_vfio.c's "EAL: Cannot open %s: %s" for the group device (format
	// from librte_eal.so.23; not provoked here: this VM has no IOMMU)
	"vfio-perm": {
		"2026-12-02T02:00:00.000Z|00090|dpdk|ERR|EAL: Cannot open /dev/vfio/12: Permission denied",
		"2026-12-02T02:00:00.000Z|00091|dpdk|ERR|EAL: Driver cannot attach the device (0000:05:00.0)",
		"2026-12-02T02:00:00.000Z|00093|netdev_dpdk|WARN|Error attaching device '0000:05:00.0' to DPDK",
	},
	// the generic lines alone: a device on vfio-pci that did not attach
	"vfio-plain": {
		"2026-12-02T02:00:00.000Z|00091|dpdk|ERR|EAL: Driver cannot attach the device (0000:05:00.0)",
		"2026-12-02T02:00:00.000Z|00092|dpdk|ERR|EAL: Failed to attach device on primary process",
		"2026-12-02T02:00:00.000Z|00093|netdev_dpdk|WARN|Error attaching device '0000:05:00.0' to DPDK",
	},
}

// link makes name (under the root) a symlink to target.
func link(t testing.TB, h *host.Host, target, name string) {
	t.Helper()
	p := h.Path(name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

// attachHost is a host root with the PCI devices the cases name: this
// VM's virtio devices, an Intel NIC on vfio-pci sharing IOMMU group 7
// with a function still on ixgbe, and a NIC on vfio-pci alone in group 12.
func attachHost(t testing.TB, cmdline string, groups bool) *host.Host {
	t.Helper()
	files := map[string]string{
		"/sys/bus/pci/devices/0000:00:01.0/vendor":               "0x1af4\n",
		"/sys/bus/pci/devices/0000:00:03.0/vendor":               "0x1af4\n",
		"/sys/bus/pci/devices/0000:00:03.0/net/eth0":             "<dir>",
		"/sys/bus/pci/devices/0000:01:00.0/vendor":               "0x8086\n",
		"/sys/bus/pci/devices/0000:01:00.1/vendor":               "0x8086\n",
		"/sys/bus/pci/devices/0000:05:00.0/vendor":               "0x8086\n",
		"/sys/bus/pci/drivers/vfio-pci":                          "<dir>",
		"/sys/module/vfio/parameters/enable_unsafe_noiommu_mode": "N\n",
		"/proc/cmdline": cmdline + "\n",
	}
	if groups {
		files["/sys/kernel/iommu_groups/7/devices"] = "<dir>"
		files["/sys/kernel/iommu_groups/12/devices"] = "<dir>"
	}
	h := sysfstree.FakeRoot(t, files)
	link(t, h, "../../../bus/pci/drivers/virtio-pci", "/sys/bus/pci/devices/0000:00:03.0/driver")
	link(t, h, "../../../bus/pci/drivers/vfio-pci", "/sys/bus/pci/devices/0000:01:00.1/driver")
	link(t, h, "../../../bus/pci/drivers/ixgbe", "/sys/bus/pci/devices/0000:01:00.0/driver")
	link(t, h, "../../../bus/pci/drivers/vfio-pci", "/sys/bus/pci/devices/0000:05:00.0/driver")
	if groups {
		link(t, h, "../../../../kernel/iommu_groups/7", "/sys/bus/pci/devices/0000:01:00.1/iommu_group")
		link(t, h, "../../../../kernel/iommu_groups/7", "/sys/bus/pci/devices/0000:01:00.0/iommu_group")
		link(t, h, "../../../../bus/pci/devices/0000:01:00.0", "/sys/kernel/iommu_groups/7/devices/0000:01:00.0")
		link(t, h, "../../../../bus/pci/devices/0000:01:00.1", "/sys/kernel/iommu_groups/7/devices/0000:01:00.1")
		link(t, h, "../../../../kernel/iommu_groups/12", "/sys/bus/pci/devices/0000:05:00.0/iommu_group")
	}
	return h
}

// Each attach failure gets its own cause, naming what sysfs and the
// quoted log lines show, and its own fix.
func TestDiagnoseAttachCauses(t *testing.T) {
	up := &ovs.State{DPDKInitialized: true, OtherConfig: map[string]string{"dpdk-init": "try"}}
	noPCI := &ovs.State{DPDKInitialized: true, OtherConfig: map[string]string{"dpdk-init": "try", "dpdk-extra": "--no-pci"}}
	iommuOn := attachHost(t, "BOOT_IMAGE=/vmlinuz root=/dev/sda1 intel_iommu=on iommu=pt", true)
	iommuOff := attachHost(t, "BOOT_IMAGE=/vmlinuz root=/dev/sda1 quiet", false)
	port := func(name, devargs string) ovs.Interface {
		return ovs.Interface{Name: name, Type: "dpdk", OFPort: -1, Error: "Error attaching device '" + devargs + "' to DPDK", Options: map[string]string{"dpdk-devargs": devargs}}
	}
	for _, c := range []struct {
		name, log string
		h         *host.Host
		st        *ovs.State
		ifc       ovs.Interface
		kind      string
		cause     string
		fix       string
		evidence  string
	}{
		{"no driver of that name", "no-driver", iommuOn, up, port("nodrv", "net_nosuch0"), ProblemNoDriver,
			`no DPDK driver takes the device name "net_nosuch0" ("failed to parse device")`, "fix the device name", `failed to parse device "net_nosuch0"`},
		{"driver cannot open its device", "afpacket-no-iface", iommuOn, up, port("afp", "net_af_packet7,iface=nosuchif9"), ProblemAttachFailed,
			"the DPDK driver of net_af_packet7 could not open its device: rte_pmd_init_internals(): net_af_packet7: ioctl failed (SIOCGIFINDEX):No such device",
			"iface= must name a netdev", "ioctl failed (SIOCGIFINDEX)"},
		{"driver rejects the arguments", "unknown-key", iommuOn, up, port("bad2", "net_null8,foo=bar"), ProblemBadDevargs,
			`the DPDK driver for net_null8 rejected the devargs "net_null8,foo=bar"`, "documented devargs", "Driver cannot attach the device (net_null8)"},
		{"--no-pci keeps a present device out", "no-pci", iommuOn, noPCI, port("pcireal", "0000:00:01.0"), ProblemPCIExcluded,
			`PCI device 0000:00:01.0 exists, but DPDK never scanned it ("Cannot find device"): other_config:dpdk-extra has --no-pci`,
			"remove that option from ovs.config.dpdk-extra", "Cannot find device (0000:00:01.0)"},
		{"kernel driver, named after EAL's probe stage", "kernel-driver", iommuOn, up, port("vnet", "0000:00:03.0"), ProblemWrongDriver,
			"DPDK's net_virtio driver took PCI device 0000:00:03.0 (EAL: Probe PCI driver) and its probe failed: eth_virtio_pci_init(): Failed to init PCI device; " +
				"it is bound to the kernel driver virtio-pci, which DPDK cannot use",
			"dpdk-devbind.py --bind=vfio-pci 0000:00:03.0 (modprobe vfio-pci first), then `rig up`; its kernel netdev eth0 goes away when you do",
			"eth_virtio_pci_init(): Failed to init PCI device"},
		{"vfio-pci, group not viable", "vfio-not-viable", iommuOn, up, port("dpdk0", "0000:01:00.1"), ProblemIOMMU,
			`VFIO cannot use IOMMU group 7 of 0000:01:00.1: every device in a group must be on vfio-pci or unbound ("VFIO group is not viable"); the group also holds 0000:01:00.0 (ixgbe)`,
			"bind the group's other devices to vfio-pci", "VFIO group is not viable"},
		{"vfio-pci, group device not accessible", "vfio-perm", iommuOn, up, port("d5", "0000:05:00.0"), ProblemIOMMU,
			"ovs-vswitchd cannot open the VFIO group device: EAL: Cannot open /dev/vfio/12: Permission denied", "/dev/vfio/12 and /dev/vfio/vfio", "Permission denied"},
		{"vfio-pci, IOMMU set up: the IOMMU is the suspect", "vfio-plain", iommuOn, up, port("d5", "0000:05:00.0"), ProblemIOMMU,
			"0000:05:00.0 is already bound to vfio-pci, so the driver binding is not the problem; with vfio-pci the usual cause is the IOMMU setup " +
				"(IOMMU group 12, 2 IOMMU groups on the host, vfio no-IOMMU mode off, kernel command line: intel_iommu=on iommu=pt)",
			"the kernel command line already has intel_iommu=on iommu=pt, so it is not the missing piece: enable the IOMMU in the firmware setup", "Driver cannot attach the device (0000:05:00.0)"},
		{"vfio-pci, no IOMMU at all", "vfio-plain", iommuOff, up, port("d5", "0000:05:00.0"), ProblemIOMMU,
			"0000:05:00.0 is on vfio-pci but VFIO cannot use it: no iommu_group link for the device, no IOMMU groups on the host (/sys/kernel/iommu_groups is empty), " +
				"vfio no-IOMMU mode off, no intel_iommu=/amd_iommu=/iommu= option on the kernel command line; the IOMMU is off and vfio is not in no-IOMMU mode",
			"enable_unsafe_noiommu_mode", "Driver cannot attach the device (0000:05:00.0)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := Diagnose(c.h, c.st, c.ifc, recordedAttach[c.log])
			if d.Kind != c.kind || !strings.Contains(d.Cause, c.cause) || !strings.Contains(d.Fix, c.fix) || !strings.Contains(strings.Join(d.Evidence, "\n"), c.evidence) {
				t.Fatalf("got kind %s\ncause %s\nfix %s\nevidence %q\nwant kind %s, cause with %q, fix with %q, evidence with %q", d.Kind, d.Cause, d.Fix, d.Evidence, c.kind, c.cause, c.fix, c.evidence)
			}
			// a device already on vfio-pci is never told to bind to vfio-pci
			if c.kind == ProblemIOMMU && strings.Contains(d.Fix, "--bind=vfio-pci "+c.ifc.Devargs()) {
				t.Errorf("vfio-pci device sent to vfio-pci: %s", d.Fix)
			}
			// never advice to add kernel options the command line has
			if c.h == iommuOn && strings.Contains(d.Fix, "add intel_iommu=on") {
				t.Errorf("advises adding intel_iommu=on, which is on the command line: %s", d.Fix)
			}
		})
	}
}

// "could not add network device … to ofproto (Invalid argument)" without
// mempool lines: the MTU the device does not take, named with its limit;
// with only the generic configure error, that error.
func TestDiagnoseOfprotoAddWithoutMempool(t *testing.T) {
	h := sysfstree.FakeRoot(t, map[string]string{"/sys/bus/pci/devices": "<dir>"})
	up := &ovs.State{DPDKInitialized: true, OtherConfig: map[string]string{"dpdk-init": "try"}}
	ifc := ovs.Interface{Name: "afm", Type: "dpdk", OFPort: -1, MTURequest: 9000, Error: "could not add network device afm to ofproto (Invalid argument)",
		Options: map[string]string{"dpdk-devargs": "net_af_packet3,iface=h13a"}}
	d := Diagnose(h, up, ifc, recordedAttach["mtu"])
	if d.Kind != ProblemMTU ||
		d.Cause != "the device does not take the MTU OvS asked for (mtu_request 9000): Interface afm MTU (9000) setup error: Invalid argument; "+
			"DPDK: frame size 9018 > device max frame size 1518, so this device takes an MTU of at most 1500" ||
		!strings.Contains(d.Fix, "lower the port's mtu_request") || len(d.Evidence) != 2 || !strings.Contains(d.Evidence[0], "Frame size (9018)") {
		t.Fatalf("mtu: %+v", d)
	}
	var generic ovs.LogTail
	for _, l := range recordedAttach["mtu"] {
		if !strings.Contains(l, "MTU") && !strings.Contains(l, "Frame size") {
			generic = append(generic, l)
		}
	}
	d = Diagnose(h, up, ifc, generic)
	if d.Kind != ProblemDeviceConfig || d.Cause != "DPDK opened the device but could not configure it (rte_eth_dev_configure or queue setup failed): "+
		"Interface afm(rxq:1 txq:1 lsc interrupt mode:false) configure error: Invalid argument" || !strings.Contains(d.Fix, "n_rxq and mtu_request") {
		t.Fatalf("configure error: %+v", d)
	}
	// the mempool case keeps its own diagnosis
	d = Diagnose(h, &ovs.State{DPDKInitialized: true, OtherConfig: map[string]string{"dpdk-socket-mem": "32"}},
		ovs.Interface{Name: "n0", Type: "dpdk", OFPort: -1, Error: "could not add network device n0 to ofproto (Invalid argument)"}, recorded["mempool"])
	if d.Kind != ProblemMempool {
		t.Fatalf("mempool: %+v", d)
	}
}

// Older OvS leave Interface.error empty: the log line OvS wrote for the
// interface stands in for it, and the diagnosis follows from it.
func TestDiagnoseEmptyErrorFromLog(t *testing.T) {
	h := sysfstree.FakeRoot(t, map[string]string{"/sys/bus/pci/devices": "<dir>"})
	up := &ovs.State{DPDKInitialized: true, OtherConfig: map[string]string{"dpdk-init": "try"}}
	d := Diagnose(h, up, ovs.Interface{Name: "eth9", Type: "system", OFPort: -1}, recordedAttach["no-netdev"])
	if d.Kind != ProblemNoSuchNetdev || d.Error != "ofport is -1; Interface.error is empty (older OvS), the ovs-vswitchd log says: could not open network device eth9 (No such device)" ||
		len(d.Evidence) != 1 || !strings.Contains(d.Cause, "no network device eth9 exists") {
		t.Fatalf("no such device: %+v", d)
	}
	d = Diagnose(h, up, ovs.Interface{Name: "pci", Type: "dpdk", Options: map[string]string{"dpdk-devargs": "0000:99:00.0"}}, recorded["bad-pci"])
	if d.Kind != ProblemPCIAbsent || !strings.Contains(d.Error, "ofport is 0; Interface.error is empty (older OvS), the ovs-vswitchd log says: Error attaching device '0000:99:00.0' to DPDK") {
		t.Fatalf("pci: %+v", d)
	}
	// nothing in the log about it: the ofport is all there is
	d = Diagnose(h, up, ovs.Interface{Name: "quiet", Type: "dpdk", OFPort: -1, Options: map[string]string{"dpdk-devargs": "net_null0"}}, recordedAttach["no-netdev"])
	if d.Kind != ProblemUnknown || d.Error != "ofport is -1" {
		t.Fatalf("quiet: %+v", d)
	}
}

// ealExclusion reads dpdk-extra as EAL does: --no-pci, allow and block
// lists, with the option's value as the next word or after '='.
func TestEALExclusion(t *testing.T) {
	for extra, want := range map[string]string{
		"":                                     "",
		"--no-pci":                             "has --no-pci",
		"--no-telemetry --no-pci":              "has --no-pci",
		"-a 0000:03:00.0":                      "allows only 0000:03:00.0 (-a)",
		"-a 0000:03:00.0 -a 04:00.0,x=1":       "",
		"--allow=0000:03:00.0,representor=[0]": "allows only 0000:03:00.0 (-a)",
		"-b 04:00.0":                           "blocks it (-b 04:00.0)",
		"-b 0000:05:00.0":                      "",
		"-w 0000:04:00.0":                      "",
	} {
		if got := ealExclusion(extra, "0000:04:00.0"); got != want {
			t.Errorf("%q: got %q, want %q", extra, got, want)
		}
	}
}

// A device on vfio-pci that a PMD took ("Probe PCI driver") and whose
// probe failed: the PMD's own error is the cause, not the binding or the
// IOMMU (the recorded virtio lines, the NIC here on vfio-pci).
func TestDiagnoseAttachPMDProbeFailed(t *testing.T) {
	h := sysfstree.FakeRoot(t, map[string]string{"/sys/bus/pci/devices/0000:00:03.0/vendor": "0x1af4\n", "/proc/cmdline": "intel_iommu=on\n"})
	link(t, h, "../../../../bus/pci/drivers/vfio-pci", "/sys/bus/pci/devices/0000:00:03.0/driver")
	link(t, h, "../../../../kernel/iommu_groups/3", "/sys/bus/pci/devices/0000:00:03.0/iommu_group")
	up := &ovs.State{DPDKInitialized: true, OtherConfig: map[string]string{"dpdk-init": "try"}}
	d := Diagnose(h, up, ovs.Interface{Name: "vnet", Type: "dpdk", OFPort: -1, Error: "Error attaching device '0000:00:03.0' to DPDK",
		Options: map[string]string{"dpdk-devargs": "0000:00:03.0"}}, recordedAttach["kernel-driver"])
	if d.Kind != ProblemAttachFailed || d.Cause != "0000:00:03.0 is on vfio-pci and DPDK's net_virtio driver took it, but the driver's probe failed: eth_virtio_pci_init(): Failed to init PCI device" ||
		strings.Contains(d.Fix, "bind") {
		t.Fatalf("%+v", d)
	}
}

// FuzzDiagnose feeds Diagnose arbitrary ovs-vswitchd log text, an
// Interface.error and dpdk-extra: it never panics and always says a kind,
// a cause and a fix.
func FuzzDiagnose(f *testing.F) {
	for _, lt := range recordedAttach {
		f.Add(strings.Join(lt, "\n"), "", "--no-pci")
	}
	for _, lt := range recorded {
		f.Add(strings.Join(lt, "\n"), "Error attaching device '0000:00:03.0' to DPDK", "-a 0000:00:03.0")
	}
	f.Add("x|1|dpdk|ERR|Frame size (9018) > device max frame size (1518) for port_id 0\nx|2|netdev_dpdk|ERR|Interface p MTU (9000) setup error: Invalid argument",
		"could not add network device p to ofproto (Invalid argument)", "-b")
	f.Add("|||||", "'p' is missing 'options:dpdk-devargs'", "--allow=")
	// EAL's stages: not seen by the bus, seen and unusable, probe, IOMMU
	f.Add("x|1|dpdk|ERR|EAL: Cannot find device (0000:00:03.0)\nx|2|dpdk|INFO|EAL: Requested device 0000:01:00.1 cannot be used", "Error attaching device '0000:00:03.0' to DPDK", "")
	f.Add("x|1|dpdk|INFO|EAL: Probe PCI driver: net_ixgbe (8086:10fb) device: 0000:01:00.1 (socket 0)\nx|2|dpdk|ERR|EAL: 0000:05:00.0 VFIO group is not viable! Not all devices in IOMMU group bound to VFIO or unbound", "Error attaching device '0000:01:00.1' to DPDK", "")
	h := attachHost(f, "intel_iommu=on", true)
	f.Fuzz(func(t *testing.T, log, ifErr, extra string) {
		st := &ovs.State{DPDKInitialized: true, OtherConfig: map[string]string{"dpdk-init": "try", "dpdk-extra": extra, "doca-init": "true"}}
		for _, devargs := range []string{"0000:00:03.0", "0000:01:00.1", "0000:05:00.0", "net_null0", "net_x,a=[", ""} {
			ifc := ovs.Interface{Name: "p", Type: "dpdk", OFPort: -1, Error: ifErr, Options: map[string]string{"dpdk-devargs": devargs}, MTURequest: 9000}
			d := Diagnose(h, st, ifc, ovs.LogTail(strings.Split(log, "\n")))
			if d.Kind == "" || d.Cause == "" || d.Fix == "" || d.Error == "" {
				t.Fatalf("devargs %q: incomplete diagnosis %+v", devargs, d)
			}
		}
	})
}

// EAL's own stage before sysfs guesses, and kernel options already on the
// command line never advised: a device EAL's bus did not see with nothing
// in dpdk-extra keeping it out; a ConnectX function on a UIO driver or
// vfio-pci (bind it back to mlx5_core, whatever EAL logged); vfio-pci
// with no IOMMU group while the command line already has intel_iommu=on
// (the firmware's VT-d is what is left), or only iommu=pt (add the
// vendor's option, not iommu=pt again).
func TestDiagnoseAttachEALStage(t *testing.T) {
	up := &ovs.State{DPDKInitialized: true, OtherConfig: map[string]string{"dpdk-init": "try"}}
	port := func(devargs string) ovs.Interface {
		return ovs.Interface{Name: "p", Type: "dpdk", OFPort: -1, Error: "Error attaching device '" + devargs + "' to DPDK", Options: map[string]string{"dpdk-devargs": devargs}}
	}
	// not seen by the PCI bus, no EAL argument to blame
	d := Diagnose(attachHost(t, "intel_iommu=on", true), up, port("0000:00:01.0"), recordedAttach["no-pci"])
	if d.Kind != ProblemPCINotScanned || !strings.Contains(d.Cause, `EAL's PCI bus did not see 0000:00:01.0 ("Cannot find device"), though sysfs has it (no driver)`) ||
		!strings.Contains(d.Fix, "restart ovs-vswitchd") {
		t.Errorf("not scanned: %+v", d)
	}
	// mlx5 on a UIO driver or vfio-pci
	for _, drv := range []string{"uio_pci_generic", "igb_uio", "vfio-pci"} {
		h := sysfstree.FakeRoot(t, map[string]string{"/sys/bus/pci/devices/0000:03:00.0/vendor": "0x15b3\n", "/proc/cmdline": "intel_iommu=on\n"})
		link(t, h, "../../../../bus/pci/drivers/"+drv, "/sys/bus/pci/devices/0000:03:00.0/driver")
		lines := []string{
			"2026-12-02T02:00:00.000Z|00091|dpdk|ERR|EAL: Driver cannot attach the device (0000:03:00.0)",
			"2026-12-02T02:00:00.000Z|00093|netdev_dpdk|WARN|Error attaching device '0000:03:00.0' to DPDK",
		}
		d := Diagnose(h, up, port("0000:03:00.0"), ovs.LogTail(lines))
		if d.Kind != ProblemMlx5NotMlx5Core || !strings.Contains(d.Cause, "ConnectX/BlueField function 0000:03:00.0 is bound to "+drv) ||
			!strings.Contains(d.Fix, "bind it back to mlx5_core: echo 0000:03:00.0 > /sys/bus/pci/drivers/"+drv+"/unbind") {
			t.Errorf("mlx5 on %s: %+v", drv, d)
		}
	}
	// vfio-pci without an IOMMU group: the fix follows the command line
	for _, c := range []struct{ cmdline, want, not string }{
		{"root=/dev/sda1 intel_iommu=on iommu=pt", "the kernel command line already has intel_iommu=on iommu=pt, so it is not the missing piece: enable the IOMMU in the firmware setup (Intel VT-d / AMD-Vi", "add intel_iommu"},
		{"root=/dev/sda1 iommu=pt", "the kernel command line has iommu=pt but no intel_iommu=on (Intel) or amd_iommu=on (AMD): add the one for this CPU", "intel_iommu=on iommu=pt"},
		{"root=/dev/sda1 quiet", "add intel_iommu=on iommu=pt (Intel) or amd_iommu=on iommu=pt (AMD)", "already has"},
	} {
		d := Diagnose(attachHost(t, c.cmdline, false), up, port("0000:05:00.0"), recordedAttach["vfio-plain"])
		if d.Kind != ProblemIOMMU || !strings.Contains(d.Fix, c.want) || strings.Contains(d.Fix, c.not) {
			t.Errorf("%s: %+v\nwant fix with %q, without %q", c.cmdline, d, c.want, c.not)
		}
	}
}
