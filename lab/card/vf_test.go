package card

import (
	"os"
	"path/filepath"
	"testing"
)

// VF addresses as the PCI core computes them from sriov_offset/_stride.
func TestVFBDF(t *testing.T) {
	cx, _ := Lookup("cx6dx-host")
	bf, _ := Lookup("bf2-dpu")
	for _, tc := range []struct {
		pf   Fn
		i    int
		want string
	}{
		{cx.Fns[0], 0, "0000:3b:00.2"}, {cx.Fns[0], 5, "0000:3b:00.7"}, {cx.Fns[0], 6, "0000:3b:01.0"},
		{cx.Fns[1], 0, "0000:3b:01.2"}, {bf.Fns[0], 0, "0000:03:00.2"}, {bf.Fns[1], 126, "0000:03:1f.7"},
	} {
		if got, err := VFBDF(tc.pf, tc.i); err != nil || got != tc.want {
			t.Errorf("VF %d of %s: %s %v, want %s", tc.i, tc.pf.BDF, got, err, tc.want)
		}
	}
}

// MakeVF gives the card table's own VFs back as the table has them, and
// names new ones as NVIDIA's udev helper does; WriteVF of the table's VFs
// renders what Write did, RemoveVF takes it away.
func TestMakeWriteRemoveVF(t *testing.T) {
	c, _ := Lookup("cx6dx-host")
	v, err := c.MakeVF(c.Fns[0], 1, false)
	if err != nil || v.Netdev.Name != "enp59s0f0v1" || v.Netdev.MAC != "6e:1c:25:90:4b:11" || len(v.IB) != 1 || v.IB[0].Name != "mlx5_3" || v.Rep != nil {
		t.Fatalf("table VF: %+v %v", v, err)
	}
	v, err = c.MakeVF(c.Fns[0], 2, true)
	if err != nil || v.Rep == nil || v.Fn.BDF != "0000:3b:00.4" || v.Fn.Device != "0x101e" || v.Netdev.Name != "enp59s0f0v2" || v.Netdev.MAC != "02:15:3b:00:04:00" || v.Rep.MAC != "02:15:3b:00:04:01" ||
		v.Rep.Name != "enp59s0f0_2" || v.Rep.PPN != "pf0vf2" || v.Rep.SWID != "a6c40f0003a14210" || v.Rep.Parent != c.Fns[0].Path {
		t.Fatalf("new VF: %+v rep %+v %v", v, v.Rep, err)
	}
	bf, _ := Lookup("bf2-dpu")
	if w, err := bf.MakeVF(bf.Fns[1], 0, true); err != nil || w.Netdev.Name != "enp3s0f1v0" || w.Rep.Name != "pf1vf0" || w.Fn.BDF != "0000:03:10.1" {
		t.Fatalf("BlueField Arm VF: %+v rep %+v %v", w, w.Rep, err)
	}
	// bf2-dpu's table has the host's VF representors pf0vf0, pf0vf1: the Arm's VF 0 is pf0vf2
	if w, err := bf.MakeVF(bf.Fns[0], 0, true); err != nil || w.Rep.Name != "pf0vf2" || w.Rep.PPN != "pf0vf2" {
		t.Fatalf("BlueField Arm VF after host VF representors: rep %+v %v", w.Rep, err)
	}
	whole, part := t.TempDir(), t.TempDir()
	if err := c.Write(whole, true); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		v, _ := c.MakeVF(c.Fns[0], i, false)
		if err := c.WriteVF(part, v, true); err != nil {
			t.Fatal(err)
		}
	}
	err = filepath.Walk(part, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(part, p)
		a, aerr := os.ReadFile(p)
		b, berr := os.ReadFile(filepath.Join(whole, rel))
		la, _ := os.Readlink(p)
		lb, _ := os.Readlink(filepath.Join(whole, rel))
		if string(a) != string(b) || (aerr == nil) != (berr == nil) || la != lb {
			t.Errorf("%s: WriteVF %q (%s), Write %q (%s)", rel, a, la, b, lb)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	v, _ = c.MakeVF(c.Fns[0], 1, false)
	if err := c.RemoveVF(whole, v); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"sys/devices/" + v.Fn.Path, "sys/devices/" + c.Fns[0].Path + "/virtfn1", "sys/bus/pci/devices/0000:3b:00.3", "sys/class/infiniband/mlx5_3"} {
		if _, err := os.Lstat(filepath.Join(whole, p)); err == nil {
			t.Errorf("%s left after RemoveVF", p)
		}
	}
	if _, err := os.Lstat(filepath.Join(whole, "sys/devices/"+c.Fns[0].Path+"/virtfn0")); err != nil {
		t.Errorf("VF 0 went with VF 1: %v", err)
	}
}
