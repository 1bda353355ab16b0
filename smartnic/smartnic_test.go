package smartnic

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"rig/internal/host"
)

const hostsDir = "../testdata/hosts/"

func scanFixture(t *testing.T, name string) *Inventory {
	t.Helper()
	inv, err := Scan(&host.Host{Root: hostsDir + name, Exec: noExec(t)})
	if err != nil {
		t.Fatalf("Scan(%s): %v", name, err)
	}
	return inv
}

// noExec fails the test if a fixture scan runs any tool.
func noExec(t *testing.T) host.ExecFunc {
	return func(ctx context.Context, name string, args ...string) ([]byte, error) {
		t.Errorf("unexpected exec %s %v under a fixture root", name, args)
		return nil, os.ErrInvalid
	}
}

type wantFn struct {
	bdf, dev, model, gen, kind, mst, mstType, eswitch string
	numa, rev                                         int
	netdevs                                           map[string]string // name -> role
	rdma                                              []string          // "mlx5_0/1 4 5 p0"
}

func checkFns(t *testing.T, inv *Inventory, want []wantFn) {
	t.Helper()
	if len(inv.Functions) != len(want) {
		t.Fatalf("got %d functions, want %d: %+v", len(inv.Functions), len(want), inv.Functions)
	}
	for i, w := range want {
		f := inv.Functions[i]
		got := wantFn{f.BDF, f.DeviceID, f.Model, f.Generation, f.Kind, f.MSTName, f.MSTType, f.EswitchMode, f.NUMANode, f.Revision, map[string]string{}, nil}
		for _, n := range f.Netdevs {
			got.netdevs[n.Name] = n.Role
		}
		for _, d := range f.RDMA {
			for _, p := range d.Ports {
				got.rdma = append(got.rdma, strings.Join([]string{p.String(), itoa(p.State.Num), itoa(p.PhysState.Num), p.Netdev}, " "))
			}
		}
		if len(w.netdevs) == 0 {
			w.netdevs = map[string]string{}
		}
		if !reflect.DeepEqual(got, w) {
			t.Errorf("function %d:\n got %+v\nwant %+v", i, got, w)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestScanBF2DPUArm(t *testing.T) {
	inv := scanFixture(t, "bf2-dpu-arm")
	if inv.Side != SideDPUArm || inv.SchemaVersion != SchemaVersion {
		t.Errorf("side %q schema %q", inv.Side, inv.SchemaVersion)
	}
	checkFns(t, inv, []wantFn{
		{"0000:03:00.0", "a2d6", "BlueField-2", "BlueField-2", FunctionNIC, "mt41686_pciconf0", "BlueField2", "switchdev", -1, 1,
			map[string]string{"p0": RoleUplink, "pf0hpf": RoleHostPFRep, "en3f0pf0sf0": RoleSFRep, "pf0vf0": RoleVFRep, "pf0vf1": RoleVFRep},
			[]string{"mlx5_0/1 4 5 p0"}},
		{"0000:03:00.1", "a2d6", "BlueField-2", "BlueField-2", FunctionNIC, "mt41686_pciconf0.1", "BlueField2", "switchdev", -1, 1,
			map[string]string{"p1": RoleUplink, "pf1hpf": RoleHostPFRep, "en3f1pf1sf0": RoleSFRep}, []string{"mlx5_1/1 4 5 p1"}},
	})
	var plat []string
	for _, n := range inv.Netdevs {
		plat = append(plat, n.Name+":"+n.Role+":"+n.MAC)
	}
	if want := []string{"oob_net0:oob:0c:42:a1:5e:1d:d0", "tmfifo_net0:tmfifo:00:1a:ca:ff:ff:01"}; !reflect.DeepEqual(plat, want) {
		t.Errorf("platform netdevs %v, want %v", plat, want)
	}
	p0 := netdevNamed(t, inv.Functions[0].Netdevs, "p0")
	if p0.MAC != "0c:42:a1:5e:1d:cc" || p0.OperState != "up" || !p0.AdminUp || p0.SpeedMbps != 25000 || p0.PhysPortName != "p0" ||
		p0.Master != "bond0" || p0.Device != "0000:03:00.0" {
		t.Errorf("p0 = %+v", p0)
	}
	if rep := netdevNamed(t, inv.Functions[0].Netdevs, "pf0hpf"); rep.SpeedMbps != -1 || rep.Master != "" {
		t.Errorf("pf0hpf speed %d, master %q, want -1 (unreadable) and none", rep.SpeedMbps, rep.Master)
	}
	l := inv.Functions[0].Link
	if l == nil || l.Current.GTs != 16 || l.Current.Gen != 4 || l.Width != 16 || l.Degraded {
		t.Errorf("pcie link %+v", l)
	}
	bf, err := inv.FindBlueField("")
	if err != nil || bf.BDF != "0000:03:00.0" || bf.Generation != "BlueField-2" || bf.MSTName != "mt41686_pciconf0" {
		t.Errorf("FindBlueField = %+v, %v", bf, err)
	}
	if bf, err := inv.FindBlueField("03:00.1"); err != nil || bf.BDF != "0000:03:00.1" {
		t.Errorf("FindBlueField(03:00.1) = %+v, %v", bf, err)
	}
	if _, err := inv.FindBlueField("0000:04:00.0"); err == nil || !strings.Contains(err.Error(), "no Mellanox PCI function 0000:04:00.0") {
		t.Errorf("FindBlueField(absent) err = %v", err)
	}
}

func TestScanBF2Host(t *testing.T) {
	inv := scanFixture(t, "bf2-host")
	if inv.Side != SideHost {
		t.Errorf("side %q, want host", inv.Side)
	}
	checkFns(t, inv, []wantFn{
		{"0000:e1:00.0", "a2d6", "BlueField-2", "BlueField-2", FunctionNIC, "mt41686_pciconf0", "BlueField2", "legacy", 1, 1,
			map[string]string{"enp225s0f0np0": RoleHostPF}, []string{"mlx5_0/1 4 5 enp225s0f0np0"}},
		{"0000:e1:00.1", "a2d6", "BlueField-2", "BlueField-2", FunctionNIC, "mt41686_pciconf0.1", "BlueField2", "legacy", 1, 1,
			map[string]string{"enp225s0f1np1": RoleHostPF}, []string{"mlx5_1/1 1 2 enp225s0f1np1"}},
		{"0000:e1:00.2", "c2d3", "BlueField-2 RShim", "BlueField-2", FunctionRShim, "", "", "", 1, 1, nil, nil},
	})
	if got := inv.BlueFields(); len(got) != 2 {
		t.Errorf("BlueFields() = %d functions, want 2 (the RShim function is not one)", len(got))
	}
	if got := inv.BlueFieldDevices(); len(got) != 1 || got[0].BDF != "0000:e1:00.0" || got[0].Generation != "BlueField-2" {
		t.Errorf("BlueFieldDevices() = %+v, want function 0 of the one card", got)
	}
	if len(inv.Netdevs) != 1 || inv.Netdevs[0].Role != RoleTmfifo {
		t.Errorf("host netdevs %+v, want tmfifo_net0 only", inv.Netdevs)
	}
}

func TestScanBF3DPUArm(t *testing.T) {
	inv := scanFixture(t, "bf3-dpu-arm")
	checkFns(t, inv, []wantFn{
		{"0000:03:00.0", "a2dc", "BlueField-3", "BlueField-3", FunctionNIC, "mt41692_pciconf0", "BlueField3", "switchdev", -1, 1,
			map[string]string{"p0": RoleUplink, "pf0hpf": RoleHostPFRep, "en3f0pf0sf0": RoleSFRep}, []string{"mlx5_0/1 4 5 p0"}},
		{"0000:03:00.1", "a2dc", "BlueField-3", "BlueField-3", FunctionNIC, "mt41692_pciconf0.1", "BlueField3", "switchdev", -1, 1,
			map[string]string{"p1": RoleUplink, "pf1hpf": RoleHostPFRep, "en3f1pf1sf0": RoleSFRep}, []string{"mlx5_1/1 4 5 p1"}},
	})
	if inv.Side != SideDPUArm {
		t.Errorf("side %q", inv.Side)
	}
	// this fixture has the newer kernel's controller-prefixed host-PF representors
	if rep := netdevNamed(t, inv.Functions[1].Netdevs, "pf1hpf"); rep.PhysPortName != "c1pf1" {
		t.Errorf("pf1hpf phys_port_name %q, want c1pf1", rep.PhysPortName)
	}
	if len(inv.Bonds) != 0 {
		t.Errorf("bonds %+v, want none", inv.Bonds)
	}
}

func netdevNamed(t *testing.T, nds []Netdev, name string) Netdev {
	t.Helper()
	for _, n := range nds {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("no netdev %s in %+v", name, nds)
	return Netdev{}
}

func TestScanCX6DxHost(t *testing.T) {
	inv := scanFixture(t, "cx6dx-host")
	checkFns(t, inv, []wantFn{
		{"0000:3b:00.0", "101d", "ConnectX-6 Dx", "ConnectX-6 Dx", FunctionNIC, "mt4125_pciconf0", "ConnectX6DX", "legacy", 0, 0,
			map[string]string{"enp59s0f0np0": RoleUplink}, []string{"mlx5_0/1 4 5 enp59s0f0np0"}},
		{"0000:3b:00.1", "101d", "ConnectX-6 Dx", "ConnectX-6 Dx", FunctionNIC, "mt4125_pciconf0.1", "ConnectX6DX", "legacy", 0, 0,
			map[string]string{"enp59s0f1np1": RoleUplink}, []string{"mlx5_1/1 1 3 enp59s0f1np1"}},
		{"0000:3b:00.2", "101e", "ConnectX Family mlx5Gen VF", "ConnectX-6 Dx", FunctionVF, "", "", "", 0, 0,
			map[string]string{"enp59s0f0v0": RoleVF}, []string{"mlx5_2/1 4 5 enp59s0f0v0"}},
		{"0000:3b:00.3", "101e", "ConnectX Family mlx5Gen VF", "ConnectX-6 Dx", FunctionVF, "", "", "", 0, 0,
			map[string]string{"enp59s0f0v1": RoleVF}, []string{"mlx5_3/1 4 5 enp59s0f0v1"}},
	})
	pf := inv.Functions[0]
	if pf.SRIOV == nil || pf.SRIOV.NumVFs != 2 || pf.SRIOV.TotalVFs != 8 || !reflect.DeepEqual(pf.SRIOV.VFs, []string{"0000:3b:00.2", "0000:3b:00.3"}) {
		t.Errorf("sriov %+v", pf.SRIOV)
	}
	if l := pf.Link; l == nil || !l.Degraded || l.Current.GTs != 8 || l.Max.GTs != 16 {
		t.Errorf("link %+v, want degraded 8 of 16 GT/s", l)
	}
	if inv.Functions[2].PhysFn != "0000:3b:00.0" {
		t.Errorf("VF physfn %q", inv.Functions[2].PhysFn)
	}
	if inv.Functions[1].Netdevs[0].AdminUp {
		t.Error("enp59s0f1np1 is admin-down in the fixture (flags 0x1002)")
	}
	if _, err := inv.FindBlueField(""); err == nil || !strings.Contains(err.Error(), "no BlueField") {
		t.Errorf("FindBlueField on a ConnectX host: %v", err)
	}
	if _, err := inv.FindBlueField("3b:00.0"); err == nil || !strings.Contains(err.Error(), "not a BlueField") {
		t.Errorf("FindBlueField(CX6Dx): %v", err)
	}
}

func TestFindBlueFieldTwoCards(t *testing.T) {
	inv := &Inventory{Functions: []Function{
		{BDF: "0000:03:00.0", DeviceID: "a2d6", Model: "BlueField-2", Kind: FunctionNIC},
		{BDF: "0000:03:00.1", DeviceID: "a2d6", Model: "BlueField-2", Kind: FunctionNIC},
		{BDF: "0000:81:00.0", DeviceID: "a2dc", Model: "BlueField-3", Kind: FunctionNIC},
	}}
	assignMSTNames(inv)
	if got := []string{inv.Functions[0].MSTName, inv.Functions[1].MSTName, inv.Functions[2].MSTName}; !reflect.DeepEqual(got, []string{"mt41686_pciconf0", "mt41686_pciconf0.1", "mt41692_pciconf0"}) {
		t.Errorf("mst names %v", got)
	}
	_, err := inv.FindBlueField("")
	if err == nil || !strings.Contains(err.Error(), "2 BlueField devices (0000:03:00.0 (BlueField-2), 0000:81:00.0 (BlueField-3))") {
		t.Errorf("err = %v", err)
	}
	// a BDF is found in any of the forms people type
	for _, bdf := range []string{"0000:81:00.0", "81:00.0", " 81:00.0 "} {
		if f, ok := inv.Function(strings.TrimSpace(bdf)); !ok || f.Model != "BlueField-3" {
			t.Errorf("Function(%q) = %+v, %v", bdf, f, ok)
		}
	}
	for _, bdf := range []string{"0000:81:00.2", "81:00", "net_null0", ""} {
		if f, ok := inv.Function(bdf); ok {
			t.Errorf("Function(%q) = %+v; want none", bdf, f)
		}
	}
	if f, err := inv.FindBlueField("03:00.1"); err != nil || f.BDF != "0000:03:00.1" {
		t.Errorf("FindBlueField(03:00.1) = %+v, %v", f, err)
	}
}

// The BlueField-3 sample of hardware-formats.md §2.2, verbatim. Row 1 must
// match byte for byte; row 2 differs only in NET order (MFT prints readdir
// order, rig a fixed role order).
func TestMSTStatusMatchesSample(t *testing.T) {
	const header = "DEVICE_TYPE             MST                           PCI       RDMA            NET                                     NUMA"
	const row1 = "BlueField3(rev:1)       /dev/mst/mt41692_pciconf0.1   03:00.1   mlx5_1          net-p1,net-pf1hpf,net-en3f1pf1sf0       -1"
	const row2 = "BlueField3(rev:1)       /dev/mst/mt41692_pciconf0     03:00.0   mlx5_0          net-pf0hpf,net-en3f0pf0sf0,net-p0       -1"
	var b strings.Builder
	if err := WriteMSTStatus(&b, MSTModules{}, MSTRows(scanFixture(t, "bf3-dpu-arm"))); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	want := []string{"MST modules:", "------------", "    MST PCI module is not loaded", "    MST PCI configuration module is not loaded",
		"PCI devices:", "------------", header, row1, "", strings.Replace(row2, "net-pf0hpf,net-en3f0pf0sf0,net-p0", "net-p0,net-pf0hpf,net-en3f0pf0sf0", 1), "", ""}
	if !reflect.DeepEqual(lines, want) {
		t.Errorf("mst status:\n%s\nwant:\n%s", b.String(), strings.Join(want, "\n"))
	}
	// ConnectX-5 sample header/row widths: same column starts.
	cx := mstLine(mstWidths, "ConnectX5(rev:0)", "/dev/mst/mt4121_pciconf0.1", "01:00.1", "mlx5_1", "net-redwest", "0")
	if cx != "ConnectX5(rev:0)        /dev/mst/mt4121_pciconf0.1    01:00.1   mlx5_1          net-redwest                             0\n" {
		t.Errorf("CX5 sample row = %q", cx)
	}
}

func TestRDMALinks(t *testing.T) {
	var b strings.Builder
	if err := WriteRDMALinks(&b, RDMALinks(scanFixture(t, "cx6dx-host"))); err != nil {
		t.Fatal(err)
	}
	// iproute2 ends every field, the last one too, with a space
	want := "link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev enp59s0f0np0 \n" +
		"link mlx5_1/1 state DOWN physical_state DISABLED netdev enp59s0f1np1 \n" +
		"link mlx5_2/1 state ACTIVE physical_state LINK_UP netdev enp59s0f0v0 \n" +
		"link mlx5_3/1 state ACTIVE physical_state LINK_UP netdev enp59s0f0v1 \n"
	if b.String() != want {
		t.Errorf("rdma links:\n%s\nwant\n%s", b.String(), want)
	}
}

// copyTree copies a fixture root (symlinks as symlinks) for tests that edit it.
func copyTree(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command("cp", "-a", hostsDir+name, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	return dst
}

// With no compat/devlink/mode file, the mode comes from `devlink dev
// eswitch show` through the exec seam (live systems only).
func TestEswitchModeFromDevlink(t *testing.T) {
	root := copyTree(t, "bf2-dpu-arm")
	matches, _ := filepath.Glob(root + "/sys/devices/pci*/*/*/*/*/net/*/compat")
	if len(matches) != 2 {
		t.Fatalf("want 2 compat dirs in the fixture, found %v", matches)
	}
	for _, m := range matches {
		os.RemoveAll(m)
	}
	var calls []string
	h := &host.Host{Root: root, Exec: func(ctx context.Context, name string, args ...string) ([]byte, error) {
		calls = append(calls, name+" "+strings.Join(args, " "))
		return []byte(args[len(args)-1] + ": mode switchdev inline-mode none encap-mode basic\n"), nil
	}}
	inv, err := scan(context.Background(), h, scanOpts{mapper: rootMapper{h}, devlink: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"devlink dev eswitch show pci/0000:03:00.0", "devlink dev eswitch show pci/0000:03:00.1"}
	if !reflect.DeepEqual(calls, want) {
		t.Errorf("exec calls %q, want %q", calls, want)
	}
	if inv.Functions[0].EswitchMode != "switchdev" {
		t.Errorf("mode %q", inv.Functions[0].EswitchMode)
	}
	// Without devlink permission (fixture default), no exec and no mode.
	inv, err = Scan(&host.Host{Root: root, Exec: noExec(t)})
	if err != nil || inv.Functions[0].EswitchMode != "" {
		t.Errorf("fixture scan without compat file: mode %q err %v", inv.Functions[0].EswitchMode, err)
	}
}

func TestScanBadRoot(t *testing.T) {
	_, err := Scan(&host.Host{Root: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "is sysfs mounted") {
		t.Errorf("err = %v", err)
	}
}

// On the live system Scan goes through rdmamap; this machine may have no
// Mellanox device, but whatever it finds must be vendor 15b3 and sorted.
func TestScanRealRoot(t *testing.T) {
	if _, err := os.Stat("/sys/bus/pci/devices"); err != nil {
		t.Skip("no /sys/bus/pci/devices here")
	}
	inv, err := Scan(host.New("/"))
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range inv.Functions {
		v, _ := os.ReadFile("/sys/bus/pci/devices/" + f.BDF + "/vendor")
		if strings.TrimSpace(string(v)) != "0x15b3" {
			t.Errorf("%s: vendor %q", f.BDF, v)
		}
		if i > 0 && inv.Functions[i-1].BDF >= f.BDF {
			t.Errorf("not sorted at %s", f.BDF)
		}
	}
	t.Logf("live host: %d Mellanox functions, side %s", len(inv.Functions), inv.Side)
}
