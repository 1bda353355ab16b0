package smartnic

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"rig/internal/host"
)

// Both BlueField Arm fixtures carry one SF per port (issue 13 item 4): the
// auxiliary device mlx5_core.sf.N under the PCI function, its netdev with
// role sf and its own RDMA device, linked to its representor.
func TestScanSFs(t *testing.T) {
	for _, c := range []struct {
		fixture string
		ppn     [2]string // the SF netdevs' phys_port_name: p0/p1 on the BF2 image, none upstream
	}{
		{"bf2-dpu-arm", [2]string{"p0", "p1"}},
		{"bf3-dpu-arm", [2]string{"", ""}},
	} {
		inv := scanFixture(t, c.fixture)
		for i, want := range []struct{ aux, netdev, rdma, rep string }{
			{"mlx5_core.sf.2", "enp3s0f0s0", "mlx5_2", "en3f0pf0sf0"},
			{"mlx5_core.sf.3", "enp3s0f1s0", "mlx5_3", "en3f1pf1sf0"},
		} {
			f := inv.Functions[i]
			if len(f.SFs) != 1 {
				t.Fatalf("%s %s: SFs %+v, want 1", c.fixture, f.BDF, f.SFs)
			}
			sf := f.SFs[0]
			if sf.Name != want.aux || sf.SFNum != 0 || sf.Driver != "mlx5_core.sf" || sf.Representor != want.rep {
				t.Errorf("%s %s: SF %+v", c.fixture, f.BDF, sf)
			}
			if len(sf.Netdevs) != 1 || sf.Netdevs[0].Name != want.netdev || sf.Netdevs[0].Role != RoleSF ||
				sf.Netdevs[0].PhysPortName != c.ppn[i] || sf.Netdevs[0].Device != want.aux {
				t.Errorf("%s %s: SF netdevs %+v", c.fixture, want.aux, sf.Netdevs)
			}
			if len(sf.RDMA) != 1 || sf.RDMA[0].Name != want.rdma || len(sf.RDMA[0].Ports) != 1 ||
				sf.RDMA[0].Ports[0].Netdev != want.netdev || !sf.RDMA[0].Ports[0].Active() {
				t.Errorf("%s %s: SF RDMA %+v", c.fixture, want.aux, sf.RDMA)
			}
			// the function's own netdevs and RDMA devices stay its own
			for _, n := range f.Netdevs {
				if n.Name == want.netdev || n.Role == RoleSF {
					t.Errorf("%s: SF netdev %s listed as the function's own", c.fixture, n.Name)
				}
			}
			if len(f.RDMA) != 1 || f.RDMA[0].Name != "mlx5_"+itoa(i) {
				t.Errorf("%s %s: function RDMA %+v", c.fixture, f.BDF, f.RDMA)
			}
			if p, ok := inv.NetdevPort(want.netdev); !ok || p.Device != want.rdma || p.Port != 1 {
				t.Errorf("%s: NetdevPort(%s) = %+v, %v", c.fixture, want.netdev, p, ok)
			}
		}
	}
}

// An SF netdev reporting phys_port_name p0 (as on BlueField images) is an
// SF, not a second uplink: "pN is the uplink" holds only for a netdev
// whose device is the PCI function itself.
func TestRoleByDeviceBeforePhysPortName(t *testing.T) {
	bf := Function{BDF: "0000:03:00.0", Family: "BlueField", Kind: FunctionNIC, SFs: []SF{{Name: "mlx5_core.sf.2"}}}
	for _, c := range []struct {
		n    Netdev
		side string
		want string
	}{
		{Netdev{Name: "enp3s0f0s0", PhysPortName: "p0", Device: "mlx5_core.sf.2"}, SideDPUArm, RoleSF},
		{Netdev{Name: "enp3s0f0s0", Device: "mlx5_core.sf.2"}, SideDPUArm, RoleSF},
		{Netdev{Name: "enp3s0f0s0", PhysPortName: "p0", Device: "mlx5_core.sf.2"}, SideHost, RoleSF},
		{Netdev{Name: "eth5", PhysPortName: "p0", Device: "mlx5_core.sf.9"}, SideDPUArm, RoleOther},
		{Netdev{Name: "p0", PhysPortName: "p0", Device: "0000:03:00.0"}, SideDPUArm, RoleUplink},
		{Netdev{Name: "p0", PhysPortName: "p0"}, SideDPUArm, RoleUplink},
	} {
		if got := Role(c.n, bf, c.side); got != c.want {
			t.Errorf("Role(%+v, %s) = %s, want %s", c.n, c.side, got, c.want)
		}
	}
}

// Issue 13 item 5: with controller-prefixed representor names (c1pf0) and
// no oob_net0 to go by, the Arm side is still recognised; before, the
// host-PF representors were not, the side read "host" and every uplink
// became a "host-pf".
func TestSideControllerPrefixWithoutOOB(t *testing.T) {
	root := copyTree(t, "bf3-dpu-arm")
	must(t, os.Remove(filepath.Join(root, "sys/class/net/oob_net0")))
	must(t, os.RemoveAll(filepath.Join(root, "sys/devices/platform/MLNXBF17:00")))
	inv, err := Scan(&host.Host{Root: root, Exec: noExec(t)})
	if err != nil {
		t.Fatal(err)
	}
	if inv.Side != SideDPUArm {
		t.Fatalf("side %q, want %q (c1pf0 is a host-PF representor)", inv.Side, SideDPUArm)
	}
	roles := map[string]string{}
	for _, n := range inv.Functions[0].Netdevs {
		roles[n.Name] = n.Role
	}
	if want := map[string]string{"p0": RoleUplink, "pf0hpf": RoleHostPFRep, "en3f0pf0sf0": RoleSFRep}; !reflect.DeepEqual(roles, want) {
		t.Errorf("roles %v, want %v", roles, want)
	}
	if inv := scanFixture(t, "bf2-host"); inv.Side != SideHost {
		t.Errorf("bf2-host side %q: a host stays a host", inv.Side)
	}
}

// bond0 over p0/p1 on the BF2 fixture: the bond, its mode and slaves; the
// slaves name it as master and carry its MAC.
func TestBonds(t *testing.T) {
	inv := scanFixture(t, "bf2-dpu-arm")
	if len(inv.Bonds) != 1 {
		t.Fatalf("bonds %+v, want bond0", inv.Bonds)
	}
	b := inv.Bonds[0]
	if b.Name != "bond0" || b.Role != RoleBond || b.Mode != "802.3ad 4" || !reflect.DeepEqual(b.Slaves, []string{"p0", "p1"}) ||
		b.MAC != "0c:42:a1:5e:1d:cc" || !b.AdminUp || b.Ifindex != 14 {
		t.Errorf("bond %+v", b)
	}
	p1 := netdevNamed(t, inv.Functions[1].Netdevs, "p1")
	if p1.Master != "bond0" || p1.MAC != b.MAC || p1.Role != RoleUplink {
		t.Errorf("p1 %+v", p1)
	}
	var out strings.Builder
	if err := WriteInventory(&out, inv); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"port p1  master bond0\n", "bonds:\n    net bond0 (bond)  mac 0c:42:a1:5e:1d:cc", "      mode 802.3ad 4, slaves p0 p1\n",
		"    sf mlx5_core.sf.2: sfnum 0  driver mlx5_core.sf  representor en3f0pf0sf0\n      net enp3s0f0s0 (sf)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("inventory text lacks %q:\n%s", want, out.String())
		}
	}
}

// A master that is not a bond (OvS's kernel datapath, a bridge) is shown
// on its ports and is no bond; an SF with an unreadable sfnum is still an
// SF (sfnum -1).
func TestNonBondMasterAndBadSFNum(t *testing.T) {
	root := copyTree(t, "bf3-dpu-arm")
	ovs := filepath.Join(root, "sys/devices/virtual/net/ovs-system")
	must(t, os.MkdirAll(ovs, 0o755))
	must(t, os.WriteFile(filepath.Join(ovs, "address"), []byte("9a:11:22:33:44:55\n"), 0o644))
	must(t, os.Symlink("../../devices/virtual/net/ovs-system", filepath.Join(root, "sys/class/net/ovs-system")))
	p0 := filepath.Join(root, "sys/class/net/p0/")
	must(t, os.Symlink("../../../../../../../virtual/net/ovs-system", filepath.Join(p0, "master")))
	must(t, os.WriteFile(filepath.Join(root, "sys/bus/pci/devices/0000:03:00.1/mlx5_core.sf.3/sfnum"), []byte("x\n"), 0o644))
	inv, err := Scan(&host.Host{Root: root, Exec: noExec(t)})
	if err != nil {
		t.Fatal(err)
	}
	if n := netdevNamed(t, inv.Functions[0].Netdevs, "p0"); n.Master != "ovs-system" || len(inv.Bonds) != 0 {
		t.Errorf("p0 master %q, bonds %+v", n.Master, inv.Bonds)
	}
	if sfs := inv.Functions[1].SFs; len(sfs) != 1 || sfs[0].SFNum != -1 || sfs[0].Representor != "" || sfs[0].Netdevs[0].Role != RoleSF {
		t.Errorf("SF with a bad sfnum: %+v", sfs)
	}
}

// `rig rdma links` lists the SFs' RDMA devices with their netdevs and
// ifindexes.
func TestRDMALinksWithSFs(t *testing.T) {
	links := RDMALinks(scanFixture(t, "bf2-dpu-arm"))
	var got []string
	for _, l := range links {
		got = append(got, l.IfName+"/"+itoa(l.Port)+" "+l.Netdev+" "+itoa(l.NetdevIndex))
	}
	want := []string{"mlx5_0/1 p0 4", "mlx5_1/1 p1 5", "mlx5_2/1 enp3s0f0s0 10", "mlx5_3/1 enp3s0f1s0 11"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("links %v, want %v", got, want)
	}
	m := rootMapper{&host.Host{Root: hostsDir + "bf3-dpu-arm"}}
	if got := m.DevicesForAux("mlx5_core.sf.3"); !reflect.DeepEqual(got, []string{"mlx5_3"}) {
		t.Errorf("DevicesForAux(mlx5_core.sf.3) = %v", got)
	}
	if got := m.DevicesForAux("mlx5_core.sf.9"); len(got) != 0 {
		t.Errorf("DevicesForAux(absent) = %v", got)
	}
}

// FuzzBareRepName: phys_port_name text (kernel output) never panics; the
// bare name is a suffix of the input, stripping is idempotent, and a
// controller-prefixed representor has the role of its bare form.
func FuzzBareRepName(f *testing.F) {
	for _, s := range []string{"c1pf0", "c1pf0vf3", "c12pf1sf77", "p0", "pf0", "c", "cpf0", "c1p0", "c1pfx", ""} {
		f.Add(s)
	}
	bf := Function{Family: "BlueField", Kind: FunctionNIC}
	f.Fuzz(func(t *testing.T, s string) {
		b := bareRepName(s)
		if !strings.HasSuffix(s, b) || bareRepName(b) != b {
			t.Fatalf("bareRepName(%q) = %q", s, b)
		}
		if b != s && Role(Netdev{PhysPortName: s}, bf, SideDPUArm) != Role(Netdev{PhysPortName: b}, bf, SideDPUArm) {
			t.Fatalf("%q and %q have different roles", s, b)
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
