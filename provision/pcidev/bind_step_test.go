package pcidev

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"rig/internal/host"
	"rig/internal/testutil/fakeexec"
	"rig/playbooks"
	"rig/provision"
	"rig/provision/steptest"
)

// bindRoot is a host root with a virtio-net function 0000:00:04.0 on
// virtio-pci whose netdev ens5 sits below its virtio0 device (the kernel's
// layout: /sys/class/net/ens5 -> ../../devices/pci0000:00/0000:00:04.0/virtio0/net/ens5),
// an IOMMU group, and an mlx5 function 0000:03:00.0 with netdev p0.
func bindRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	mk := func(p, content string) {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ln := func(target, p string) {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, full); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []struct{ bdf, vendor, driver string }{{"0000:00:04.0", "0x1af4", "virtio-pci"}, {"0000:03:00.0", "0x15b3", "mlx5_core"}} {
		dev := "sys/devices/pci0000:00/" + f.bdf
		mk(dev+"/vendor", f.vendor+"\n")
		mk(dev+"/driver_override", "(null)\n")
		mk("sys/bus/pci/drivers/"+f.driver+"/bind", "")
		mk("sys/bus/pci/drivers/"+f.driver+"/unbind", "")
		ln("../../../bus/pci/drivers/"+f.driver, dev+"/driver")
		ln("../../../devices/pci0000:00/"+f.bdf, "sys/bus/pci/devices/"+f.bdf)
	}
	mk("sys/kernel/iommu_groups/4/type", "identity\n")
	ln("../../../kernel/iommu_groups/4", "sys/devices/pci0000:00/0000:00:04.0/iommu_group")
	mk("sys/devices/pci0000:00/0000:00:04.0/virtio0/net/ens5/address", "52:54:00:12:34:56\n")
	ln("../../../virtio0", "sys/devices/pci0000:00/0000:00:04.0/virtio0/net/ens5/device")
	ln("../../devices/pci0000:00/0000:00:04.0/virtio0/net/ens5", "sys/class/net/ens5")
	mk("sys/devices/pci0000:00/0000:03:00.0/net/p0/address", "0c:42:a1:00:00:01\n")
	ln("../../../0000:03:00.0", "sys/devices/pci0000:00/0000:03:00.0/net/p0/device")
	ln("../../devices/pci0000:00/0000:03:00.0/net/p0", "sys/class/net/p0")
	mk("proc/net/route", "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n")
	return root
}

// fakeKernel reacts to the bind step's sysfs writes as the PCI core does:
// unbind drops the driver link, bind to vfio-pci links it and the virtio
// netdev disappears. It records every write.
type fakeKernel struct {
	t      *testing.T
	root   string
	writes []string
}

func (k *fakeKernel) write(p string, data []byte) error {
	k.writes = append(k.writes, p+" <- "+string(data))
	full := filepath.Join(k.root, p)
	bdf := string(data)
	dev := filepath.Join(k.root, "sys/devices/pci0000:00", bdf)
	switch {
	case strings.HasSuffix(p, "/driver_override"):
		if strings.TrimSpace(string(data)) == "" {
			data = []byte("(null)\n") // cleared: the kernel shows (null)
		}
		return os.WriteFile(full, data, 0o644)
	case strings.HasSuffix(p, "/driver/unbind"):
		os.RemoveAll(filepath.Join(dev, "virtio0/net"))
		os.Remove(filepath.Join(k.root, "sys/class/net/ens5"))
		return os.Remove(filepath.Join(k.root, "sys/devices/pci0000:00", filepath.Base(filepath.Dir(filepath.Dir(p))), "driver"))
	case strings.HasSuffix(p, "/bind"):
		drv := filepath.Base(filepath.Dir(p))
		if drv == "virtio-pci" { // virtio-net probes and makes its netdev again
			nd := filepath.Join(dev, "virtio0/net/ens5")
			os.MkdirAll(nd, 0o755)
			os.WriteFile(filepath.Join(nd, "address"), []byte("52:54:00:12:34:56\n"), 0o644)
			os.Symlink("../../../virtio0", filepath.Join(nd, "device"))
			os.Symlink("../../devices/pci0000:00/0000:00:04.0/virtio0/net/ens5", filepath.Join(k.root, "sys/class/net/ens5"))
		}
		return os.Symlink("../../../bus/pci/drivers/"+drv, filepath.Join(dev, "driver"))
	}
	k.t.Fatalf("unexpected write %s", p)
	return nil
}

func bindStepFor(t *testing.T, root string, spec *playbooks.BindSpec, fixture string) (*bindStep, *fakeKernel, *fakeexec.Recorder) {
	t.Helper()
	rec := &fakeexec.Recorder{}
	rec.Answer = func(name string, args []string) ([]byte, error, bool) {
		if name == "modprobe" && reflect.DeepEqual(args, []string{"vfio_pci"}) {
			for _, f := range []string{"bind", "unbind"} {
				p := filepath.Join(root, "sys/bus/pci/drivers/vfio-pci", f)
				os.MkdirAll(filepath.Dir(p), 0o755)
				os.WriteFile(p, nil, 0o200)
			}
			return nil, nil, true
		}
		return nil, nil, false
	}
	h := &host.Host{Root: root, Exec: rec.Exec}
	st, err := NewBindStep(&provision.Env{Host: h, FixtureRoot: fixture}, spec)
	if err != nil {
		t.Fatal(err)
	}
	k := &fakeKernel{t: t, root: root}
	bs := st.(*bindStep)
	bs.write = k.write
	return bs, k, rec
}

// TestBindApplyTwice: by netdev; the first apply loads vfio_pci and moves
// the function (override, unbind, bind), recording virtio-pci and ens5 in
// the state file; the second finds the function by the recorded netdev
// name (gone from /sys/class/net) and writes nothing. p0 (mlx5) is left
// alone, said in a note.
func TestBindApplyTwice(t *testing.T) {
	root := bindRoot(t)
	spec := &playbooks.BindSpec{Devices: []string{"ens5", "p0"}}
	s, k, rec := bindStepFor(t, root, spec, "")
	res := steptest.RunStep(t, s)
	if res.Status != provision.StatusChanged {
		t.Fatalf("first apply: %s %s", res.Status, res.Error)
	}
	wantWrites := []string{
		"/sys/bus/pci/devices/0000:00:04.0/driver_override <- vfio-pci",
		"/sys/bus/pci/devices/0000:00:04.0/driver/unbind <- 0000:00:04.0",
		"/sys/bus/pci/drivers/vfio-pci/bind <- 0000:00:04.0",
	}
	if !reflect.DeepEqual(k.writes, wantWrites) {
		t.Fatalf("writes\n%q\nwant\n%q", k.writes, wantWrites)
	}
	if got := rec.Lines(); !reflect.DeepEqual(got, []string{"modprobe vfio_pci"}) {
		t.Fatalf("ran %q", got)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "pci 0000:03:00.0 (p0): Mellanox (0x15b3) left on mlx5_core: mlx5 is bifurcated") {
		t.Errorf("notes %q", res.Notes)
	}
	if _, err := os.Stat(s.state.Path); err != nil {
		t.Fatal(err)
	}
	st, err := provision.LoadState(s.state)
	if err != nil {
		t.Fatal(err)
	}
	if want := []provision.BoundDevice{{BDF: "0000:00:04.0", Netdev: "ens5", Original: "virtio-pci", Driver: "vfio-pci"}}; !reflect.DeepEqual(st.Bound, want) {
		t.Fatalf("state %+v", st.Bound)
	}

	s2, k2, rec2 := bindStepFor(t, root, spec, "")
	res = steptest.RunStep(t, s2)
	if res.Status != provision.StatusOK || len(k2.writes) != 0 || len(rec2.Lines()) != 0 {
		t.Fatalf("second apply: %s changes %v writes %q ran %q err %s", res.Status, res.Changes, k2.writes, rec2.Lines(), res.Error)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "pci 0000:00:04.0 (ens5): on vfio-pci") {
		t.Errorf("notes %q", res.Notes)
	}
}

// TestBindRefusals: each refusal comes at check, before any write.
func TestBindRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		prep func(root string)
		spec playbooks.BindSpec
		want string
	}{
		{"routes", func(root string) {
			os.WriteFile(filepath.Join(root, "proc/net/route"), []byte(route4Header+"ens5\t0000000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n"), 0o644)
		}, playbooks.BindSpec{Devices: []string{"ens5"}}, "ens5 carries routes (10.0.0.0/24)"},
		{"no iommu", func(root string) {
			os.Remove(filepath.Join(root, "sys/devices/pci0000:00/0000:00:04.0/iommu_group"))
		}, playbooks.BindSpec{Devices: []string{"0000:00:04.0"}}, "no IOMMU group"},
		{"no netdev", func(string) {}, playbooks.BindSpec{Devices: []string{"ens9"}}, "no netdev ens9 on this host"},
		{"no function", func(string) {}, playbooks.BindSpec{Devices: []string{"0000:00:09.0"}}, "no PCI function 0000:00:09.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := bindRoot(t)
			tc.prep(root)
			s, k, rec := bindStepFor(t, root, &tc.spec, "")
			res := steptest.RunStep(t, s)
			if res.Status != provision.StatusFailed || !strings.Contains(res.Error, tc.want) {
				t.Fatalf("status %s error %q, want %q", res.Status, res.Error, tc.want)
			}
			if len(k.writes) != 0 || len(rec.Lines()) != 0 {
				t.Fatalf("wrote %q ran %q", k.writes, rec.Lines())
			}
		})
	}
}

// TestBindForceAndNoIOMMUMode: force binds a routed netdev; vfio's unsafe
// no-IOMMU mode stands in for a group; uio_pci_generic needs none.
func TestBindForceAndNoIOMMUMode(t *testing.T) {
	root := bindRoot(t)
	os.WriteFile(filepath.Join(root, "proc/net/route"), []byte(route4Header+defaultRoute4("ens5")), 0o644)
	os.Remove(filepath.Join(root, "sys/devices/pci0000:00/0000:00:04.0/iommu_group"))
	os.MkdirAll(filepath.Join(root, "sys/module/vfio/parameters"), 0o755)
	os.WriteFile(filepath.Join(root, "sys/module/vfio/parameters/enable_unsafe_noiommu_mode"), []byte("Y\n"), 0o644)
	s, _, _ := bindStepFor(t, root, &playbooks.BindSpec{Devices: []string{"ens5"}, Force: true}, "")
	if plan, err := s.Check(t.Context()); err != nil || !strings.Contains(strings.Join(plan.Notes, "\n"), "pci 0000:00:04.0 (ens5): force: true binds it although ens5 carries the default route (0.0.0.0/0)") {
		t.Fatalf("plan with force: %v notes %q", err, plan.Notes)
	}
	if res := steptest.RunStep(t, s); res.Status != provision.StatusChanged {
		t.Fatalf("%s %s", res.Status, res.Error)
	}
	root = bindRoot(t)
	os.Remove(filepath.Join(root, "sys/devices/pci0000:00/0000:00:04.0/iommu_group"))
	os.MkdirAll(filepath.Join(root, "sys/bus/pci/drivers/uio_pci_generic"), 0o755)
	s, k, _ := bindStepFor(t, root, &playbooks.BindSpec{Driver: "uio_pci_generic", Devices: []string{"0000:00:04.0"}}, "")
	if res := steptest.RunStep(t, s); res.Status != provision.StatusChanged || !strings.HasSuffix(k.writes[2], "drivers/uio_pci_generic/bind <- 0000:00:04.0") {
		t.Fatalf("%s %s %q", res.Status, res.Error, k.writes)
	}
}

// TestBindFixtureRootRefusesModprobe: a module load would land on this
// machine, so under --root the apply refuses before any write.
func TestBindFixtureRootRefusesModprobe(t *testing.T) {
	root := bindRoot(t)
	s, k, rec := bindStepFor(t, root, &playbooks.BindSpec{Devices: []string{"ens5"}}, root)
	res := steptest.RunStep(t, s)
	if res.Status != provision.StatusFailed || !strings.Contains(res.Error, "refusing to modprobe vfio_pci") || len(k.writes) != 0 || len(rec.Lines()) != 0 {
		t.Fatalf("%s %q writes %q ran %q", res.Status, res.Error, k.writes, rec.Lines())
	}
}

// bindSnapshot is the function's driver, override and netdev.
func bindSnapshot(t *testing.T, root string) string {
	t.Helper()
	dev := filepath.Join(root, "sys/devices/pci0000:00/0000:00:04.0")
	drv, _ := os.Readlink(filepath.Join(dev, "driver"))
	ov, _ := os.ReadFile(filepath.Join(dev, "driver_override"))
	_, err := os.Lstat(filepath.Join(root, "sys/class/net/ens5"))
	return fmt.Sprintf("driver=%s override=%q netdev=%v", drv, ov, err == nil)
}

// TestBindDown: down after up gives 0000:00:04.0 back to virtio-pci (its
// netdev ens5 comes back), clears the override and forgets the record; a
// second down writes nothing. p0 (mlx5) was never bound: left alone.
func TestBindDown(t *testing.T) {
	root := bindRoot(t)
	spec := &playbooks.BindSpec{Devices: []string{"ens5", "p0"}}
	before := bindSnapshot(t, root)
	s, _, _ := bindStepFor(t, root, spec, "")
	if res := steptest.RunStep(t, s); res.Status != provision.StatusChanged {
		t.Fatalf("up: %s %s", res.Status, res.Error)
	}
	if bindSnapshot(t, root) == before {
		t.Fatal("up changed nothing")
	}
	s, k, _ := bindStepFor(t, root, spec, "")
	res := steptest.RunStep(t, s.Down(provision.DownOptions{}))
	if res.Status != provision.StatusChanged {
		t.Fatalf("down: %s %s", res.Status, res.Error)
	}
	want := []string{
		"/sys/bus/pci/devices/0000:00:04.0/driver_override <- \n",
		"/sys/bus/pci/devices/0000:00:04.0/driver/unbind <- 0000:00:04.0",
		"/sys/bus/pci/drivers/virtio-pci/bind <- 0000:00:04.0",
	}
	if !reflect.DeepEqual(k.writes, want) {
		t.Fatalf("down writes %q", k.writes)
	}
	if got := bindSnapshot(t, root); got != before {
		t.Fatalf("after down %s, before up %s", got, before)
	}
	s, k, _ = bindStepFor(t, root, spec, "")
	if res := steptest.RunStep(t, s.Down(provision.DownOptions{})); res.Status != provision.StatusOK || len(k.writes) != 0 {
		t.Fatalf("second down: %s writes %q notes %q", res.Status, k.writes, res.Notes)
	}
}

// A ConnectX/BlueField function the playbook names that someone bound to
// a UIO driver is an error telling to bind it back to mlx5_core (nothing
// written); on vfio-pci (a VF passed to a VM) it is a note saying the PMD
// here cannot drive it; on mlx5_core it is left alone.
func TestBindMlx5OnUIO(t *testing.T) {
	for _, tc := range []struct{ driver, wantErr, wantNote string }{
		{"uio_pci_generic", "bound to the UIO driver uio_pci_generic", ""},
		{"igb_uio", "bound to the UIO driver igb_uio", ""},
		{"vfio-pci", "", "Mellanox (0x15b3) on vfio-pci: passed through to a VM, or a mistake"},
		{"mlx5_core", "", "Mellanox (0x15b3) left on mlx5_core"},
	} {
		t.Run(tc.driver, func(t *testing.T) {
			root := bindRoot(t)
			dev := filepath.Join(root, "sys/devices/pci0000:00/0000:03:00.0")
			if err := os.Remove(dev + "/driver"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("../../../bus/pci/drivers/"+tc.driver, dev+"/driver"); err != nil {
				t.Fatal(err)
			}
			s, k, rec := bindStepFor(t, root, &playbooks.BindSpec{Devices: []string{"0000:03:00.0"}}, "")
			res := steptest.RunStep(t, s)
			if len(k.writes) != 0 || len(rec.Lines()) != 0 {
				t.Fatalf("wrote %q ran %q", k.writes, rec.Lines())
			}
			if tc.wantErr != "" {
				if res.Status != provision.StatusFailed || !strings.Contains(res.Error, tc.wantErr) || !strings.Contains(res.Error, "bind it back to mlx5_core") ||
					!strings.Contains(res.Error, "echo 0000:03:00.0 > /sys/bus/pci/drivers/"+tc.driver+"/unbind") {
					t.Fatalf("status %s error %q", res.Status, res.Error)
				}
				return
			}
			if res.Status != provision.StatusOK || !strings.Contains(strings.Join(res.Notes, "\n"), tc.wantNote) {
				t.Fatalf("status %s %s notes %q", res.Status, res.Error, res.Notes)
			}
		})
	}
}
