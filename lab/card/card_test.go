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
