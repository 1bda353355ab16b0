package smartnic

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rig/internal/devargs"
	"rig/internal/host"
	"rig/internal/labinfo"
	"rig/internal/testutil/sysfstree"
)

func hostFixture(name string) *host.Host {
	return host.New(filepath.Join("..", "testdata", "hosts", name))
}

// The fixture roots' sysfs, resolved as on hardware.
func TestResolveNetdevFixtures(t *testing.T) {
	for _, c := range []struct {
		root, netdev, args, want string
	}{
		{"bf2-dpu-arm", "p0", "", "0000:03:00.0"},
		{"bf2-dpu-arm", "p1", "", "0000:03:00.1"},
		{"bf2-dpu-arm", "pf0hpf", "", "0000:03:00.0,representor=[65535]"},
		{"bf2-dpu-arm", "pf1hpf", "", "0000:03:00.1,representor=[65535]"},
		{"bf3-dpu-arm", "p0", "", "0000:03:00.0"},
		{"bf3-dpu-arm", "pf0hpf", "dv_xmeta_en=1", "0000:03:00.0,representor=[65535],dv_xmeta_en=1"},
		{"bf3-dpu-arm", "pf1hpf", "", "0000:03:00.1,representor=[65535]"},
		{"cx6dx-host", "enp59s0f0np0", "txq_inline_max=1024,txq_mpw_en=1", "0000:3b:00.0,txq_inline_max=1024,txq_mpw_en=1"},
		{"cx6dx-host", "enp59s0f1np1", "", "0000:3b:00.1"},
	} {
		np, err := ResolveNetdev(hostFixture(c.root), nil, NetdevRequest{Netdev: c.netdev, MLX5Args: c.args})
		if err != nil {
			t.Errorf("%s %s: %v", c.root, c.netdev, err)
			continue
		}
		if np.Devargs != c.want || np.Substituted || devargs.Check(np.Devargs) != "" {
			t.Errorf("%s %s: %+v, want devargs %s", c.root, c.netdev, np, c.want)
		}
	}
}

// What the rules refuse, each naming the netdev and what sysfs showed.
func TestResolveNetdevRefusals(t *testing.T) {
	for _, c := range []struct {
		root, netdev, why, found, fix string
	}{
		{"bf2-dpu-arm", "tmfifo_net0", "no PCI function", "no device link", "raw devargs"},
		{"bf2-dpu-arm", "lo", "no PCI function", "no device link", "raw devargs"},
		{"bf3-dpu-arm", "en3f0pf0sf0", "an SF representor", "phys_port_name pf0sf0", `"0000:03:00.0,representor=sf0"`},
		{"cx6dx-host", "enp59s0f0v0", "no phys_port_name", "PCI function 0000:3b:00.2, driver mlx5_core, phys_port_name none", `"0000:3b:00.2"`},
		{"cx6dx-host", "nope0", "no netdev nope0", "nothing in this host", "ip link"},
	} {
		_, err := ResolveNetdev(hostFixture(c.root), nil, NetdevRequest{Netdev: c.netdev})
		var ne *NetdevError
		if !errors.As(err, &ne) {
			t.Errorf("%s %s: err %v, want a *NetdevError", c.root, c.netdev, err)
			continue
		}
		if !strings.Contains(err.Error(), "netdev "+c.netdev+": ") || !strings.Contains(ne.Why, c.why) || !strings.Contains(ne.Cause(), c.found) || !strings.Contains(ne.Fix(), c.fix) {
			t.Errorf("%s %s:\n err %v\n cause %q\n fix %q", c.root, c.netdev, err, ne.Cause(), ne.Fix())
		}
	}
}

// A function with another driver is refused: the mlx5 PMD needs mlx5_core.
func TestResolveNetdevNotMLX5(t *testing.T) {
	root := t.TempDir()
	pciDir := filepath.Join(root, "sys/devices/pci0000:00/0000:00:05.0")
	must(t, os.MkdirAll(filepath.Join(pciDir, "net/eth0"), 0o755))
	must(t, os.MkdirAll(filepath.Join(root, "sys/bus/pci/drivers/virtio-pci"), 0o755))
	must(t, os.MkdirAll(filepath.Join(root, "sys/class/net"), 0o755))
	must(t, os.Symlink("../../../bus/pci/drivers/virtio-pci", filepath.Join(pciDir, "driver")))
	must(t, os.Symlink("../../../0000:00:05.0", filepath.Join(pciDir, "net/eth0/device")))
	must(t, os.Symlink("../../devices/pci0000:00/0000:00:05.0/net/eth0", filepath.Join(root, "sys/class/net/eth0")))
	_, err := ResolveNetdev(host.New(root), nil, NetdevRequest{Netdev: "eth0"})
	if err == nil || !strings.Contains(err.Error(), "netdev eth0: its PCI function is not driven by mlx5_core") ||
		!strings.Contains(err.Error(), "found: PCI function 0000:00:05.0, driver virtio-pci") {
		t.Fatalf("err %v", err)
	}
	// an SF netdev: its device is the auxiliary mlx5_core.sf.2 (§11.2), not a PCI function
	aux := filepath.Join(pciDir, "mlx5_core.sf.2")
	must(t, os.MkdirAll(filepath.Join(aux, "net/enp3s0f0s0"), 0o755))
	must(t, os.Symlink("../../../mlx5_core.sf.2", filepath.Join(aux, "net/enp3s0f0s0/device")))
	must(t, os.Symlink("../../devices/pci0000:00/0000:00:05.0/mlx5_core.sf.2/net/enp3s0f0s0", filepath.Join(root, "sys/class/net/enp3s0f0s0")))
	_, err = ResolveNetdev(host.New(root), nil, NetdevRequest{Netdev: "enp3s0f0s0"})
	if err == nil || !strings.Contains(err.Error(), "its device is not a PCI function (found: device mlx5_core.sf.2, not a PCI function") {
		t.Fatalf("SF: %v", err)
	}
}

// labRoot is a fake lab root: the fixture's sysfs (or none) and the
// lab's run/rig/lab.json written by labinfo.Write.
func labRoot(t *testing.T, sysFrom string, subs map[string]string) (*host.Host, *labinfo.Info) {
	t.Helper()
	root := t.TempDir()
	if sysFrom != "" {
		sysfstree.Copy(t, filepath.Join("..", "testdata", "hosts", sysFrom, "sys"), filepath.Join(root, "sys"))
	}
	must(t, os.MkdirAll(filepath.Join(root, "run/rig"), 0o755))
	must(t, labinfo.Write(filepath.Join(root, "run/rig"), &labinfo.Info{Name: "a", Kind: "bf2-dpu", NetNS: "rig-lab-a", WireNetNS: "rig-wire-a", Substitutions: subs}))
	in, err := labinfo.Read(root)
	if err != nil || in == nil {
		t.Fatalf("labinfo.Read: %v %v", in, err)
	}
	return host.New(root), in
}

func TestResolveNetdevLabSubstitutes(t *testing.T) {
	h, lab := labRoot(t, "bf2-dpu-arm", map[string]string{"mlx5": AFPacketDriver})
	np, err := ResolveNetdev(h, lab, NetdevRequest{Netdev: "p0"})
	if err != nil {
		t.Fatal(err)
	}
	want := "p0: mlx5 devargs 0000:03:00.0 substituted by net_af_packet_p0,iface=p0,framecnt=8192 (virtual lab a: no mlx5 hardware here; net_af_packet carries the frames over the same netdev)"
	if !np.Substituted || np.Devargs != "net_af_packet_p0,iface=p0,framecnt=8192" || np.Hardware != "0000:03:00.0" || np.String() != want {
		t.Fatalf("got %+v\n%s\nwant %s", np, np, want)
	}
	np, err = ResolveNetdev(h, lab, NetdevRequest{Netdev: "pf0hpf", MLX5Args: "dv_xmeta_en=1", NRxq: 2, MTU: 9000})
	if err != nil {
		t.Fatal(err)
	}
	if np.Devargs != "net_af_packet_pf0hpf,iface=pf0hpf,blocksz=16384,framesz=16384,framecnt=1024" || np.Hardware != "0000:03:00.0,representor=[65535]" ||
		!strings.HasSuffix(np.String(), "; mlx5_args dv_xmeta_en=1 not applied (af_packet has no such options)") || devargs.Check(np.Devargs) != "" {
		t.Fatalf("got %+v\n%s", np, np)
	}
	// a lab netdev with no PCI function behind it (a bare veth) still
	// substitutes, and says what it found
	np, err = ResolveNetdev(h, lab, NetdevRequest{Netdev: "lo"})
	if err != nil || np.Hardware != "" || !strings.HasPrefix(np.String(), "lo: mlx5 (no mlx5 function here: no device link (a virtual netdev") {
		t.Fatalf("lo: %+v %v", np, err)
	}
	// a netdev the lab does not have
	if _, err := ResolveNetdev(h, lab, NetdevRequest{Netdev: "p7"}); err == nil || !strings.Contains(err.Error(), "found: nothing in virtual lab a") {
		t.Fatalf("p7: %v", err)
	}
}

func TestResolveNetdevLabWithoutSubstitution(t *testing.T) {
	// a lab file without an mlx5 substitution resolves as hardware
	h, lab := labRoot(t, "bf2-dpu-arm", nil)
	if np, err := ResolveNetdev(h, lab, NetdevRequest{Netdev: "p1"}); err != nil || np.Substituted || np.Devargs != "0000:03:00.1" {
		t.Fatalf("%+v %v", np, err)
	}
	h, lab = labRoot(t, "bf2-dpu-arm", map[string]string{"mlx5": "net_tap"})
	if _, err := ResolveNetdev(h, lab, NetdevRequest{Netdev: "p1"}); err == nil || !strings.Contains(err.Error(), "this rig knows only net_af_packet") {
		t.Fatalf("unknown substitute: %v", err)
	}
}

func TestAFPacketDevargsNames(t *testing.T) {
	for in, want := range map[string]string{
		"p0":              "net_af_packet_p0,iface=p0,framecnt=8192",
		"enp59s0f0np0":    "net_af_packet_enp59s0f0np0,iface=enp59s0f0np0,framecnt=8192",
		"veth-a.1":        "net_af_packet_veth_a_1,iface=veth-a.1,framecnt=8192",
		"fifteen-chars15": "net_af_packet_fifteen_chars15,iface=fifteen-chars15,framecnt=8192",
	} {
		got := AFPacketDevargs(NetdevRequest{Netdev: in})
		name, _, _ := strings.Cut(got, ",")
		if got != want || len(name) > 63 || devargs.Check(got) != "" || !strings.HasPrefix(name, AFPacketDriver) {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

func TestParsePhysPortName(t *testing.T) {
	for in, want := range map[string]PhysPort{
		"":         {Kind: PortNone, Controller: -1},
		"p0":       {Kind: PortUplink, Controller: -1, PF: 0},
		"p1\n":     {Kind: PortUplink, Controller: -1, PF: 1},
		"pf0":      {Kind: PortHostPF, Controller: -1},
		"c1pf0":    {Kind: PortHostPF, Controller: 1},
		"pf1vf3":   {Kind: PortVFRep, Controller: -1, PF: 1, Index: 3},
		"c1pf0vf2": {Kind: PortVFRep, Controller: 1, PF: 0, Index: 2},
		"pf0sf88":  {Kind: PortSFRep, Controller: -1, Index: 88},
		"p0s1":     {Kind: PortOther, Controller: -1},
		"c1p0":     {Kind: PortOther, Controller: -1},
		"pfx":      {Kind: PortOther, Controller: -1},
		"pf0vf":    {Kind: PortOther, Controller: -1},
		"p":        {Kind: PortOther, Controller: -1},
		"p1234567": {Kind: PortOther, Controller: -1},
	} {
		if got := ParsePhysPortName(in); got != want {
			t.Errorf("%q: %+v, want %+v", in, got, want)
		}
	}
}

// FuzzParsePhysPortName: never panics; a recognised form prints back to
// the input (the kernel's forms are canonical), and MLX5Devargs of any
// phys_port_name is valid devargs syntax or a NetdevError.
func FuzzParsePhysPortName(f *testing.F) {
	for _, s := range []string{"", "p0", "pf0", "c1pf0", "pf0vf3", "c1pf0vf2", "pf0sf88", "p0s1", "pf0vf", "c", "pf00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p := ParsePhysPortName(s)
		if canon := formatPhysPort(p); canon != "" && canon != strings.TrimSpace(s) && !leadingZeros(s) {
			t.Fatalf("%q parsed as %+v, prints back as %q", s, p, canon)
		}
		d, err := MLX5Devargs(NetdevFunction{Netdev: "x", Device: "0000:03:00.0", BDF: "0000:03:00.0", Driver: "mlx5_core", PhysPortName: s})
		var ne *NetdevError
		switch {
		case err == nil && devargs.Check(d) != "":
			t.Fatalf("%q: devargs %q: %s", s, d, devargs.Check(d))
		case err != nil && !errors.As(err, &ne):
			t.Fatalf("%q: %v", s, err)
		case err == nil && p.Kind != PortUplink && p.Kind != PortHostPF && p.Kind != PortVFRep:
			t.Fatalf("%q: kind %d resolved to %q", s, p.Kind, d)
		}
	})
}

func formatPhysPort(p PhysPort) string {
	c := ""
	if p.Controller >= 0 {
		c = "c" + itoa(p.Controller)
	}
	switch p.Kind {
	case PortUplink:
		return "p" + itoa(p.PF)
	case PortHostPF:
		return c + "pf" + itoa(p.PF)
	case PortVFRep:
		return c + "pf" + itoa(p.PF) + "vf" + itoa(p.Index)
	case PortSFRep:
		return c + "pf" + itoa(p.PF) + "sf" + itoa(p.Index)
	}
	return ""
}

// leadingZeros: "pf00" parses as pf0; the kernel never prints that.
func leadingZeros(s string) bool {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '0' && (i == 0 || s[i-1] < '0' || s[i-1] > '9') && s[i+1] >= '0' && s[i+1] <= '9' {
			return true
		}
	}
	return false
}
