package system

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"rig/internal/host"
	"rig/internal/testutil"
	"rig/internal/testutil/fakeexec"
	"rig/playbooks"
	"rig/provision"
	"rig/provision/steptest"
	"rig/smartnic"
)

// fakeKernelLinks stands in for netlink over a fixture root and plays the
// kernel's part: setting a netdev up rewrites its flags/operstate and, as
// mlx5 does for a RoCE port, the port's state and phys_state — ACTIVE /
// LinkUp when a cable is present, DOWN / Polling when not.
type fakeKernelLinks struct {
	t     *testing.T
	h     *host.Host
	cable map[string]bool   // netdev -> physical link present
	port  map[string]string // netdev -> "mlx5_1/1"
	ups   []string
}

func (f *fakeKernelLinks) AdminUp(name string) (bool, error) { return sysfsAdmin{f.h}.AdminUp(name) }

func (f *fakeKernelLinks) SetUp(name string) error {
	f.ups = append(f.ups, name)
	put := func(p, v string) {
		if err := os.WriteFile(f.h.Path(p), []byte(v+"\n"), 0o644); err != nil {
			f.t.Fatal(err)
		}
	}
	put("/sys/class/net/"+name+"/flags", "0x1003")
	dev, port, _ := strings.Cut(f.port[name], "/")
	pdir := "/sys/class/infiniband/" + dev + "/ports/" + port
	if f.cable[name] {
		put("/sys/class/net/"+name+"/operstate", "up")
		put(pdir+"/state", "4: ACTIVE")
		put(pdir+"/phys_state", "5: LinkUp")
	} else {
		put("/sys/class/net/"+name+"/operstate", "down")
		put(pdir+"/state", "1: DOWN")
		put(pdir+"/phys_state", "2: Polling")
	}
	return nil
}

func rdmaStepOn(t *testing.T, root string, spec *playbooks.RDMASpec, links linkAdmin) (*rdmaStep, *fakeexec.Recorder) {
	t.Helper()
	if errs := spec.Validate(); len(errs) > 0 {
		t.Fatalf("spec: %v", errs)
	}
	rec := &fakeexec.Recorder{}
	st, err := NewRDMAStep(&provision.Env{Host: &host.Host{Root: root, Exec: rec.Exec}}, spec)
	if err != nil {
		t.Fatal(err)
	}
	s := st.(*rdmaStep)
	if links != nil {
		s.links = links
	}
	return s, rec
}

// cx6dx-host: enp59s0f1np1 is admin-down, so mlx5_1/1 is "1: DOWN" /
// "3: Disabled". Apply sets it up (once); the second apply changes nothing.
func TestRDMAAdminDownApplyTwice(t *testing.T) {
	root := steptest.CopyHostRoot(t, "cx6dx-host")
	h := &host.Host{Root: root}
	links := &fakeKernelLinks{t: t, h: h, cable: map[string]bool{"enp59s0f1np1": true}, port: map[string]string{"enp59s0f1np1": "mlx5_1/1"}}
	spec := &playbooks.RDMASpec{Ports: []playbooks.RDMAPortSpec{{Netdev: "enp59s0f0np0"}, {Device: "mlx5_1", Port: 1}}}
	s, rec := rdmaStepOn(t, root, spec, links)

	plan, err := s.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []provision.Change{{Object: "rdma mlx5_1/1 (enp59s0f1np1)", Action: "set netdev enp59s0f1np1 up",
		From: `admin down (state "1: DOWN", phys_state "3: Disabled")`, To: "admin up"}}
	if !reflect.DeepEqual(plan.Changes(), want) {
		t.Errorf("plan %+v\nwant %+v", plan.Changes(), want)
	}
	if len(plan.Notes) != 1 || plan.Notes[0] != "rdma mlx5_0/1 (enp59s0f0np0): ACTIVE / LINK_UP" {
		t.Errorf("notes %q", plan.Notes)
	}
	if r := steptest.RunStepOnce(t, s, provision.RunPlan); r.Status != provision.StatusWouldChange || len(links.ups) != 0 {
		t.Fatalf("plan: %s, ups %v", r.Status, links.ups)
	}

	r := steptest.RunStepOnce(t, s, provision.RunApply)
	if r.Status != provision.StatusChanged || len(r.Changes) != 1 {
		t.Fatalf("first apply: %s %v %s", r.Status, r.Changes, r.Error)
	}
	if !reflect.DeepEqual(links.ups, []string{"enp59s0f1np1"}) {
		t.Errorf("netlink set-up calls %v", links.ups)
	}
	r = steptest.RunStepOnce(t, s, provision.RunApply)
	if r.Status != provision.StatusOK || len(r.Changes) != 0 {
		t.Errorf("second apply: %s %v", r.Status, r.Changes)
	}
	if len(links.ups) != 1 {
		t.Errorf("second apply set links up again: %v", links.ups)
	}
	if c := rec.Lines(); len(c) != 0 {
		t.Errorf("rdma step ran tools: %q", c)
	}
}

// bf2-host: port 1 is admin-up with phys_state "2: Polling": a cable
// problem. Check fails with the phys_state and what to check; nothing is set.
func TestRDMAPhysicalLinkDown(t *testing.T) {
	root := steptest.CopyHostRoot(t, "bf2-host")
	links := &fakeKernelLinks{t: t, h: &host.Host{Root: root}}
	s, _ := rdmaStepOn(t, root, &playbooks.RDMASpec{Ports: []playbooks.RDMAPortSpec{{Netdev: "enp225s0f0np0"}, {Netdev: "enp225s0f1np1"}}}, links)
	r := steptest.RunStepOnce(t, s, provision.RunApply)
	if r.Status != provision.StatusFailed {
		t.Fatalf("status %s", r.Status)
	}
	for _, want := range []string{"rdma mlx5_1/1 (enp225s0f1np1)", `phys_state "2: Polling"`, "DOWN / POLLING"} {
		if !strings.Contains(r.Error, want) {
			t.Errorf("error %q lacks %q", r.Error, want)
		}
	}
	if !strings.Contains(r.Cause, "physical link is down") || !strings.Contains(r.Cause, "2: Polling") {
		t.Errorf("cause %q", r.Cause)
	}
	if !strings.Contains(r.Fix, "cable") || !strings.Contains(r.Fix, "peer") || !strings.Contains(r.Fix, "cannot fix") {
		t.Errorf("fix %q", r.Fix)
	}
	if len(links.ups) != 0 {
		t.Errorf("tried to set %v up for a cable problem", links.ups)
	}
}

// Admin-down and no cable: apply sets the netdev up, the port stays
// Polling, apply fails with the phys_state instead of claiming success.
func TestRDMAAdminDownNoCable(t *testing.T) {
	root := steptest.CopyHostRoot(t, "cx6dx-host")
	links := &fakeKernelLinks{t: t, h: &host.Host{Root: root}, cable: map[string]bool{}, port: map[string]string{"enp59s0f1np1": "mlx5_1/1"}}
	s, _ := rdmaStepOn(t, root, &playbooks.RDMASpec{Ports: []playbooks.RDMAPortSpec{{Netdev: "enp59s0f1np1"}}, Timeout: "300ms"}, links)
	t0 := time.Now()
	r := steptest.RunStepOnce(t, s, provision.RunApply)
	if r.Status != provision.StatusFailed || !strings.Contains(r.Error, "netdev enp59s0f1np1 is up now, but after 300ms") || !strings.Contains(r.Cause, "2: Polling") {
		t.Errorf("got %s: %s / %s", r.Status, r.Error, r.Cause)
	}
	if d := time.Since(t0); d < 300*time.Millisecond || d > 3*time.Second {
		t.Errorf("waited %v for a 300ms timeout", d)
	}
}

func TestRDMAUnknownPorts(t *testing.T) {
	root := "../../testdata/hosts/bf2-dpu-arm"
	for spec, want := range map[playbooks.RDMAPortSpec]string{
		{Netdev: "eth7"}:            "rdma: netdev eth7: no such netdev",
		{Device: "mlx5_9", Port: 1}: "rdma mlx5_9/1: read state",
		{Device: "mlx5_0", Port: 2}: "rdma mlx5_0/2",
		{Netdev: "tmfifo_net0"}:     "rdma: netdev tmfifo_net0: no RDMA port has this netdev",
		{Netdev: "bond0"}:           "rdma: netdev bond0: no RDMA port has this netdev",
	} {
		s, _ := rdmaStepOn(t, root, &playbooks.RDMASpec{Ports: []playbooks.RDMAPortSpec{spec}}, nil)
		_, err := s.Check(context.Background())
		p, ok := provision.AsProblem(err)
		if !ok || !strings.Contains(err.Error(), want) || p.Fix() == "" {
			t.Errorf("%+v: err %v, want a Problem containing %q", spec, err, want)
		}
	}
	// Every port of the BF2 DPU fixture is up: ok, notes only.
	s, _ := rdmaStepOn(t, root, &playbooks.RDMASpec{Ports: []playbooks.RDMAPortSpec{{Netdev: "p0"}, {Netdev: "p1"}}}, nil)
	if r := steptest.RunStepOnce(t, s, provision.RunApply); r.Status != provision.StatusOK || len(r.Notes) != 2 {
		t.Errorf("bf2-dpu-arm: %s %v %s", r.Status, r.Notes, r.Error)
	}
}

// Issue 13 item 4: an rdma step naming an SF's netdev finds the SF's own
// RDMA device (mlx5_2, under the auxiliary device mlx5_core.sf.2, not the
// PCI function) and converges: on a copy of each BlueField Arm fixture
// with the SF netdev admin-down, apply sets it up once, the second apply
// changes nothing and runs nothing.
func TestRDMASFNetdevApplyTwice(t *testing.T) {
	const sfDir = "sys/devices/pci0000:00/0000:00:00.0/0000:01:00.0/0000:02:00.0/0000:03:00.0/mlx5_core.sf.2"
	for _, fixture := range []string{"bf2-dpu-arm", "bf3-dpu-arm"} {
		root := steptest.CopyHostRoot(t, fixture)
		for p, v := range map[string]string{sfDir + "/net/enp3s0f0s0/flags": "0x1002", sfDir + "/net/enp3s0f0s0/operstate": "down",
			sfDir + "/infiniband/mlx5_2/ports/1/state": "1: DOWN", sfDir + "/infiniband/mlx5_2/ports/1/phys_state": "3: Disabled"} {
			if err := os.WriteFile(filepath.Join(root, p), []byte(v+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		links := &fakeKernelLinks{t: t, h: &host.Host{Root: root}, cable: map[string]bool{"enp3s0f0s0": true}, port: map[string]string{"enp3s0f0s0": "mlx5_2/1"}}
		s, rec := rdmaStepOn(t, root, &playbooks.RDMASpec{Ports: []playbooks.RDMAPortSpec{{Netdev: "enp3s0f0s0"}, {Netdev: "enp3s0f1s0"}, {Netdev: "p0"}}}, links)
		plan, err := s.Check(context.Background())
		if err != nil {
			t.Fatalf("%s: check: %v", fixture, err)
		}
		want := []provision.Change{{Object: "rdma mlx5_2/1 (enp3s0f0s0)", Action: "set netdev enp3s0f0s0 up",
			From: `admin down (state "1: DOWN", phys_state "3: Disabled")`, To: "admin up"}}
		if !reflect.DeepEqual(plan.Changes(), want) {
			t.Errorf("%s: plan %+v\nwant %+v", fixture, plan.Changes(), want)
		}
		if n := strings.Join(plan.Notes, "\n"); !strings.Contains(n, "rdma mlx5_3/1 (enp3s0f1s0): ACTIVE / LINK_UP") || !strings.Contains(n, "rdma mlx5_0/1 (p0): ACTIVE") {
			t.Errorf("%s: notes %q", fixture, plan.Notes)
		}
		if r := steptest.RunStepOnce(t, s, provision.RunApply); r.Status != provision.StatusChanged || len(r.Changes) != 1 || !reflect.DeepEqual(links.ups, []string{"enp3s0f0s0"}) {
			t.Fatalf("%s: first apply: %s %v %s, ups %v", fixture, r.Status, r.Changes, r.Error, links.ups)
		}
		if r := steptest.RunStepOnce(t, s, provision.RunApply); r.Status != provision.StatusOK || len(r.Changes) != 0 || len(links.ups) != 1 {
			t.Errorf("%s: second apply: %s %v, ups %v", fixture, r.Status, r.Changes, links.ups)
		}
		if c := rec.Lines(); len(c) != 0 {
			t.Errorf("%s: rdma step ran tools: %q", fixture, c)
		}
	}
}

// Under a fixture root with no --netns there is no live netdev to set up:
// the step says so instead of pretending.
func TestRDMAFixtureRootCannotSetUp(t *testing.T) {
	root := steptest.CopyHostRoot(t, "cx6dx-host")
	s, _ := rdmaStepOn(t, root, &playbooks.RDMASpec{Ports: []playbooks.RDMAPortSpec{{Netdev: "enp59s0f1np1"}}}, nil)
	r := steptest.RunStepOnce(t, s, provision.RunApply)
	if r.Status != provision.StatusFailed || !strings.Contains(r.Error, "--netns") {
		t.Errorf("%s: %s", r.Status, r.Error)
	}
}

func TestRDMASpecValidate(t *testing.T) {
	for _, c := range []struct {
		spec playbooks.RDMASpec
		want string
	}{
		{playbooks.RDMASpec{}, "ports: list at least one"},
		{playbooks.RDMASpec{Ports: []playbooks.RDMAPortSpec{{Device: "mlx5_0", Netdev: "p0"}}}, "not both"},
		{playbooks.RDMASpec{Ports: []playbooks.RDMAPortSpec{{}}}, "give device"},
		{playbooks.RDMASpec{Ports: []playbooks.RDMAPortSpec{{Netdev: "p0", Port: 1}}}, "port goes with device"},
		{playbooks.RDMASpec{Ports: []playbooks.RDMAPortSpec{{Netdev: "a/b"}}}, "not a network interface name"},
		{playbooks.RDMASpec{Ports: []playbooks.RDMAPortSpec{{Device: "mlx5_0"}, {Device: "mlx5_0", Port: 1}}}, "same port as ports[0]"},
		{playbooks.RDMASpec{Ports: []playbooks.RDMAPortSpec{{Device: "mlx5_0", Port: 300}}}, "1..255"},
		{playbooks.RDMASpec{Ports: []playbooks.RDMAPortSpec{{Netdev: "p0"}}, Timeout: "soon"}, "timeout"},
	} {
		errs := c.spec.Validate()
		if len(errs) == 0 || !strings.Contains(fmt.Sprint(errs), c.want) {
			t.Errorf("%+v: %v, want %q", c.spec, errs, c.want)
		}
	}
}

// TestRDMAVethNetlink is the privileged test: the RDMA port's netdev p0 is
// a real veth inside a test netns, and the step sets it up through real
// netlink (--netns). A RoCE port's state follows its netdev; there is no
// mlx5 here, so kernelModelPort plays mlx5's part honestly: before each
// read it derives state/phys_state from the live veth (admin down ->
// "1: DOWN"/"3: Disabled"; up with carrier -> "4: ACTIVE"/"5: LinkUp"; up
// without carrier, i.e. the peer is down -> "1: DOWN"/"2: Polling"), writes
// them into the fixture's sysfs files and then reads them with the
// production reader (smartnic.ReadPort).
func TestPrivilegedRDMAVethNetlink(t *testing.T) {
	testutil.RequirePrivileged(t)
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2's ip (Makefile DEB_PKGS)")
	}
	ns := fmt.Sprintf("rigrdma%d", os.Getpid())
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	ip("netns", "add", ns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	ip("-n", ns, "link", "add", "p0", "type", "veth", "peer", "name", "p0peer")
	ip("-n", ns, "link", "set", "p0peer", "up")

	root := steptest.CopyHostRoot(t, "bf2-dpu-arm")
	h := &host.Host{Root: root}
	rec := &fakeexec.Recorder{}
	h.Exec = rec.Exec
	spec := &playbooks.RDMASpec{Ports: []playbooks.RDMAPortSpec{{Netdev: "p0"}}, Timeout: "5s"}
	st, err := NewRDMAStep(&provision.Env{Host: h, NetNS: ns}, spec)
	if err != nil {
		t.Fatal(err)
	}
	s := st.(*rdmaStep)
	if _, ok := s.links.(netlinkAdmin); !ok {
		t.Fatalf("with --netns the step must use netlink, got %T", s.links)
	}
	s.port = kernelModelPort(t, h, ns, "p0")

	r := steptest.RunStepOnce(t, s, provision.RunApply)
	if r.Status != provision.StatusChanged || len(r.Changes) != 1 || r.Changes[0].Action != "set netdev p0 up" {
		t.Fatalf("first apply: %s %+v %s", r.Status, r.Changes, r.Error)
	}
	if up, _ := (netlinkAdmin{ns: ns}).AdminUp("p0"); !up {
		t.Error("p0 is not admin-up in the netns after apply")
	}
	r = steptest.RunStepOnce(t, s, provision.RunApply)
	if r.Status != provision.StatusOK || len(r.Changes) != 0 {
		t.Errorf("second apply: %s %+v %s", r.Status, r.Changes, r.Error)
	}

	// Physical link down: the peer goes away (down), p0 admin-down again.
	ip("-n", ns, "link", "set", "p0peer", "down")
	ip("-n", ns, "link", "set", "p0", "down")
	spec.Timeout = "1500ms"
	r = steptest.RunStepOnce(t, s, provision.RunApply)
	if r.Status != provision.StatusFailed || !strings.Contains(r.Error, `phys_state "2: Polling"`) || !strings.Contains(r.Fix, "cable") {
		t.Errorf("no-carrier apply: %s: %s / %s", r.Status, r.Error, r.Fix)
	}
	// Now p0 is admin-up without carrier: check fails at once, no change planned.
	_, err = s.Check(context.Background())
	if p, ok := provision.AsProblem(err); !ok || !strings.Contains(p.Cause(), "2: Polling") {
		t.Errorf("check with admin-up, no carrier: %v", err)
	}
	if c := rec.Lines(); len(c) != 0 {
		t.Errorf("rdma step ran tools: %q", c)
	}
}

func kernelModelPort(t *testing.T, h *host.Host, ns, netdev string) func(string, int) (smartnic.RDMAPort, error) {
	return func(dev string, port int) (smartnic.RDMAPort, error) {
		hd, err := host.NetlinkHandle(ns)
		if err != nil {
			return smartnic.RDMAPort{}, err
		}
		defer hd.Close()
		l, err := hd.LinkByName(netdev)
		if err != nil {
			return smartnic.RDMAPort{}, err
		}
		a := l.Attrs()
		state, phys, oper, flags := "1: DOWN", "3: Disabled", "down", "0x1002"
		if a.Flags&net.FlagUp != 0 {
			flags = "0x1003"
			state, phys = "1: DOWN", "2: Polling"
			if a.OperState == netlink.OperUp {
				state, phys, oper = "4: ACTIVE", "5: LinkUp", "up"
			}
		}
		pdir := fmt.Sprintf("/sys/class/infiniband/%s/ports/%d/", dev, port)
		for p, v := range map[string]string{pdir + "state": state, pdir + "phys_state": phys,
			"/sys/class/net/" + netdev + "/operstate": oper, "/sys/class/net/" + netdev + "/flags": flags} {
			if err := os.WriteFile(h.Path(p), []byte(v+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return smartnic.ReadPort(h, dev, port)
	}
}
