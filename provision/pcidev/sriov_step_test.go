package pcidev

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"rig/internal/host"
	"rig/playbooks"
	"rig/provision"
	"rig/provision/steptest"
)

// sriovKernel plays the kernel's part for PF 0000:3b:00.0 of a copy of the
// cx6dx-host fixture: sriov_numvfs creates VF functions (0000:3b:00.2 …)
// with physfn/virtfnN links and netdevs, and in switchdev mode one
// representor per VF on the PF (phys_port_name pf0vfN); a non-zero count
// changes only from 0 (EBUSY, as pci_sriov's sriov_numvfs_store); and it is
// devlink: the eSwitch mode changes only without VFs (older mlx5 kernels).
type sriovKernel struct {
	t      *testing.T
	root   string
	mode   string
	writes []string
	sets   []string
	// devlinkErr, when set, is devlink's answer for every device (ENODEV:
	// no such device here); the mode then lives in the PF netdev's
	// compat/devlink/mode, which write changes (EBUSY with VFs).
	devlinkErr error
	// netdevsAfter > 0: the VF netdevs appear only after that many sleeps
	// of the step's verify (udev); < 0: never.
	netdevsAfter int
	pending      []func()
	slept        time.Duration
}

const sriovCompatMode = "/sys/bus/pci/devices/0000:3b:00.0/net/enp59s0f0np0/compat/devlink/mode"

const sriovPFPath = "sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.0"

func (k *sriovKernel) numvfs() int {
	b, err := os.ReadFile(filepath.Join(k.root, sriovPFPath, "sriov_numvfs"))
	if err != nil {
		k.t.Fatal(err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

func (k *sriovKernel) write(p string, data []byte) error {
	k.writes = append(k.writes, p+" <- "+string(data))
	if p == sriovCompatMode && k.devlinkErr != nil {
		if k.numvfs() != 0 {
			return syscall.EBUSY
		}
		k.mode = string(data)
		return os.WriteFile(filepath.Join(k.root, sriovPFPath, "net/enp59s0f0np0/compat/devlink/mode"), []byte(k.mode+"\n"), 0o644)
	}
	if p != "/sys/bus/pci/devices/0000:3b:00.0/sriov_numvfs" {
		k.t.Fatalf("unexpected write %s", p)
	}
	n, _ := strconv.Atoi(string(data))
	cur := k.numvfs()
	switch {
	case n == cur:
		return nil
	case n != 0 && cur != 0:
		return syscall.EBUSY
	case n == 0:
		k.removeVFs(cur)
	default:
		k.addVFs(n)
	}
	return os.WriteFile(filepath.Join(k.root, sriovPFPath, "sriov_numvfs"), []byte(strconv.Itoa(n)+"\n"), 0o644)
}

func (k *sriovKernel) removeVFs(cur int) {
	for i := 0; i < cur; i++ {
		bdf := fmt.Sprintf("0000:3b:00.%d", 2+i)
		os.Remove(filepath.Join(k.root, sriovPFPath, fmt.Sprintf("virtfn%d", i)))
		os.RemoveAll(filepath.Join(k.root, "sys/devices/pci0000:3a/0000:3a:00.0", bdf))
		os.Remove(filepath.Join(k.root, "sys/bus/pci/devices", bdf))
		os.Remove(filepath.Join(k.root, "sys/class/net", fmt.Sprintf("enp59s0f0v%d", i)))
		os.RemoveAll(filepath.Join(k.root, sriovPFPath, "net", fmt.Sprintf("enp59s0f0npf0vf%d", i)))
	}
}

func (k *sriovKernel) addVFs(n int) {
	put := func(p, c string) {
		os.MkdirAll(filepath.Dir(filepath.Join(k.root, p)), 0o755)
		if err := os.WriteFile(filepath.Join(k.root, p), []byte(c+"\n"), 0o644); err != nil {
			k.t.Fatal(err)
		}
	}
	lnk := func(target, p string) {
		os.MkdirAll(filepath.Dir(filepath.Join(k.root, p)), 0o755)
		if err := os.Symlink(target, filepath.Join(k.root, p)); err != nil {
			k.t.Fatal(err)
		}
	}
	for i := 0; i < n; i++ {
		bdf := fmt.Sprintf("0000:3b:00.%d", 2+i)
		vf := "sys/devices/pci0000:3a/0000:3a:00.0/" + bdf
		put(vf+"/vendor", "0x15b3")
		put(vf+"/device", "0x101e")
		lnk("../../../../bus/pci/drivers/mlx5_core", vf+"/driver")
		lnk("../0000:3b:00.0", vf+"/physfn")
		lnk("../"+bdf, filepath.Join(sriovPFPath, fmt.Sprintf("virtfn%d", i)))
		lnk("../../../devices/pci0000:3a/0000:3a:00.0/"+bdf, "sys/bus/pci/devices/"+bdf)
		nd := fmt.Sprintf("enp59s0f0v%d", i)
		mk := func() {
			put(vf+"/net/"+nd+"/address", fmt.Sprintf("02:00:00:00:00:%02x", i))
			lnk("../../devices/pci0000:3a/0000:3a:00.0/"+bdf+"/net/"+nd, "sys/class/net/"+nd)
		}
		if k.netdevsAfter == 0 {
			mk()
		} else {
			k.pending = append(k.pending, mk)
		}
		if k.mode == "switchdev" {
			put(filepath.Join(sriovPFPath, "net", fmt.Sprintf("enp59s0f0npf0vf%d", i), "phys_port_name"), fmt.Sprintf("pf0vf%d", i))
		}
	}
}

// sleep is the step's verify waiting: after netdevsAfter sleeps the
// pending VF netdevs appear.
func (k *sriovKernel) sleep(d time.Duration) {
	k.slept += d
	if k.netdevsAfter > 0 && k.slept >= time.Duration(k.netdevsAfter)*d {
		for _, mk := range k.pending {
			mk()
		}
		k.pending = nil
	}
}

func (k *sriovKernel) DevLinkGetDeviceByName(bus, dev string) (*netlink.DevlinkDevice, error) {
	if k.devlinkErr != nil {
		return nil, k.devlinkErr
	}
	if bus != "pci" || dev != "0000:3b:00.0" && dev != "0000:3b:00.1" {
		return nil, syscall.ENODEV
	}
	return &netlink.DevlinkDevice{BusName: bus, DeviceName: dev, Attrs: netlink.DevlinkDevAttrs{Eswitch: netlink.DevlinkDevEswitchAttr{Mode: k.mode}}}, nil
}

func (k *sriovKernel) DevLinkSetEswitchMode(dev *netlink.DevlinkDevice, mode string) error {
	k.sets = append(k.sets, dev.BusName+"/"+dev.DeviceName+" "+mode)
	if k.numvfs() != 0 {
		return syscall.EBUSY
	}
	k.mode = mode
	return nil
}

func (k *sriovKernel) Delete() {}

func sriovStepFor(t *testing.T, k *sriovKernel, pfs []playbooks.SRIOVPF, fixture string) *sriovStep {
	t.Helper()
	h := &host.Host{Root: k.root}
	st, err := NewSRIOVStep(&provision.Env{Host: h, FixtureRoot: fixture}, &playbooks.SRIOVSpec{PFs: pfs})
	if err != nil {
		t.Fatal(err)
	}
	s := st.(*sriovStep)
	s.write, s.sleep = k.write, k.sleep
	if fixture == "" {
		s.openDevlink = func() (eswitch, error) { return k, nil }
	}
	return s
}

// TestSRIOVSwitchdevApplyTwice: 2 legacy VFs → 4 VFs in switchdev: the VFs
// go (numvfs 0), the mode changes, 4 VFs come back with representors; the
// second apply writes nothing and sets nothing.
func TestSRIOVSwitchdevApplyTwice(t *testing.T) {
	k := &sriovKernel{t: t, root: steptest.CopyHostRoot(t, "cx6dx-host"), mode: "legacy"}
	pfs := []playbooks.SRIOVPF{{PF: "enp59s0f0np0", NumVFs: intp(4), Eswitch: "switchdev"}}
	res := steptest.RunStep(t, sriovStepFor(t, k, pfs, ""))
	if res.Status != provision.StatusChanged {
		t.Fatalf("first apply: %s %s", res.Status, res.Error)
	}
	p := "/sys/bus/pci/devices/0000:3b:00.0/sriov_numvfs"
	if want := []string{p + " <- 0", p + " <- 4"}; !reflect.DeepEqual(k.writes, want) {
		t.Fatalf("writes %q, want %q", k.writes, want)
	}
	if want := []string{"pci/0000:3b:00.0 switchdev"}; !reflect.DeepEqual(k.sets, want) {
		t.Fatalf("devlink sets %q", k.sets)
	}
	k.writes, k.sets = nil, nil
	res = steptest.RunStep(t, sriovStepFor(t, k, pfs, ""))
	if res.Status != provision.StatusOK || len(k.writes) != 0 || len(k.sets) != 0 {
		t.Fatalf("second apply: %s %v writes %q sets %q %s", res.Status, res.Changes, k.writes, k.sets, res.Error)
	}
	want := "sriov 0000:3b:00.0 (enp59s0f0np0): 4 of 8 VFs, eswitch switchdev (devlink), representors enp59s0f0npf0vf0 enp59s0f0npf0vf1 enp59s0f0npf0vf2 enp59s0f0npf0vf3"
	if !reflect.DeepEqual(res.Notes, []string{want}) {
		t.Fatalf("notes %q\nwant %q", res.Notes, want)
	}
}

// TestSRIOVCountThroughZero: a count change writes 0 first (the kernel
// refuses a non-zero to non-zero change with EBUSY).
func TestSRIOVCountThroughZero(t *testing.T) {
	k := &sriovKernel{t: t, root: steptest.CopyHostRoot(t, "cx6dx-host"), mode: "legacy"}
	pfs := []playbooks.SRIOVPF{{PF: "0000:3b:00.0", NumVFs: intp(3)}}
	if res := steptest.RunStep(t, sriovStepFor(t, k, pfs, "")); res.Status != provision.StatusChanged {
		t.Fatalf("%s %s", res.Status, res.Error)
	}
	p := "/sys/bus/pci/devices/0000:3b:00.0/sriov_numvfs"
	if want := []string{p + " <- 0", p + " <- 3"}; !reflect.DeepEqual(k.writes, want) {
		t.Fatalf("writes %q", k.writes)
	}
	k.writes = nil
	if res := steptest.RunStep(t, sriovStepFor(t, k, pfs, "")); res.Status != provision.StatusOK || len(k.writes) != 0 {
		t.Fatalf("second: %s writes %q", res.Status, k.writes)
	}
}

// TestSRIOVRefusals: too many VFs, a function without SR-IOV, an unknown
// PF: errors at check, nothing written.
func TestSRIOVRefusals(t *testing.T) {
	for _, tc := range []struct {
		pf   playbooks.SRIOVPF
		want string
	}{
		{playbooks.SRIOVPF{PF: "enp59s0f0np0", NumVFs: intp(9)}, "the PF offers at most 8 VFs (sriov_totalvfs)"},
		{playbooks.SRIOVPF{PF: "0000:3b:00.2", NumVFs: intp(1)}, "no sriov_totalvfs"},
		{playbooks.SRIOVPF{PF: "ens9", NumVFs: intp(1)}, "no PF ens9"},
	} {
		k := &sriovKernel{t: t, root: steptest.CopyHostRoot(t, "cx6dx-host"), mode: "legacy"}
		res := steptest.RunStep(t, sriovStepFor(t, k, []playbooks.SRIOVPF{tc.pf}, ""))
		if res.Status != provision.StatusFailed || !strings.Contains(res.Error, tc.want) || len(k.writes) != 0 || len(k.sets) != 0 {
			t.Errorf("%+v: %s %q writes %q, want %q", tc.pf, res.Status, res.Error, k.writes, tc.want)
		}
	}
}

// TestSRIOVMissingRepresentors: VFs made in legacy mode before someone
// switched to switchdev have no representors: verify says so and how.
func TestSRIOVMissingRepresentors(t *testing.T) {
	k := &sriovKernel{t: t, root: steptest.CopyHostRoot(t, "cx6dx-host"), mode: "switchdev"}
	res := steptest.RunStep(t, sriovStepFor(t, k, []playbooks.SRIOVPF{{PF: "enp59s0f0np0", Eswitch: "switchdev"}}, ""))
	if res.Status != provision.StatusFailed || !strings.Contains(res.Error, "switchdev with 2 VFs but 0 VF representors") || !strings.Contains(res.Error, "after 10s") {
		t.Fatalf("%s %q", res.Status, res.Error)
	}
	if k.slept != sriovSettle {
		t.Errorf("verify waited %s, want %s", k.slept, sriovSettle)
	}
}

// TestSRIOVCompatFallback: devlink has no device for the PF (ENODEV, as in
// a lab or a network namespace without the card's devlink instance): the
// mode is read from and set through the PF netdev's compat/devlink/mode,
// the plan says so, the writes are exact (VFs removed, mode, VFs back);
// the second apply writes nothing. Another devlink error is no fallback.
func TestSRIOVCompatFallback(t *testing.T) {
	k := &sriovKernel{t: t, root: steptest.CopyHostRoot(t, "cx6dx-host"), mode: "legacy", devlinkErr: fmt.Errorf("devlink: %w", syscall.ENODEV)}
	pfs := []playbooks.SRIOVPF{{PF: "enp59s0f0np0", NumVFs: intp(3), Eswitch: "switchdev"}}
	s := sriovStepFor(t, k, pfs, "")
	plan, err := s.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ch := fmt.Sprint(plan.Changes()); !strings.Contains(ch, "eswitch mode (compat/devlink/mode of enp59s0f0np0: devlink has no pci/0000:3b:00.0) legacy -> switchdev") {
		t.Fatalf("changes %s", ch)
	}
	res := steptest.RunStep(t, s)
	p := "/sys/bus/pci/devices/0000:3b:00.0/sriov_numvfs"
	if want := []string{p + " <- 0", sriovCompatMode + " <- switchdev", p + " <- 3"}; res.Status != provision.StatusChanged || !reflect.DeepEqual(k.writes, want) || len(k.sets) != 0 {
		t.Fatalf("%s %s: writes %q, want %q; devlink sets %q", res.Status, res.Error, k.writes, want, k.sets)
	}
	k.writes = nil
	res = steptest.RunStep(t, sriovStepFor(t, k, pfs, ""))
	want := "sriov 0000:3b:00.0 (enp59s0f0np0): 3 of 8 VFs, eswitch switchdev (compat/devlink/mode), representors enp59s0f0npf0vf0 enp59s0f0npf0vf1 enp59s0f0npf0vf2"
	if res.Status != provision.StatusOK || len(k.writes) != 0 || !reflect.DeepEqual(res.Notes, []string{want}) {
		t.Fatalf("second apply: %s writes %q notes %q %s", res.Status, k.writes, res.Notes, res.Error)
	}
	k.devlinkErr = fmt.Errorf("devlink: %w", syscall.EOPNOTSUPP)
	res = steptest.RunStep(t, sriovStepFor(t, k, []playbooks.SRIOVPF{{PF: "enp59s0f0np0", Eswitch: "legacy"}}, ""))
	if res.Status != provision.StatusFailed || !strings.Contains(res.Error, "devlink dev pci/0000:3b:00.0: devlink: operation not supported") || len(k.writes) != 0 {
		t.Fatalf("EOPNOTSUPP: %s %q writes %q", res.Status, res.Error, k.writes)
	}
}

// TestSRIOVWaitsForVFNetdevs: VF netdevs that appear a while after the
// write (udev) are waited for; ones that never come are named, with the fix.
func TestSRIOVWaitsForVFNetdevs(t *testing.T) {
	pfs := []playbooks.SRIOVPF{{PF: "enp59s0f0np0", NumVFs: intp(3)}}
	k := &sriovKernel{t: t, root: steptest.CopyHostRoot(t, "cx6dx-host"), mode: "legacy", netdevsAfter: 5}
	if res := steptest.RunStep(t, sriovStepFor(t, k, pfs, "")); res.Status != provision.StatusChanged || k.slept != 5*sriovPoll {
		t.Fatalf("late netdevs: %s %s, waited %s", res.Status, res.Error, k.slept)
	}
	k = &sriovKernel{t: t, root: steptest.CopyHostRoot(t, "cx6dx-host"), mode: "legacy", netdevsAfter: -1}
	res := steptest.RunStep(t, sriovStepFor(t, k, pfs, ""))
	want := "after 10s these are missing: the netdev of VF 0000:3b:00.2 (virtfn0); the netdev of VF 0000:3b:00.3 (virtfn1); the netdev of VF 0000:3b:00.4 (virtfn2)"
	if res.Status != provision.StatusFailed || !strings.Contains(res.Error, want) || !strings.Contains(res.Fix, "see dmesg") {
		t.Errorf("no netdevs: %s %q fix %q, want %q", res.Status, res.Error, res.Fix, want)
	}
}

// TestSRIOVFixtureRoot: under --root the mode is read from the fixture's
// compat/devlink/mode (bf2-dpu-arm: switchdev) and a change is refused.
func TestSRIOVFixtureRoot(t *testing.T) {
	root := steptest.CopyHostRoot(t, "bf2-dpu-arm")
	h := &host.Host{Root: root}
	st, err := NewSRIOVStep(&provision.Env{Host: h, FixtureRoot: root}, &playbooks.SRIOVSpec{PFs: []playbooks.SRIOVPF{{PF: "p0", Eswitch: "legacy"}}})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := st.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ch := plan.Changes()
	if !strings.Contains(fmt.Sprint(ch), "eswitch mode (compat/devlink/mode of p0) switchdev -> legacy") {
		t.Fatalf("changes %v", ch)
	}
	if err := plan.Apply(context.Background()); err == nil || !strings.Contains(err.Error(), "refusing to set the eSwitch mode") {
		t.Fatalf("apply: %v", err)
	}
}

// TestSRIOVDown: down after up brings the PF back to 2 legacy VFs (VFs
// removed, mode set back, VFs made again) and forgets the record; a second
// down writes and sets nothing.
func TestSRIOVDown(t *testing.T) {
	k := &sriovKernel{t: t, root: steptest.CopyHostRoot(t, "cx6dx-host"), mode: "legacy"}
	pfs := []playbooks.SRIOVPF{{PF: "enp59s0f0np0", NumVFs: intp(4), Eswitch: "switchdev"}}
	if res := steptest.RunStep(t, sriovStepFor(t, k, pfs, "")); res.Status != provision.StatusChanged {
		t.Fatalf("up: %s %s", res.Status, res.Error)
	}
	k.writes, k.sets = nil, nil
	res := steptest.RunStep(t, sriovStepFor(t, k, pfs, "").Down(provision.DownOptions{}))
	if res.Status != provision.StatusChanged {
		t.Fatalf("down: %s %s", res.Status, res.Error)
	}
	p := "/sys/bus/pci/devices/0000:3b:00.0/sriov_numvfs"
	if want := []string{p + " <- 0", p + " <- 2"}; !reflect.DeepEqual(k.writes, want) || !reflect.DeepEqual(k.sets, []string{"pci/0000:3b:00.0 legacy"}) {
		t.Fatalf("writes %q sets %q", k.writes, k.sets)
	}
	if k.mode != "legacy" || k.numvfs() != 2 {
		t.Fatalf("mode %s numvfs %d", k.mode, k.numvfs())
	}
	k.writes, k.sets = nil, nil
	res = steptest.RunStep(t, sriovStepFor(t, k, pfs, "").Down(provision.DownOptions{}))
	if res.Status != provision.StatusOK || len(k.writes)+len(k.sets) != 0 {
		t.Fatalf("second down: %s %q %q %v", res.Status, k.writes, k.sets, res.Changes)
	}
}
