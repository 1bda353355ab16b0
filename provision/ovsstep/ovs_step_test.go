package ovsstep

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"rig/internal/cpuset"
	"rig/internal/host"
	"rig/internal/testutil"
	"rig/internal/testutil/fakeexec"
	"rig/internal/testutil/hugetest"
	"rig/ovs"
	"rig/ovs/diagnose"
	"rig/ovs/ovstest"
	"rig/playbooks"
	"rig/provision"
	"rig/provision/steptest"
)

// ---- unit tests: fake exec with exact argv, fake host root ----

// fakeOVS is the exec recorder answering the state read with recorded
// ovs-vsctl JSON (before the first write: before; after: after).
func fakeOVS(before, after []byte) *fakeexec.Recorder {
	wrote := false
	return &fakeexec.Recorder{Answer: func(name string, args []string) ([]byte, error, bool) {
		if ovstest.IsRead(append([]string{name}, args...)) {
			if wrote {
				return after, nil, true
			}
			return before, nil, true
		}
		wrote = true
		return nil, nil, true
	}}
}

// ovsWrites are the recorded commands that are not reads.
func ovsWrites(r *fakeexec.Recorder) [][]string {
	return r.Filter(func(argv []string) bool { return !ovstest.IsRead(argv) })
}

// systemHost is a fake root where the system ovs-vswitchd is alive.
func systemHost(t *testing.T, f *fakeexec.Recorder) *host.Host {
	t.Helper()
	root := t.TempDir()
	for p, c := range map[string]string{
		"var/run/openvswitch/ovs-vswitchd.pid": "4242\n",
		"proc/4242/stat":                       "4242 (ovs-vswitchd) S 1 4242 4242 0 -1 4194560",
	} {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return &host.Host{Root: root, Exec: f.Exec}
}

// vdevSpec is the spec the recorded state-attached.json was made from.
func vdevSpec() *playbooks.OVSSpec {
	f := false
	return &playbooks.OVSSpec{
		Config: playbooks.OVSConfig{DPDKInit: "try", DPDKSocketMem: "128", DPDKSocketLimit: "256", DPDKExtra: "--no-pci", HWOffload: &f},
		Bridges: []playbooks.OVSBridge{{Name: "br-vdev", DatapathType: "netdev", Ports: []playbooks.OVSPort{
			{Name: "vnull0", Type: "dpdk", Devargs: "net_null0"},
			{Name: "vnull1", Type: "dpdk", Devargs: "net_null1", NRxq: 2, MTURequest: 1500},
		}}},
	}
}

func TestOVSStepUnitApplyTwiceExactArgv(t *testing.T) {
	f := fakeOVS(steptest.Sample(t, "state-empty.json"), steptest.Sample(t, "state-attached.json"))
	h := systemHost(t, f)
	step, err := NewOVSStep(&provision.Env{Host: h}, vdevSpec())
	if err != nil {
		t.Fatal(err)
	}
	r := &provision.Runner{Steps: []provision.Step{step}}
	rep, err := r.Execute(context.Background(), provision.RunApply, provision.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Steps[0].Status != provision.StatusChanged || len(rep.Steps[0].Changes) != 9 {
		t.Fatalf("first apply: %+v", rep.Steps[0])
	}
	want := [][]string{
		{"ovs-vsctl", "--timeout=15", "--no-wait", "set", "Open_vSwitch", ".", `other_config:dpdk-extra="--no-pci"`, `other_config:dpdk-init="try"`,
			`other_config:dpdk-socket-limit="256"`, `other_config:dpdk-socket-mem="128"`, `other_config:hw-offload="false"`},
		{"systemctl", "restart", "openvswitch-switch"},
		{"ovs-vsctl", "--timeout=15", "--may-exist", "add-br", "br-vdev", "--", "set", "Bridge", "br-vdev", `datapath_type="netdev"`},
		{"ovs-vsctl", "--timeout=15", "add-port", "br-vdev", "vnull0", "--", "set", "Interface", "vnull0", `type="dpdk"`, `options:dpdk-devargs="net_null0"`},
		{"ovs-vsctl", "--timeout=15", "add-port", "br-vdev", "vnull1", "--", "set", "Interface", "vnull1", `type="dpdk"`, `options:dpdk-devargs="net_null1"`,
			`options:n_rxq="2"`, "mtu_request=1500"},
	}
	if got := ovsWrites(f); !reflect.DeepEqual(got, want) {
		t.Fatalf("writes:\n got %q\nwant %q", got, want)
	}
	// second apply: zero changes, zero write commands
	f.Reset()
	rep, err = (&provision.Runner{Steps: []provision.Step{step}}).Execute(context.Background(), provision.RunApply, provision.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Steps[0].Status != provision.StatusOK || len(rep.Steps[0].Changes) != 0 || len(ovsWrites(f)) != 0 {
		t.Fatalf("second apply: %+v, writes %q", rep.Steps[0], ovsWrites(f))
	}
	if len(f.Calls()) != 1 {
		t.Fatalf("second apply ran %d commands, want 1 read: %q", len(f.Calls()), f.Calls())
	}
}

func TestOVSStepUnitPruneAndSet(t *testing.T) {
	f := fakeOVS(steptest.Sample(t, "state-bad-pci.json"), steptest.Sample(t, "state-bad-pci.json"))
	h := systemHost(t, f)
	spec := vdevSpec()
	spec.Config.DPDKExtra = "--no-pci --no-telemetry" // as recorded in state-bad-pci.json
	spec.Prune = true
	spec.Bridges[0].Ports[1].NRxq = 4
	spec.Bridges[0].Ports[0].MTURequest = 9000
	spec.Bridges[0].Ports[0].Devargs = "net_null0,size=128"
	step, _ := NewOVSStep(&provision.Env{Host: h}, spec)
	plan, err := step.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := plan.Apply(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"ovs-vsctl", "--timeout=15", "--if-exists", "del-port", "br-vdev", "bad0"},
		{"ovs-vsctl", "--timeout=15", "set", "Interface", "vnull0", `options:dpdk-devargs="net_null0,size=128"`, "mtu_request=9000"},
		{"ovs-vsctl", "--timeout=15", "set", "Interface", "vnull1", `options:n_rxq="4"`},
	}
	if got := ovsWrites(f); !reflect.DeepEqual(got, want) {
		t.Fatalf("writes:\n got %q\nwant %q", got, want)
	}
	var actions []string
	for _, c := range plan.Changes() {
		actions = append(actions, c.String())
	}
	for _, w := range []string{"ovs port bad0: delete port from br-vdev (prune: true)", "ovs port vnull0: set options:dpdk-devargs net_null0 -> net_null0,size=128",
		"ovs port vnull0: set mtu_request 9000", "ovs port vnull1: set options:n_rxq 2 -> 4"} {
		if !strings.Contains(strings.Join(actions, "\n"), w) {
			t.Errorf("plan lacks %q: %q", w, actions)
		}
	}
	// without prune the extra port and a foreign bridge are left alone
	f2 := fakeOVS(steptest.Sample(t, "state-bad-pci.json"), nil)
	spec2 := vdevSpec()
	spec2.Config.DPDKExtra = "--no-pci --no-telemetry"
	spec2.Bridges[0].Name = "br-other"
	step2, _ := NewOVSStep(&provision.Env{Host: systemHost(t, f2)}, spec2)
	plan2, err := step2.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range plan2.Changes() {
		if strings.Contains(c.Action, "delete") {
			t.Errorf("deleted without prune: %s", c)
		}
	}
	// with prune, the foreign bridge goes
	spec2.Prune = true
	f3 := fakeOVS(steptest.Sample(t, "state-bad-pci.json"), steptest.Sample(t, "state-bad-pci.json"))
	step3, _ := NewOVSStep(&provision.Env{Host: systemHost(t, f3)}, spec2)
	plan3, _ := step3.Check(context.Background())
	if err := plan3.Apply(context.Background()); err != nil {
		t.Fatal(err)
	}
	w := ovsWrites(f3)
	if last := w[len(w)-1]; !reflect.DeepEqual(last, []string{"ovs-vsctl", "--timeout=15", "--if-exists", "del-br", "br-vdev"}) {
		t.Errorf("last write %q, want del-br br-vdev", last)
	}
	for _, c := range w {
		if strings.Contains(strings.Join(c, " "), "move") {
			t.Errorf("unexpected %q", c)
		}
	}
}

func TestOVSStepUnitBrokenPortFailsCheck(t *testing.T) {
	f := fakeOVS(steptest.Sample(t, "state-bad-pci.json"), nil)
	spec := vdevSpec()
	spec.Config.DPDKExtra = "--no-pci --no-telemetry"
	spec.Bridges[0].Ports = append(spec.Bridges[0].Ports, playbooks.OVSPort{Name: "bad0", Type: "dpdk", Devargs: "0000:99:00.0"})
	step, _ := NewOVSStep(&provision.Env{Host: systemHost(t, f)}, spec)
	_, err := step.Check(context.Background())
	p, ok := provision.AsProblem(err)
	if !ok || p.Object != "ovs: port bad0" || !strings.Contains(p.Cause(), "PCI device 0000:99:00.0 does not exist") ||
		!strings.Contains(err.Error(), "Error attaching device '0000:99:00.0' to DPDK") || p.Fix() == "" {
		t.Fatalf("got %v (%+v)", err, p)
	}
	if len(ovsWrites(f)) != 0 {
		t.Fatalf("check wrote: %q", ovsWrites(f))
	}
}

func TestOVSStepUnitVswitchdDown(t *testing.T) {
	f := fakeOVS(steptest.Sample(t, "state-attached.json"), nil)
	h := systemHost(t, f)
	if err := os.Remove(h.Path("/proc/4242/stat")); err != nil {
		t.Fatal(err)
	}
	step, _ := NewOVSStep(&provision.Env{Host: h}, vdevSpec())
	_, err := step.Check(context.Background())
	p, ok := provision.AsProblem(err)
	if !ok || !strings.Contains(err.Error(), "ovs-vswitchd is not running") || !strings.Contains(err.Error(), "stale") ||
		!strings.Contains(p.Fix(), "systemctl restart openvswitch-switch") {
		t.Fatalf("got %v", err)
	}
}

func TestOVSStepUnitUnreachable(t *testing.T) {
	h := &host.Host{Root: t.TempDir(), Exec: func(ctx context.Context, name string, args ...string) ([]byte, error) {
		return nil, &host.ToolError{Argv: append([]string{name}, args...), Stderr: "ovs-vsctl: unix:/x/db.sock: database connection failed (No such file or directory)", Err: errors.New("exit status 1")}
	}}
	step, _ := NewOVSStep(&provision.Env{Host: h, OVSRunDir: "/x"}, vdevSpec())
	_, err := step.Check(context.Background())
	p, ok := provision.AsProblem(err)
	if !ok || !strings.Contains(p.Fix(), "rig ovs daemon start --rundir /x") || !strings.Contains(err.Error(), "database connection failed") {
		t.Fatalf("got %v", err)
	}
}

// ---- privileged integration tests against a real private OvS-DPDK ----

func ovsRun(t *testing.T, h *host.Host, d *ovs.Daemon, spec *playbooks.OVSSpec) (*provision.Report, *ovs.Client) {
	t.Helper()
	step, err := NewOVSStep(&provision.Env{Host: h, OVSRunDir: d.Dir}, spec)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := (&provision.Runner{Steps: []provision.Step{step}}).Execute(ctx, provision.RunApply, provision.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	return rep, ovs.NewClient(h, d.Target())
}

// vmConfig is OvS-DPDK on a VM: 128 MB of socket memory, at most 256
// (vmOVS: the pages a test reserves for it; without a limit its shared
// mempool grows as far as the free pages let it).
func vmConfig() playbooks.OVSConfig {
	f := false
	return playbooks.OVSConfig{DPDKInit: "try", DPDKSocketMem: "128", DPDKSocketLimit: "256", DPDKExtra: "--no-pci --no-telemetry", HWOffload: &f}
}

// vmOVS is what an OvS with vmConfig takes from the 2 MiB pool.
func vmOVS() hugetest.Need { return hugetest.OVS(128, 256) }

// testNetns makes a netns with a veth pair: one end (returned) stays in the
// host netns for net_af_packet, the peer lives in the test netns.
func testNetns(t *testing.T) string {
	t.Helper()
	id := strconv.Itoa(os.Getpid() % 100000)
	ns, hostEnd, peer := "rigovs"+id, "rigaf"+id, "rigafp"+id
	run := func(args ...string) {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	run("netns", "add", ns)
	t.Cleanup(func() {
		_ = exec.Command("ip", "link", "del", hostEnd).Run()
		_ = exec.Command("ip", "netns", "del", ns).Run()
		if err := exec.Command("ip", "link", "show", hostEnd).Run(); err == nil {
			t.Errorf("veth %s left behind", hostEnd)
		}
	})
	run("link", "add", hostEnd, "type", "veth", "peer", "name", peer, "netns", ns)
	run("link", "set", hostEnd, "up")
	run("-n", ns, "link", "set", peer, "up")
	return hostEnd
}

func TestPrivilegedOVSStepVdevsApplyTwice(t *testing.T) {
	testutil.RequirePrivileged(t)
	rec := &ovstest.Recorder{}
	h := &host.Host{Root: "/", Exec: rec.Exec}
	d := ovstest.Start(t, h, vmOVS())
	veth := testNetns(t)
	spec := &playbooks.OVSSpec{Config: vmConfig(), Bridges: []playbooks.OVSBridge{{Name: "br-t", Ports: []playbooks.OVSPort{
		{Name: "null0", Devargs: "net_null0", NRxq: 2},
		{Name: "afp0", Devargs: "net_af_packet0,iface=" + veth},
		{Name: "memif0", Devargs: "net_memif0,role=server,socket=" + filepath.Join(d.Dir, "memif0.sock")},
		{Name: "vhu0", Type: "dpdkvhostuser"},
		{Name: "vhc0", Type: "dpdkvhostuserclient", VhostServerPath: filepath.Join(d.Dir, "vhc0.sock"), MTURequest: 2000},
	}}}}
	rep, c := ovsRun(t, h, d, spec)
	if st := rep.Steps[0]; st.Status != provision.StatusChanged {
		t.Fatalf("first apply: %s: %s", st.Status, st.Error)
	}
	status, err := diagnose.ReadStatus(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if !status.OK || !status.DPDKInitialized || status.DPDKStale || !status.Vswitchd.Alive {
		t.Fatalf("status: %+v", status)
	}
	for _, p := range spec.Bridges[0].Ports {
		ifc, ok := (&ovs.State{Bridges: status.Bridges}).Interface(p.Name)
		if !ok || ifc.OFPort <= 0 || ifc.Error != "" || ifc.Bridge != "br-t" {
			t.Errorf("port %s: %+v", p.Name, ifc)
		}
	}
	if ifc, _ := (&ovs.State{Bridges: status.Bridges}).Interface("null0"); ifc.NRxq != "2" {
		t.Errorf("null0 n_rxq: %+v", ifc)
	}
	// everything of the instance is in its dir: vhost-user socket, bridge mgmt socket
	for _, f := range []string{"vhu0", "br-t.mgmt", "db.sock", "ovs-vswitchd.ctl"} {
		if fi, err := os.Stat(filepath.Join(d.Dir, f)); err != nil || fi.Mode()&os.ModeSocket == 0 {
			t.Errorf("%s not a socket in %s: %v", f, d.Dir, err)
		}
	}
	rec.Reset()
	rep, _ = ovsRun(t, h, d, spec)
	if st := rep.Steps[0]; st.Status != provision.StatusOK || len(st.Changes) != 0 {
		t.Fatalf("second apply: %+v", st)
	}
	if w := rec.Writes(); len(w) != 0 {
		t.Fatalf("second apply wrote: %q", w)
	}
}

func mustFail(t *testing.T, rep *provision.Report, kindText ...string) {
	t.Helper()
	st := rep.Steps[0]
	if st.Status != provision.StatusFailed {
		t.Fatalf("want failed, got %s (%+v)", st.Status, st)
	}
	all := st.Error + "\ncause: " + st.Cause + "\nfix: " + st.Fix
	for _, k := range kindText {
		if !strings.Contains(all, k) {
			t.Fatalf("report lacks %q:\n%s", k, all)
		}
	}
	if st.Cause == "" || st.Fix == "" {
		t.Fatalf("no cause/fix: %s", all)
	}
}

// Each diagnosis provoked for real against one private OvS-DPDK, in order.
func TestPrivilegedOVSStepDiagnoses(t *testing.T) {
	testutil.RequirePrivileged(t)
	h := host.New("/")
	d := ovstest.Start(t, h, vmOVS())
	base := func(extra ...playbooks.OVSPort) *playbooks.OVSSpec {
		return &playbooks.OVSSpec{Config: vmConfig(), Prune: true, Bridges: []playbooks.OVSBridge{{Name: "br-d",
			Ports: append([]playbooks.OVSPort{{Name: "good0", Devargs: "net_null0"}}, extra...)}}}
	}
	if rep, _ := ovsRun(t, h, d, base()); rep.Steps[0].Status != provision.StatusChanged {
		t.Fatalf("base: %+v", rep.Steps[0])
	}
	t.Run("bad PCI devargs", func(t *testing.T) {
		rep, _ := ovsRun(t, h, d, base(playbooks.OVSPort{Name: "pci0", Devargs: "0000:99:00.0"}))
		mustFail(t, rep, "ovs: port pci0", "Error attaching device '0000:99:00.0'", "PCI device 0000:99:00.0 does not exist", "EAL: Cannot find device (0000:99:00.0)")
	})
	t.Run("malformed devargs", func(t *testing.T) {
		rep, _ := ovsRun(t, h, d, base(playbooks.OVSPort{Name: "mal0", Devargs: "net_null1,foo=bar,,="}))
		mustFail(t, rep, "ovs: port mal0", "malformed devargs", "Driver cannot attach the device (net_null1)")
	})
	t.Run("unknown devargs key", func(t *testing.T) {
		rep, _ := ovsRun(t, h, d, base(playbooks.OVSPort{Name: "mal1", Devargs: "net_null1,nosuchkey=1"}))
		mustFail(t, rep, "ovs: port mal1", "rejected the devargs")
	})
	t.Run("memif socket reuse", func(t *testing.T) {
		sock := filepath.Join(d.Dir, "reuse.sock")
		rep, _ := ovsRun(t, h, d, base(playbooks.OVSPort{Name: "mem1", Devargs: "net_memif1,role=server,socket=" + sock}))
		if rep.Steps[0].Status != provision.StatusChanged {
			t.Fatalf("memif port: %+v", rep.Steps[0])
		}
		rep, _ = ovsRun(t, h, d, base(playbooks.OVSPort{Name: "mem2", Devargs: "net_memif2,role=server,socket=" + sock}))
		mustFail(t, rep, "ovs: port mem2", "memif socket is already in use", "Address already in use")
	})
	t.Run("socket-mem too small", func(t *testing.T) {
		spec := base()
		spec.Config.DPDKSocketMem, spec.Config.DPDKSocketLimit = "16", "16"
		rep, _ := ovsRun(t, h, d, spec)
		mustFail(t, rep, "ovs: port good0", "could not add network device good0 to ofproto", "Failed to create mempool", "dpdk-socket-mem=16 dpdk-socket-limit=16")
	})
	t.Run("DPDK not initialised: more socket-mem than hugepages", func(t *testing.T) {
		n, _ := os.ReadFile("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages")
		pages, _ := strconv.Atoi(strings.TrimSpace(string(n)))
		spec := base()
		spec.Config.DPDKSocketMem = strconv.Itoa(pages*2 + 1024)
		rep, c := ovsRun(t, h, d, spec)
		mustFail(t, rep, "ovs: dpdk", "dpdk-init=try but dpdk_initialized=false", "asks for "+spec.Config.DPDKSocketMem+" MB on socket 0", "Not enough memory available on socket 0")
		st, err := diagnose.ReadStatus(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		if st.OK || st.DPDKInitialized || len(st.Problems) < 2 || st.Problems[1].Kind != diagnose.ProblemNoHugepages || !strings.Contains(st.Problems[1].Error, "Address family not supported") {
			t.Fatalf("status: %+v", st.Problems)
		}
	})
	t.Run("vswitchd killed: stale dpdk_initialized", func(t *testing.T) {
		if rep, _ := ovsRun(t, h, d, base()); rep.Steps[0].Status != provision.StatusChanged {
			t.Fatalf("recover: %+v", rep.Steps[0])
		}
		if err := d.KillVswitchd(context.Background()); err != nil {
			t.Fatal(err)
		}
		c := ovs.NewClient(h, d.Target())
		st, err := diagnose.ReadStatus(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		if !st.DPDKInitialized || !st.DPDKStale || st.Vswitchd.Alive || st.OK || st.Problems[0].Kind != ovs.ProblemVswitchdDown {
			t.Fatalf("status after kill: %+v", st)
		}
		rep, _ := ovsRun(t, h, d, base())
		mustFail(t, rep, "ovs-vswitchd is not running", "dpdk_initialized=true", "stale", "rig ovs daemon start --rundir "+d.Dir)
		var buf strings.Builder
		if err := st.WriteText(&buf); err != nil || !strings.Contains(buf.String(), "STALE") {
			t.Fatalf("text: %v\n%s", err, buf.String())
		}
	})
}

// A pmd-cpu-mask naming CPUs the host does not have fails the plan, before
// any ovs-vsctl runs, naming the mask, the missing CPUs and the online set.
func TestOVSStepUnitPMDMaskOfflineCPUs(t *testing.T) {
	f := fakeOVS(steptest.Sample(t, "state-attached.json"), nil)
	h := systemHost(t, f)
	online := h.Path(cpuset.OnlineFile)
	if err := os.MkdirAll(filepath.Dir(online), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(online, []byte("0-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := vdevSpec()
	spec.Config.PMDCPUMask = "0xe"
	step, _ := NewOVSStep(&provision.Env{Host: h}, spec)
	_, err := step.Check(context.Background())
	p, ok := provision.AsProblem(err)
	if !ok || p.Object != "ovs other_config:pmd-cpu-mask" ||
		!strings.Contains(err.Error(), "pmd-cpu-mask 0xe selects CPU(s) 2-3, which this host does not have online (online CPUs: 0-1") ||
		!strings.Contains(p.Fix(), "0x2 keeps CPU(s) 1") {
		t.Fatalf("got %v", err)
	}
	if len(f.Calls()) != 0 {
		t.Fatalf("ran %q before refusing the mask", f.Calls())
	}
	// no online CPU in the mask: the fix proposes the online ones but CPU 0
	spec.Config.PMDCPUMask = "0xc"
	if _, err := step.Check(context.Background()); err == nil || !strings.Contains(err.Error(), "fix: set ovs.config.pmd-cpu-mask in the playbook to a mask of online CPUs (e.g. 0x2 selects CPU(s) 1)") {
		t.Fatalf("0xc: %v", err)
	}
	// a mask inside the online set plans normally
	spec.Config.PMDCPUMask = "0x2"
	if _, err := step.Check(context.Background()); err != nil {
		t.Fatalf("0x2 on CPUs 0-1: %v", err)
	}
}

// ovs-vswitchd dies while `rig up` writes: the write that waited for it
// times out, and the step says vswitchd died (not just "timeout"), with
// the fix. The kill is real: the exec seam kills the private vswitchd
// just before the add-br runs.
func TestPrivilegedOVSStepVswitchdDiesMidRun(t *testing.T) {
	testutil.RequirePrivileged(t)
	rec := &ovstest.Recorder{}
	h := &host.Host{Root: "/", Exec: rec.Exec}
	d := ovstest.Start(t, h) // no dpdk-init: no hugepages needed
	killed := 0
	rec.Next = func(ctx context.Context, name string, args ...string) ([]byte, error) {
		for _, a := range args {
			if a == "add-br" && killed == 0 {
				killed = d.Status().Vswitchd.PID
				if err := d.KillVswitchd(ctx); err != nil {
					t.Errorf("kill: %v", err)
				}
			}
		}
		return host.RealExec(ctx, name, args...)
	}
	spec := &playbooks.OVSSpec{Bridges: []playbooks.OVSBridge{{Name: "br-die"}}}
	step, err := NewOVSStep(&provision.Env{Host: h, OVSRunDir: d.Dir}, spec)
	if err != nil {
		t.Fatal(err)
	}
	step.(*ovsStep).c.Timeout = 2 // the write waits for vswitchd this long
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := (&provision.Runner{Steps: []provision.Step{step}}).Execute(ctx, provision.RunApply, provision.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	if killed == 0 {
		t.Fatal("no add-br ran")
	}
	t.Logf("error: %s\ncause: %s\nfix: %s", rep.Steps[0].Error, rep.Steps[0].Cause, rep.Steps[0].Fix)
	mustFail(t, rep, "ovs bridge br-die", "ovs-vswitchd died during the write",
		fmt.Sprintf("pid %d from the pidfile is not running", killed), "crashed or was killed during the write",
		"rig ovs daemon start --rundir "+d.Dir)
}

// A rig killed between stopping and starting ovs-vswitchd (the restart
// marker written, vswitchd down) leaves nothing for the user to do: the
// next run sees the marker, says so in its plan, starts ovs-vswitchd and
// converges in one run; the run after changes nothing.
func TestPrivilegedOVSStepResumesInterruptedRestart(t *testing.T) {
	testutil.RequirePrivileged(t)
	rec := &ovstest.Recorder{}
	h := &host.Host{Root: "/", Exec: rec.Exec}
	d := ovstest.Start(t, h, vmOVS())
	spec := &playbooks.OVSSpec{Config: vmConfig(), Bridges: []playbooks.OVSBridge{{Name: "br-r", Ports: []playbooks.OVSPort{
		{Name: "rnull0", Devargs: "net_null0"}}}}}
	if rep, _ := ovsRun(t, h, d, spec); rep.Steps[0].Status != provision.StatusChanged {
		t.Fatalf("first apply: %+v", rep.Steps[0])
	}
	if _, pending := d.InterruptedRestart(); pending {
		t.Fatal("restart marker left after a finished restart")
	}
	// what a rig killed mid-restart leaves: the marker, and vswitchd stopped
	ctx := context.Background()
	if err := d.BeginRestart(); err != nil {
		t.Fatal(err)
	}
	if err := d.StopVswitchd(ctx); err != nil {
		t.Fatal(err)
	}
	if d.Status().Vswitchd.Alive {
		t.Fatal("vswitchd still running")
	}
	rep, c := ovsRun(t, h, d, spec)
	st := rep.Steps[0]
	if st.Status != provision.StatusChanged {
		t.Fatalf("run after the interrupted restart: %s: %s (cause %s, fix %s)", st.Status, st.Error, st.Cause, st.Fix)
	}
	var said bool
	for _, ch := range st.Changes {
		if ch.Object == "ovs-vswitchd" && strings.Contains(ch.To, "an earlier rig run stopped it to restart it and was interrupted") &&
			strings.Contains(ch.To, filepath.Join(d.Dir, ovs.RestartMarker)) {
			said = true
		}
	}
	if !said {
		t.Errorf("plan does not say it finishes the interrupted restart: %+v", st.Changes)
	}
	if _, pending := d.InterruptedRestart(); pending {
		t.Error("restart marker left after the restart finished")
	}
	status, err := diagnose.ReadStatus(ctx, c)
	if err != nil || !status.OK || !status.Vswitchd.Alive || !status.DPDKInitialized {
		t.Fatalf("status after: %+v %v", status, err)
	}
	rec.Reset()
	if rep, _ := ovsRun(t, h, d, spec); rep.Steps[0].Status != provision.StatusOK || len(rec.Writes()) != 0 {
		t.Fatalf("second run: %+v, writes %q", rep.Steps[0], rec.Writes())
	}
}
