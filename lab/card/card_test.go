package card

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// snapshot maps every path below root to "dir", "link -> TARGET" or
// "file: CONTENT".
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "link -> " + l
		case d.IsDir():
			out[rel] = "dir"
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = "file: " + string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func diff(want, got map[string]string) []string {
	var d []string
	for p, w := range want {
		if g, ok := got[p]; !ok {
			d = append(d, "missing "+p+" ("+w+")")
		} else if g != w {
			d = append(d, p+": got "+g+", want "+w)
		}
	}
	for p, g := range got {
		if _, ok := want[p]; !ok {
			d = append(d, "extra "+p+" ("+g+")")
		}
	}
	sort.Strings(d)
	return d
}

// TestKindsMatchFixtures: every kind, written as a fixture, is exactly its
// testdata/hosts root (mkhosts.sh's output): same paths, kinds, contents
// and link targets.
func TestKindsMatchFixtures(t *testing.T) {
	for _, c := range Kinds() {
		t.Run(c.Kind, func(t *testing.T) {
			dir := t.TempDir()
			if err := c.Write(dir, false); err != nil {
				t.Fatal(err)
			}
			want := snapshot(t, filepath.Join("../../testdata/hosts", c.Fixture))
			got := snapshot(t, dir)
			if len(want) < 50 {
				t.Fatalf("fixture %s has %d entries; is testdata/hosts there?", c.Fixture, len(want))
			}
			if d := diff(want, got); len(d) > 0 {
				t.Fatalf("%s differs from testdata/hosts/%s:\n%s", c.Kind, c.Fixture, strings.Join(d, "\n"))
			}
		})
	}
}

// TestLabTreeLeavesOutLiveParts: a lab tree has no class/net, no lo, no
// live netdev attribute, and a device link that resolves from
// /sys/devices/virtual/net/<name> to the PCI function.
func TestLabTreeLeavesOutLiveParts(t *testing.T) {
	c, ok := Lookup("bf2-dpu")
	if !ok {
		t.Fatal("no bf2-dpu")
	}
	dir := t.TempDir()
	if err := c.Write(dir, true); err != nil {
		t.Fatal(err)
	}
	got := snapshot(t, dir)
	for p := range got {
		base := filepath.Base(p)
		if strings.HasPrefix(p, "sys/class/net") || strings.Contains(p, "/net/lo") ||
			(strings.Contains(p, "/net/") && !strings.Contains(p, "/infiniband/") && LiveAttr(base)) {
			t.Errorf("lab tree has %s", p)
		}
	}
	l := got["sys/devices/"+bfP0+"/net/p0/device"]
	if want := "link -> ../../../" + bfP0; l != want {
		t.Errorf("p0 device: %s, want %s", l, want)
	}
	if got["sys/devices/"+bfP0+"/net/p0/phys_port_name"] != "file: p0\n" || got["sys/devices/"+bfP0+"/net/p0/speed"] != "file: 25000\n" {
		t.Errorf("p0 card attributes missing: %v", got["sys/devices/"+bfP0+"/net/p0/phys_port_name"])
	}
	if _, ok := Lookup("cx7"); ok {
		t.Error("Lookup(cx7) found a kind")
	}
}

// The lab tree of a card with SFs and a bond: the SF netdev's device link
// and the bond's adjacency links resolve from /sys/devices/virtual/net/
// <name>, where the lab binds every card netdev; the bond's attributes and
// each slave's bonding_slave/ are the card's.
func TestLabTreeSFsAndBond(t *testing.T) {
	c, _ := Lookup("bf2-dpu")
	dir := t.TempDir()
	if err := c.Write(dir, true); err != nil {
		t.Fatal(err)
	}
	got := snapshot(t, dir)
	for p, want := range map[string]string{
		"sys/devices/" + bfSF0 + "/net/enp3s0f0s0/device":           "link -> ../../../" + bfSF0,
		"sys/devices/" + bfSF0 + "/net/enp3s0f0s0/phys_port_name":   "file: p0\n",
		"sys/devices/" + bfSF0 + "/sfnum":                           "file: 0\n",
		"sys/bus/auxiliary/devices/mlx5_core.sf.2":                  "link -> ../../../devices/" + bfSF0,
		"sys/devices/" + bfP0 + "/net/p0/master":                    "link -> ../bond0",
		"sys/devices/" + bfP1 + "/net/p1/upper_bond0":               "link -> ../bond0",
		"sys/devices/" + bfP1 + "/net/p1/bonding_slave/perm_hwaddr": "file: 0c:42:a1:5e:1d:cd\n",
		"sys/devices/virtual/net/bond0/lower_p1":                    "link -> ../p1",
		"sys/devices/virtual/net/bond0/bonding/slaves":              "file: p0 p1\n",
		"sys/devices/virtual/net/bond0/bonding/mode":                "file: 802.3ad 4\n",
	} {
		if got[p] != want {
			t.Errorf("%s: %q, want %q", p, got[p], want)
		}
	}
	if _, ok := got["sys/class/net/bonding_masters"]; ok {
		t.Error("lab tree has class/net/bonding_masters (the lab's /sys/class/net is live)")
	}
	if n, _ := c.NetdevByName("p1"); !n.AdminUp() || n.Flags != FlagsSlave {
		t.Errorf("p1 %+v: a bond slave is admin up", n)
	}
	if ib, ok := c.PortOf("enp3s0f0s0"); !ok || c.PortDir("/r", ib) != "/r/sys/devices/"+bfSF0+"/infiniband/mlx5_2/ports/1" {
		t.Errorf("SF port %+v %v", ib, ok)
	}
}

// TestHostCards: the bf2-dpu lab's host side, written as a fixture, is
// exactly testdata/hosts/bf2-host; every DPU kind has a host whose joins
// name the Arm's host-PF representors, tmfifo_net0 and the uplinks, each
// to a netdev of that machine; Linked gives the lab's host link on every
// admin-up port and leaves the fixture card as it was.
func TestHostCards(t *testing.T) {
	for _, h := range HostKinds() {
		if h.Fixture == "" {
			continue
		}
		dir := t.TempDir()
		if err := h.Write(dir, false); err != nil {
			t.Fatal(err)
		}
		want := snapshot(t, filepath.Join("../../testdata/hosts", h.Fixture))
		if d := diff(want, snapshot(t, dir)); len(d) > 0 || len(want) < 50 {
			t.Fatalf("%s differs from testdata/hosts/%s (%d entries):\n%s", h.Kind, h.Fixture, len(want), strings.Join(d, "\n"))
		}
	}
	for _, kind := range []string{"bf2-dpu", "bf3-dpu"} {
		m, ok := MachinesOf(kind)
		arm, _ := Lookup(kind)
		if !ok {
			t.Fatalf("MachinesOf(%s): none", kind)
		}
		var rshim int
		for _, f := range m.Host.Fns {
			if f.Class == "0x080100" && f.NoDriver {
				rshim++
			}
		}
		if rshim != 1 || len(m.Host.Fns) != 3 {
			t.Errorf("%s host: functions %+v, want two PFs and one RShim function (class 0x080100, no driver)", kind, m.Host.Fns)
		}
		want := map[string]string{"pf0hpf": m.Host.Netdevs[0].Name, "pf1hpf": m.Host.Netdevs[1].Name, "tmfifo_net0": "tmfifo_net0", "p0": "p0", "p1": "p1", "oob_net0": PeerMgmt}
		for _, j := range append(append([]Join(nil), m.HostJoins...), m.PeerJoins...) {
			if _, ok := arm.NetdevByName(j.Arm); !ok || want[j.Arm] != j.Far {
				t.Errorf("%s: join %+v (want far end %q, Arm netdev on the card: %v)", kind, j, want[j.Arm], ok)
			}
			delete(want, j.Arm)
		}
		if len(want) > 0 {
			t.Errorf("%s: no join for %v", kind, want)
		}
		for _, j := range m.HostJoins {
			if _, ok := m.Host.NetdevByName(j.Far); !ok {
				t.Errorf("%s: host has no netdev %s", kind, j.Far)
			}
		}
		for _, n := range m.Host.Linked().Netdevs {
			if ib, ok := m.Host.Linked().PortOf(n.Name); n.Carrier != "1" || n.Speed == "-1" || ok && ib.State != StateActive {
				t.Errorf("%s host in a lab: %s carrier %s speed %s rdma %+v", kind, n.Name, n.Carrier, n.Speed, ib)
			}
		}
	}
	if h, _ := MachinesOf("bf2-dpu"); h.Host.Netdevs[1].Carrier != "0" {
		t.Error("Linked changed the fixture card")
	}
	if _, ok := MachinesOf("cx6dx-host"); ok {
		t.Error("cx6dx-host has a host and peer: it is a host card")
	}
}
