package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"rig/internal/testutil"
	"rig/internal/testutil/hugetest"
	"rig/lab"
	"rig/lab/card"
)

// buildRigNoCgo is rig built without cgo (the lab runs it as its init,
// its OvS starter and its firmware tools): once per test process
// (rigNoCgoBinary).
func buildRigNoCgo(t *testing.T) string {
	t.Helper()
	return rigNoCgoBinary.get(t, "CGO_ENABLED=0")
}

// runBin runs the built rig and returns its exit code and output.
func runBin(t *testing.T, bin string, args ...string) (int, string, string) {
	t.Helper()
	var o, e bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	validateJSONOutput(t, args, o.String())
	var xe *exec.ExitError
	switch {
	case errors.As(err, &xe):
		return xe.ExitCode(), o.String(), e.String()
	case err != nil:
		t.Fatalf("%v: %v", args, err)
	}
	return 0, o.String(), e.String()
}

// labUp brings lab name of kind up (with the extra flags of lab up) and
// downs it when the test ends.
func labUp(t *testing.T, bin, kind, name string, extra ...string) {
	t.Helper()
	if code, out, errOut := runBin(t, bin, append([]string{"lab", "up", kind, "--name", name}, extra...)...); code != 0 {
		runBin(t, bin, "lab", "down", name)
		t.Fatalf("lab up %s: exit %d\n%s%s", kind, code, out, errOut)
	}
	t.Cleanup(func() { labGone(t, bin, name) })
}

// labGone downs lab name when it is still up (a test's cleanup) and fails
// the test when it is not gone after that: a lab left behind keeps the
// mount points and hugepages the labs share (the last lab down gives them
// back), and a later lab test, not this one, would fail for it.
func labGone(t *testing.T, bin, name string) {
	t.Helper()
	code, out, errOut := runBin(t, bin, "lab", "down", name)
	if code != 0 && !strings.Contains(errOut, "no such lab") {
		t.Errorf("cleanup: lab down %s: exit %d\n%s%s", name, code, out, errOut)
	}
	l, err := lab.ForName(name)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{l.Dir, l.NetNSPath(), l.WireNetNSPath(), l.HostNetNSPath(), l.PeerNetNSPath()} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("cleanup: lab %s: %s is still there after lab down\n%s%s", name, p, out, errOut)
		}
	}
}

// noOtherLab fails a test that needs to be the only lab (it checks what the
// last lab down gives back) when an earlier test left one up.
func noOtherLab(t *testing.T) {
	t.Helper()
	if names, err := lab.Names(); err != nil || len(names) > 0 {
		t.Fatalf("labs %v (%v) are up before this test: an earlier test left them; what the last lab down gives back cannot be checked", names, err)
	}
}

// hostState is what a lab must leave as it found it. Other tests run
// on this host at the same time (their own netns, links, mounts in temp
// dirs, hugepage users), so it holds what a lab could leave: mounts on
// rig-lab paths, the private dirs and /sys; rig-lab netns; host links named
// like a card netdev; StateRoot; the hugepage pool.
type hostState struct {
	Mounts, NetNS, Links, Dirs []string
	NrPages                    string
	FreePages                  int
}

func labRelated(mountpoint string) bool {
	if strings.Contains(mountpoint, "rig-lab") || strings.HasPrefix(mountpoint, "/sys") {
		return true
	}
	for _, d := range lab.PrivateDirs() {
		if mountpoint == d || strings.HasPrefix(mountpoint, d+"/") {
			return true
		}
	}
	return false
}

// hostMounts lists "MOUNTPOINT FSTYPE" of this mount namespace.
func hostMounts(t *testing.T) []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if _, post, ok := strings.Cut(line, " - "); ok && len(f) > 4 {
			out = append(out, f[4]+" "+strings.Fields(post)[0])
		}
	}
	sort.Strings(out)
	return out
}

func snapshotHost(t *testing.T) hostState {
	t.Helper()
	var s hostState
	for _, m := range hostMounts(t) {
		if labRelated(strings.Fields(m)[0]) {
			s.Mounts = append(s.Mounts, m)
		}
	}
	ents, _ := os.ReadDir("/run/netns")
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "rig-lab-") {
			s.NetNS = append(s.NetNS, e.Name())
		}
	}
	links, err := netlink.LinkList()
	if err != nil {
		t.Fatal(err)
	}
	cardNames := map[string]bool{}
	for _, c := range card.Kinds() {
		for _, n := range c.Netdevs {
			cardNames[n.Name] = true
		}
	}
	for _, l := range links {
		if cardNames[l.Attrs().Name] || strings.HasPrefix(l.Attrs().Name, "rig-lab") {
			s.Links = append(s.Links, l.Attrs().Name)
		}
	}
	if _, err := os.Lstat(lab.StateRoot); err == nil {
		s.Dirs = append(s.Dirs, lab.StateRoot)
	}
	hp := "/sys/kernel/mm/hugepages/hugepages-2048kB/"
	nr, _ := os.ReadFile(hp + "nr_hugepages")
	free, _ := os.ReadFile(hp + "free_hugepages")
	s.NrPages = strings.TrimSpace(string(nr))
	s.FreePages, _ = strconv.Atoi(strings.TrimSpace(string(free)))
	sort.Strings(s.Links)
	return s
}

// warmNetns makes iproute2's /run/netns mount exist before a snapshot:
// the first `ip netns add` on a host makes it, once, for every user.
func warmNetns(t *testing.T) {
	t.Helper()
	if out, err := exec.Command("ip", "netns", "add", "rig-labtest-warm").CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	_ = exec.Command("ip", "netns", "del", "rig-labtest-warm").Run()
}

// labProcs is the lab's processes from `rig lab status -o json`.
func labStatus(t *testing.T, bin, name string) lab.Status {
	t.Helper()
	code, out, errOut := runBin(t, bin, "-o", "json", "lab", "status", name)
	var st lab.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil || code != 0 {
		t.Fatalf("lab status %s: exit %d, %v\n%s%s", name, code, err, out, errOut)
	}
	return st
}

func pidAlive(pid int) bool { return syscall.Kill(pid, 0) == nil && !isZombie(pid) }

func isZombie(pid int) bool {
	f, err := procStat(fmt.Sprintf("/proc/%d/stat", pid))
	return err != nil || len(f) == 0 || f[0] == "Z"
}

// procStat returns the fields of a /proc/PID/stat file after "pid (comm)":
// state, ppid, ... (comm may hold spaces and parentheses: split after the
// last ')').
func procStat(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:]), nil
}

// same: everything equal, and at least as many free hugepages as before
// (the lab's are back; other processes on the host may free more).
func (s hostState) same(before hostState) bool {
	a, b := s, before
	a.FreePages, b.FreePages = 0, 0
	return fmt.Sprint(a) == fmt.Sprint(b) && s.FreePages >= before.FreePages
}

// waitEqual polls until the host is as before (the kernel frees a mount
// namespace's hugetlbfs pages once its last user is gone) or 20 s pass.
func waitEqual(t *testing.T, before hostState) {
	t.Helper()
	var after hostState
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if after = snapshotHost(t); after.same(before) {
			return
		}
	}
	for _, d := range []struct {
		what     string
		bef, aft any
	}{{"mounts", before.Mounts, after.Mounts}, {"netns", before.NetNS, after.NetNS}, {"links", before.Links, after.Links},
		{"dirs", before.Dirs, after.Dirs}, {"nr_hugepages", before.NrPages, after.NrPages}} {
		if fmt.Sprint(d.bef) != fmt.Sprint(d.aft) {
			t.Errorf("%s before the lab: %v\nafter down: %v", d.what, d.bef, d.aft)
		}
	}
	if after.FreePages < before.FreePages {
		t.Errorf("free 2 MiB hugepages: %d before the lab, %d after down", before.FreePages, after.FreePages)
	}
}

// madeMountpoints is what Up noted it made (StateRoot/.created).
func madeMountpoints() []string {
	b, _ := os.ReadFile(filepath.Join(lab.StateRoot, ".created"))
	return strings.Fields(string(b))
}

// hvPlaybook: a hugetlbfs mount inside the lab and the lab's OvS with DPDK
// (net_null vdev port), through plain `rig up` with no flags.
const hvPlaybook = `name: lab-hv
hugepages:
  pages:
    - size: 2M
      count: 16
  mounts:
    - path: /dev/hugepages
      pagesize: 2M
ovs:
  config:
    dpdk-init: "try"
    dpdk-socket-mem: "32"
    dpdk-socket-limit: "64"
    dpdk-extra: "--no-pci --no-telemetry"
  bridges:
    - name: br-lab
      datapath_type: netdev
      ports:
        - name: vnull0
          type: dpdk
          devargs: net_null0
`

// TestPrivilegedLabUpDownLeavesHostAsBefore: a lab whose OvS ran DPDK
// (hugetlbfs mounted inside, pages in use) goes down leaving the host's
// mounts, rig-lab netns, links, mount-point dirs and hugepages as they
// were, and none of its processes; `rig up` inside found the lab's OvS at
// the default rundir with no flags and restarted it by pid. The lab is
// the BlueField's three machines (checkLabMachines: netdevs, addresses,
// pings over tmfifo_net0 and the management link, a frame host PF →
// pf0hpf, rig inventory on the host), and down ends the processes on the
// host and the peer too.
func TestPrivilegedLabUpDownLeavesHostAsBefore(t *testing.T) {
	testutil.RequirePrivileged(t)
	hugetest.ReserveFor(t, playbookNeeds(t, hvPlaybook)...)
	bin := buildRigNoCgo(t)
	pb := filepath.Join(t.TempDir(), "hv.yaml")
	if err := os.WriteFile(pb, []byte(hvPlaybook), 0o644); err != nil {
		t.Fatal(err)
	}
	warmNetns(t)
	noOtherLab(t)
	before, hostMounts0 := snapshotHost(t), hostMounts(t)
	labUp(t, bin, "bf2-dpu", "lt-host")
	farPids := checkLabMachines(t, bin, "lt-host")
	code, out, errOut := runBin(t, bin, "lab", "exec", "lt-host", "--", bin, "up", "-p", pb)
	if code != 0 || !strings.Contains(out, "restart (private instance in /var/run/openvswitch)") || !strings.Contains(out, "dpdk_initialized=true") {
		t.Fatalf("rig up inside the lab: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = runBin(t, bin, "lab", "exec", "lt-host", "--", bin, "ovs", "status")
	if code != 0 || !strings.Contains(out, "vnull0") || !strings.Contains(out, "unix:/var/run/openvswitch/db.sock") {
		t.Fatalf("rig ovs status inside: exit %d\n%s", code, out)
	}
	if b, u := strings.Count(fmt.Sprint(hostMounts0), "hugetlbfs"), strings.Count(fmt.Sprint(hostMounts(t)), "hugetlbfs"); u != b {
		t.Errorf("hugetlbfs mounts on the host: %d before the lab, %d with the lab's OvS-DPDK running", b, u)
	}
	made := madeMountpoints()
	during := snapshotHost(t)
	st := labStatus(t, bin, "lt-host")
	if len(st.Processes) < 2 {
		t.Fatalf("lab processes: %+v, want ovsdb-server and ovs-vswitchd", st.Processes)
	}
	if code, out, errOut := runBin(t, bin, "lab", "down", "lt-host"); code != 0 || !strings.Contains(out, "lab lt-host is down") {
		t.Fatalf("lab down: exit %d\n%s%s", code, out, errOut)
	}
	for _, p := range st.Processes {
		if pidAlive(p.PID) {
			t.Errorf("lab process %d (%s, %s) still runs after down", p.PID, p.Comm, p.Where)
		}
	}
	for _, pid := range farPids {
		if pidAlive(pid) {
			t.Errorf("process %d on the lab's host or peer still runs after down", pid)
		}
	}
	waitEqual(t, before)
	t.Logf("free 2 MiB hugepages: %d before the lab, %d with its OvS-DPDK running, %d after down; lab processes were %+v",
		before.FreePages, during.FreePages, snapshotHost(t).FreePages, st.Processes)
	for _, d := range made {
		if _, err := os.Lstat(d); err == nil {
			t.Errorf("%s, made by lab up as a mount point, is still there", d)
		}
	}
	if code, _, errOut := runBin(t, bin, "lab", "down", "lt-host"); code != exitFailure || !strings.Contains(errOut, "no such lab") {
		t.Errorf("second down: exit %d, %s", code, errOut)
	}
	if _, err := os.Lstat(lab.StateRoot); err == nil && len(before.Dirs) == 0 {
		t.Errorf("down of a lab that is not up left %s behind", lab.StateRoot)
	}
}

// TestPrivilegedLabGolden: inside each kind's lab, rig with no flags
// prints what it prints on the kind's fixture root with --root (and
// --fw-sim, for mode show) — three labs up at once.
func TestPrivilegedLabGolden(t *testing.T) {
	testutil.RequirePrivileged(t)
	bin := buildRigNoCgo(t)
	for _, c := range card.Kinds() {
		name := "lt-g-" + c.Kind
		labUp(t, bin, c.Kind, name)
		fw := filepath.Join(t.TempDir(), c.Kind+".json")
		init := []string{"fwsim", "--fw-sim", fw, "init"}
		for _, f := range c.Firmware {
			mode := c.FwMode
			if mode == "" {
				mode = "dpu"
			}
			init = append(init, "--device", f.BDF+"="+f.DeviceID+":"+mode)
		}
		if code, _, errOut := runBin(t, bin, init...); code != 0 {
			t.Fatalf("fwsim init: %s", errOut)
		}
		root := filepath.Join("../../testdata/hosts", c.Fixture)
		for _, args := range [][]string{{"inventory"}, {"-o", "json", "inventory"}, {"mst", "status"}, {"rdma", "links"}, {"-o", "json", "rdma", "links"}, {"mode", "show"}} {
			wc, wout, werr := runBin(t, bin, append([]string{"--root", root, "--fw-sim", fw}, args...)...)
			wout, werr = strings.ReplaceAll(wout, root, ""), strings.ReplaceAll(werr, root, "") // paths in messages
			gc, gout, gerr := runBin(t, bin, append([]string{"lab", "exec", name, "--", bin}, args...)...)
			if gc != wc || gout != wout || gerr != werr {
				t.Errorf("%s: rig %s in the lab: exit %d\n%s%s\nwant (fixture root): exit %d\n%s%s", c.Kind, strings.Join(args, " "), gc, gout, gerr, wc, wout, werr)
			}
		}
	}
	code, out, _ := runBin(t, bin, "lab", "list")
	for _, c := range card.Kinds() {
		if code != 0 || !strings.Contains(out, "lt-g-"+c.Kind) {
			t.Errorf("lab list: exit %d, no lt-g-%s:\n%s", code, c.Kind, out)
		}
	}
}

// TestPrivilegedLabLinkAndPowerCycle: pulling p0's cable makes the rdma
// step fail naming phys_state, putting it back converges; `rig mode set
// dpu` inside is pending (exit 3) until `rig lab power-cycle`, after which
// the embedded bf2-dpu playbook is satisfied; OvS runs again, new pids.
func TestPrivilegedLabLinkAndPowerCycle(t *testing.T) {
	testutil.RequirePrivileged(t)
	hugetest.ReserveFor(t, playbookNeeds(t, "bf2-dpu")[:1]...) // its OvS; the check is skipped
	bin := buildRigNoCgo(t)
	const name = "lt-link"
	labUp(t, bin, "bf2-dpu", name)
	pb := filepath.Join(t.TempDir(), "rdma.yaml")
	if err := os.WriteFile(pb, []byte("name: lab-rdma\nrdma:\n  timeout: 1s\n  ports:\n    - netdev: p0\n    - netdev: p1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	up := func() (int, string) {
		code, out, errOut := runBin(t, bin, "lab", "exec", name, "--", bin, "up", "-p", pb)
		return code, out + errOut
	}
	if code, out := up(); code != 0 {
		t.Fatalf("rdma with cables in: exit %d\n%s", code, out)
	}
	if code, out, errOut := runBin(t, bin, "lab", "link", name, "p0", "down"); code != 0 {
		t.Fatalf("lab link down: %d %s%s", code, out, errOut)
	}
	if code, out := up(); code != exitFailure || !strings.Contains(out, `phys_state "2: Polling"`) || !strings.Contains(out, "mlx5_0/1 (p0)") {
		t.Fatalf("rdma with p0's cable pulled: exit %d, want 1 naming phys_state\n%s", code, out)
	}
	if st := labStatus(t, bin, name); st.Netdevs[0].Name != "p0" || st.Netdevs[0].Carrier || st.Netdevs[0].WireUp || st.Netdevs[0].PhysState != "2: Polling" {
		t.Errorf("status with p0 pulled: %+v", st.Netdevs[0])
	}
	runBin(t, bin, "lab", "link", name, "p0", "up")
	if code, out := up(); code != 0 {
		t.Fatalf("rdma with p0 back: exit %d\n%s", code, out)
	}
	code, out, errOut := runBin(t, bin, "lab", "exec", name, "--", bin, "mode", "set", "dpu")
	if code != exitPowerCycle {
		t.Fatalf("mode set dpu: exit %d, want 3\n%s%s", code, out, errOut)
	}
	before := labStatus(t, bin, name)
	if f := before.Firmware[0]; f.Current != "separated" || f.Next != "dpu" || !f.Pending {
		t.Errorf("firmware before power cycle: %+v", f)
	}
	code, out, errOut = runBin(t, bin, "lab", "power-cycle", name)
	if code != 0 || !strings.Contains(out, "0000:03:00.0 loaded its next-boot configuration") || !strings.Contains(out, "started ovs-vswitchd") {
		t.Fatalf("power-cycle: exit %d\n%s%s", code, out, errOut)
	}
	after := labStatus(t, bin, name)
	if f := after.Firmware[0]; f.Current != "dpu" || f.Pending {
		t.Errorf("firmware after power cycle: %+v", f)
	}
	for _, p := range before.Processes {
		// the Arm's ("lab"); the x86 host's and the peer's are other machines
		if p.Where == "lab" && pidAlive(p.PID) {
			t.Errorf("process %d (%s) survived the power cycle", p.PID, p.Comm)
		}
	}
	if len(after.Processes) < 2 {
		t.Errorf("after the power cycle: processes %+v, want OvS again", after.Processes)
	}
	// the check needs the dataplane (cgo); TestPrivilegedLabStory runs it
	code, out, errOut = runBin(t, bin, "lab", "exec", name, "--", bin, "up", "-p", "bf2-dpu", "--skip", "check")
	if code != 0 || !strings.Contains(out, "mode") {
		t.Fatalf("rig up -p bf2-dpu after the power cycle: exit %d\n%s%s", code, out, errOut)
	}
}

// TestPrivilegedLabKilledAndTaken: a name already up is refused (exit 1,
// saying so); a lab whose processes were all SIGKILLed still goes down
// cleanly and leaves the host as before.
func TestPrivilegedLabKilledAndTaken(t *testing.T) {
	testutil.RequirePrivileged(t)
	bin := buildRigNoCgo(t)
	warmNetns(t)
	before := snapshotHost(t)
	const name = "lt-kill"
	labUp(t, bin, "cx6dx-host", name)
	code, _, errOut := runBin(t, bin, "lab", "up", "bf2-dpu", "--name", name)
	if code != exitFailure || !strings.Contains(errOut, "lab lt-kill: already up (kind cx6dx-host)") {
		t.Errorf("second up of %s: exit %d, %s", name, code, errOut)
	}
	st := labStatus(t, bin, name)
	if len(st.Processes) == 0 {
		t.Fatal("no lab processes to kill")
	}
	if len(st.Problems) != 0 {
		t.Errorf("status of a healthy lab: problems %q", st.Problems)
	}
	// the port keeper and the lab's OvS die: status names each
	for _, p := range st.Processes {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.PID))
		if strings.HasPrefix(p.Comm, "ovs") || strings.HasSuffix(string(cmd), "\x00__ports\x00"+name+"\x00arm\x00") {
			_ = syscall.Kill(p.PID, syscall.SIGKILL)
			for deadline := time.Now().Add(5 * time.Second); pidAlive(p.PID) && time.Now().Before(deadline); {
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
	probs := strings.Join(labStatus(t, bin, name).Problems, "\n")
	for _, want := range []string{"the port keeper (rig lab __ports " + name + ") is not running", "the lab's ovsdb-server is not running", "the lab's ovs-vswitchd is not running", "`rig lab power-cycle " + name + "` starts it again"} {
		if !strings.Contains(probs, want) {
			t.Errorf("status after the port keeper and OvS died lacks %q:\n%s", want, probs)
		}
	}
	if strings.Contains(probs, "lab kernel") {
		t.Errorf("the lab kernel runs, status says otherwise:\n%s", probs)
	}
	for _, p := range st.Processes {
		_ = syscall.Kill(p.PID, syscall.SIGKILL)
	}
	if code, out, errOut := runBin(t, bin, "lab", "down", name); code != 0 {
		t.Fatalf("down of a killed lab: exit %d\n%s%s", code, out, errOut)
	}
	waitEqual(t, before)
}

// A lab's long-lived processes hold no descriptor `rig lab up` inherited
// (run under flock(1), they kept its lock for the lab's life).
func TestPrivilegedLabProcessesHoldNoInheritedFD(t *testing.T) {
	testutil.RequirePrivileged(t)
	bin := buildRigNoCgo(t)
	warmNetns(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	const name = "lt-fd"
	cmd := exec.Command(bin, "lab", "up", "cx6dx-host", "--name", name)
	cmd.ExtraFiles = []*os.File{w} // fd 3, not close-on-exec, as flock(1) leaves its lock
	out, err := cmd.CombinedOutput()
	w.Close()
	t.Cleanup(func() { labGone(t, bin, name) })
	if err != nil {
		t.Fatalf("lab up: %v\n%s", err, out)
	}
	if len(labStatus(t, bin, name).Processes) == 0 {
		t.Fatal("the lab runs no process: nothing to check")
	}
	// every writer gone = EOF at once; a lab process holding fd 3 keeps it open
	r.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := r.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("read of the pipe rig lab up inherited: %d, %v; want EOF (a lab process still holds its write end)", n, err)
	}
}

// An ovs-vswitchd that rig starts (rig ovs daemon start here; rig up's
// restart inside a lab the same way) holds no descriptor rig inherited:
// one started under flock(1) in a lab kept its lock until the lab went.
func TestPrivilegedOVSDaemonHoldsNoInheritedFD(t *testing.T) {
	testutil.RequirePrivileged(t)
	if _, err := exec.LookPath("ovs-vsctl"); err != nil {
		t.Skip("needs openvswitch")
	}
	bin := buildRigNoCgo(t)
	rundir := filepath.Join(t.TempDir(), "ovs")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	testutil.CleanDefaultDPDKRuntimeDir(t)
	cmd := exec.Command(bin, "ovs", "daemon", "start", "--rundir", rundir)
	cmd.ExtraFiles = []*os.File{w} // fd 3, not close-on-exec, as flock(1) leaves its lock
	out, err := cmd.CombinedOutput()
	w.Close()
	t.Cleanup(func() { runBin(t, bin, "ovs", "daemon", "stop", "--rundir", rundir) })
	if err != nil {
		t.Fatalf("daemon start: %v\n%s", err, out)
	}
	r.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := r.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("read of the pipe rig inherited: %d, %v; want EOF (ovsdb-server or ovs-vswitchd still holds its write end)", n, err)
	}
}

// TestLabUsage: bad kinds, names and forms are usage errors (exit 2),
// refused before anything is touched.
func TestLabUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"lab", "up", "cx9"}, `unknown kind "cx9"; kinds: bf2-dpu, bf3-dpu, cx6dx-host`},
		{[]string{"lab", "up", "bf2-dpu", "--name", "Bad_Name"}, "--name: lab name"},
		{[]string{"lab", "link", "a", "p0", "sideways"}, `want down or up`},
		{[]string{"lab", "exec", "a", "rig"}, "want NAME -- COMMAND"},
		{[]string{"lab", "exec", "a", "--on", "switch", "--", "rig"}, `--on "switch": want one of arm, host, peer`},
		{[]string{"lab", "up", "bf2-dpu", "--far-ends", "cable"}, `--far-ends "cable": want machines`},
		{[]string{"lab", "up", "cx6dx-host", "--far-ends", "machines"}, "a cx6dx-host is no DPU"},
		{[]string{"lab", "down", "../x"}, "lab name"},
	} {
		code, _, errOut := rig(t, c.args...)
		if code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
}

// TestFirmwareToolOutsideLab: rig called as mstconfig outside a lab says
// what it is and fails, so a host without mstflint is not fooled.
func TestFirmwareToolOutsideLab(t *testing.T) {
	if _, err := os.Stat("/run/rig/lab.json"); err == nil {
		t.Skip("running inside a lab")
	}
	for _, argv0 := range []string{"/usr/bin/mstconfig", "mlxconfig", "/x/mstprivhost"} {
		tool, ok := firmwareTool(argv0)
		if !ok {
			t.Fatalf("firmwareTool(%s) = false", argv0)
		}
		var o, e bytes.Buffer
		if code := runFirmwareTool(tool, []string{"-d", "0000:03:00.0", "q"}, &o, &e); code != 1 || !strings.Contains(e.String(), "answers only inside a rig lab") {
			t.Errorf("%s outside a lab: exit %d, %q", argv0, code, e.String())
		}
	}
	if _, ok := firmwareTool("rig"); ok {
		t.Error("firmwareTool(rig) = true")
	}
}
