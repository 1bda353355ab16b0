package lab

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"rig/lab/card"
)

// TestMachinesLayout: a DPU kind's lab has a host and a peer netns, the
// host's view under the lab's dir, and far ends by the BlueField's
// topology: pf0hpf/pf1hpf and tmfifo_net0 on the host (the host card's
// names and MACs), p0/p1 and oob_net0 on the peer, the rest in the wire
// netns; with far ends "wire" everything is in the wire netns, same-named.
func TestMachinesLayout(t *testing.T) {
	l, _ := ForName("n1")
	got := []string{l.HostNetNS(), l.PeerNetNS(), l.HostNetNSPath(), l.PeerNetNSPath(), l.HostMntPath(), l.HostCardRoot(), l.hostStash(), l.FarBinDir()}
	want := []string{"rig-lab-n1-host", "rig-lab-n1-peer", "/run/netns/rig-lab-n1-host", "/run/netns/rig-lab-n1-peer",
		"/run/rig-lab/n1/host/mnt", "/run/rig-lab/n1/host/card", "/run/rig-lab/n1/host/stash", "/run/rig-lab/n1/farbin"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("layout %v, want %v", got, want)
	}
	if got := l.netnsPaths(); len(got) != 4 {
		t.Errorf("netnsPaths %v", got)
	}
	rec := record{Kind: "bf2-dpu", FarEnds: FarEndsMachines}
	for dev, want := range map[string]FarEnd{
		"pf0hpf":      {Machine: "host", NetNS: "rig-lab-n1-host", Name: "enp225s0f0np0", MAC: "0c:42:a1:5e:1d:ce"},
		"pf1hpf":      {Machine: "host", NetNS: "rig-lab-n1-host", Name: "enp225s0f1np1", MAC: "0c:42:a1:5e:1d:cf"},
		"tmfifo_net0": {Machine: "host", NetNS: "rig-lab-n1-host", Name: "tmfifo_net0", MAC: "02:02:02:02:02:02"},
		"p0":          {Machine: "peer", NetNS: "rig-lab-n1-peer", Name: "p0"},
		"p1":          {Machine: "peer", NetNS: "rig-lab-n1-peer", Name: "p1"},
		"oob_net0":    {Machine: "peer", NetNS: "rig-lab-n1-peer", Name: "mgmt0"},
		"pf0vf0":      {Machine: "wire", NetNS: "rig-lab-n1-wire", Name: "pf0vf0"},
		"enp3s0f0s0":  {Machine: "wire", NetNS: "rig-lab-n1-wire", Name: "enp3s0f0s0"},
	} {
		if got := l.farEnd("bf2-dpu", dev, rec); got != want {
			t.Errorf("far end of %s: %+v, want %+v", dev, got, want)
		}
		if got := l.farEnd("bf2-dpu", dev, record{Kind: "bf2-dpu", FarEnds: FarEndsWire}); got != (FarEnd{Machine: "wire", NetNS: "rig-lab-n1-wire", Name: dev}) {
			t.Errorf("far end of %s with far ends wire: %+v", dev, got)
		}
	}
	if got := l.farEnd("bf3-dpu", "pf0hpf", record{Kind: "bf3-dpu", FarEnds: FarEndsMachines}); got.Name != "enp161s0f0np0" || got.Machine != "host" {
		t.Errorf("bf3-dpu pf0hpf's far end: %+v", got)
	}
	// every host and peer netdev that has an address is one end of a join
	m, _ := card.MachinesOf("bf2-dpu")
	for _, a := range Addresses() {
		var ok bool
		for _, j := range append(append([]card.Join(nil), m.HostJoins...), m.PeerJoins...) {
			ok = ok || (a.Machine == "arm" && j.Arm == a.Netdev) || (a.Machine != "arm" && j.Far == a.Netdev)
		}
		if !ok {
			t.Errorf("address %+v: no such netdev on that machine", a)
		}
	}
	want2 := map[string]string{"host/tmfifo_net0": "192.168.100.1/30", "arm/tmfifo_net0": "192.168.100.2/30", "peer/mgmt0": "192.168.101.1/30", "arm/oob_net0": "192.168.101.2/30"}
	for _, a := range Addresses() {
		if want2[a.Machine+"/"+a.Netdev] != a.CIDR {
			t.Errorf("address %+v, want %s", a, want2[a.Machine+"/"+a.Netdev])
		}
	}
}

func TestResolveFarEnds(t *testing.T) {
	for _, c := range []struct{ kind, in, want, err string }{
		{"bf2-dpu", "", FarEndsMachines, ""},
		{"bf3-dpu", "", FarEndsMachines, ""},
		{"bf2-dpu", "wire", FarEndsWire, ""},
		{"bf2-dpu", "machines", FarEndsMachines, ""},
		{"cx6dx-host", "", FarEndsWire, ""},
		{"cx6dx-host", "wire", FarEndsWire, ""},
		{"cx6dx-host", "machines", "", "is no DPU"},
		{"bf2-dpu", "peer", "", `want machines`},
	} {
		got, err := ResolveFarEnds(c.kind, c.in)
		if got != c.want || (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("ResolveFarEnds(%s, %q) = %q, %v; want %q, %q", c.kind, c.in, got, err, c.want, c.err)
		}
	}
}

// TestFarEnvAndInfo: the host and the peer find rig first on PATH (the
// far bin dir, nothing else of the lab's tools); the host's rig keeps its
// state in the host's /run/rig; the host's lab.json says it is the host
// (no firmware state, its own netns), the Arm's names the machines.
func TestFarEnvAndInfo(t *testing.T) {
	l, _ := ForName("n1")
	env := []string{"HOME=/root", "PATH=/usr/bin", "RIG_STATE_FILE=/x/state.json"}
	if got, want := l.farEnv(env, "host"), []string{"HOME=/root", "PATH=/run/rig-lab/n1/farbin:/usr/bin", "RIG_STATE_FILE=/run/rig/state.json"}; !reflect.DeepEqual(got, want) {
		t.Errorf("host env %v, want %v", got, want)
	}
	if got, want := l.farEnv(env, "peer"), []string{"HOME=/root", "RIG_STATE_FILE=/x/state.json", "PATH=/run/rig-lab/n1/farbin:/usr/bin"}; !reflect.DeepEqual(got, want) {
		t.Errorf("peer env %v, want %v", got, want)
	}
	h := l.hostInfo("bf2-host")
	if h.Machine != "host" || h.NetNS != "rig-lab-n1-host" || h.FirmwareState != "" || h.WireNetNS != "" || h.Substitutions["mlx5"] != "net_af_packet" || h.Kind != "bf2-host" {
		t.Errorf("host lab.json %+v", h)
	}
	a := l.info("bf2-dpu", record{FarEnds: FarEndsMachines, HostNetNS: l.HostNetNS(), PeerNetNS: l.PeerNetNS()})
	if a.Machine != "arm" || a.HostNetNS != "rig-lab-n1-host" || a.PeerNetNS != "rig-lab-n1-peer" || a.WireNetNS != "rig-lab-n1-wire" {
		t.Errorf("Arm lab.json %+v", a)
	}
}

// TestHostViewTree: the host's tree of the card, as the lab writes it,
// has the PFs with their netdevs' card attributes (each PF linked: the
// lab joins it to its representor), the RShim function (class 0801, no
// driver) and none of what the veths give live.
func TestHostViewTree(t *testing.T) {
	m, _ := card.MachinesOf("bf2-dpu")
	dir := t.TempDir()
	if err := m.Host.Linked().Write(dir, true); err != nil {
		t.Fatal(err)
	}
	read := func(p string) string { b, _ := os.ReadFile(filepath.Join(dir, p)); return string(b) }
	const pf0, pf1, rs = "sys/devices/pci0000:e0/0000:e0:03.1/0000:e1:00.0", "sys/devices/pci0000:e0/0000:e0:03.1/0000:e1:00.1", "sys/devices/pci0000:e0/0000:e0:03.1/0000:e1:00.2"
	for p, want := range map[string]string{
		pf0 + "/device": "0xa2d6\n", rs + "/device": "0xc2d3\n", rs + "/class": "0x080100\n",
		pf0 + "/net/enp225s0f0np0/phys_port_name": "p0\n", pf1 + "/net/enp225s0f1np1/speed": "25000\n",
		pf1 + "/infiniband/mlx5_1/ports/1/state": "4: ACTIVE\n", "sys/devices/virtual/net/tmfifo_net0/speed": "10\n",
	} {
		if got := read(p); got != want {
			t.Errorf("%s: %q, want %q", p, got, want)
		}
	}
	if l, err := os.Readlink(filepath.Join(dir, "sys/bus/pci/devices/0000:e1:00.2")); err != nil || !strings.HasSuffix(l, "0000:e1:00.2") {
		t.Errorf("bus link of the RShim function: %q, %v", l, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, rs, "driver")); err == nil {
		t.Error("the RShim function has a driver link (rshim drives it from user space)")
	}
	for _, p := range []string{"sys/class/net", pf0 + "/net/enp225s0f0np0/address", pf0 + "/net/enp225s0f0np0/carrier"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); err == nil {
			t.Errorf("host view tree has %s (the veth's, live)", p)
		}
	}
}
