package check

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"rig/bench"
	"rig/internal/host"
	"rig/internal/testutil/fakeexec"
	"rig/ovs"
	"rig/ovs/ovstest"
	"rig/playbooks"
	"rig/provision"
	"rig/provision/steptest"
)

// ---- leftovers: plan and cleanup through the real clients, exact argv ----

// leftoverState is the recorded state with the bridge's vnull0 renamed to
// a check port a killed run left behind.
func leftoverState(t *testing.T) []byte {
	return bytes.ReplaceAll(steptest.Sample(t, "state-attached.json"), []byte(`"vnull0"`), []byte(`"rig-chk-in"`))
}

// dumpFlows is `ovs-ofctl dump-flows BR cookie=.../-1` output with n flows.
func dumpFlows(n int) []byte {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, " cookie=0x7269672d63686b, duration=12.345s, table=0, n_packets=%d, n_bytes=0, priority=65535,in_port=%d actions=output:%d\n", i, i+1, i+2)
	}
	return []byte(b.String())
}

// fakeCheckExec answers the state reads (before: with leftovers; after
// the first write: clean) and dump-flows (2 flows before, 0 after).
func fakeCheckExec(t *testing.T) *fakeexec.Recorder {
	wrote := false
	before, after := leftoverState(t), steptest.Sample(t, "state-attached.json")
	return &fakeexec.Recorder{Answer: func(name string, args []string) ([]byte, error, bool) {
		argv := append([]string{name}, args...)
		switch {
		case ovstest.IsRead(argv) && wrote:
			return after, nil, true
		case ovstest.IsRead(argv):
			return before, nil, true
		case isDumpFlows(argv) && !wrote:
			return dumpFlows(2), nil, true
		case isDumpFlows(argv):
			return nil, nil, true
		}
		wrote = true
		return nil, nil, true
	}}
}

func checkWrites(r *fakeexec.Recorder) [][]string {
	return r.Filter(func(argv []string) bool {
		return !ovstest.IsRead(argv) && !isDumpFlows(argv)
	})
}

func isDumpFlows(argv []string) bool {
	return argv[0] == "ovs-ofctl" && len(argv) > 3 && argv[3] == "dump-flows"
}

func TestCheckStepPlansAndCleansLeftoversExactArgv(t *testing.T) {
	f := fakeCheckExec(t)
	rundir := t.TempDir()
	env := &Env{Env: provision.Env{Host: &host.Host{Root: "/", Exec: f.Exec}, OVSRunDir: rundir}}
	step, err := NewCheckStep(env, &playbooks.CheckSpec{Bridge: "br-vdev"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := step.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []provision.Change{
		{Object: "bridge br-vdev", Action: "remove leftover port rig-chk-in (a check that did not finish)"},
		{Object: "bridge br-vdev", Action: "remove 2 leftover flow(s) with rig's cookie 0x7269672d63686b"},
	}
	if got := plan.Changes(); !reflect.DeepEqual(got, want) {
		t.Fatalf("plan:\n got %+v\nwant %+v", got, want)
	}
	if w := checkWrites(f); len(w) != 0 {
		t.Fatalf("Check wrote: %q", w)
	}
	if err := plan.Apply(context.Background()); err != nil {
		t.Fatal(err)
	}
	wantArgv := [][]string{
		{"ovs-vsctl", "--db=unix:" + rundir + "/db.sock", "--timeout=15", "--if-exists", "del-port", "br-vdev", "rig-chk-in"},
		{"ovs-ofctl", "--timeout=15", "-OOpenFlow10,OpenFlow11,OpenFlow12,OpenFlow13,OpenFlow14,OpenFlow15", "del-flows", "unix:" + rundir + "/br-vdev.mgmt", "cookie=0x7269672d63686b/-1"},
	}
	if got := checkWrites(f); !reflect.DeepEqual(got, wantArgv) {
		t.Fatalf("writes:\n got %q\nwant %q", got, wantArgv)
	}
	// the re-check finds nothing left
	again, err := step.Check(context.Background())
	if err != nil || !again.Satisfied() {
		t.Fatalf("after cleanup: %+v, %v", again.Changes(), err)
	}
}

func TestCheckStepRefusesMissingBridge(t *testing.T) {
	f := fakeCheckExec(t)
	env := &Env{Env: provision.Env{Host: &host.Host{Root: "/", Exec: f.Exec}, OVSRunDir: t.TempDir()}}
	step, _ := NewCheckStep(env, &playbooks.CheckSpec{Bridge: "br-nope"}, nil)
	_, err := step.Check(context.Background())
	var p *provision.Problem
	if !errors.As(err, &p) || !strings.Contains(err.Error(), "check: bridge br-nope: no such bridge") || p.Fix() == "" {
		t.Fatalf("got %v", err)
	}
	// a bridge the playbook's ovs step creates is fine in a plan
	step, _ = NewCheckStep(env, &playbooks.CheckSpec{}, &playbooks.OVSSpec{Bridges: []playbooks.OVSBridge{{Name: "br-nope"}}})
	plan, err := step.Check(context.Background())
	if err != nil || !strings.Contains(strings.Join(plan.Notes, "\n"), "the ovs step creates it") {
		t.Fatalf("plan %+v, %v", plan, err)
	}
	if n := step.(*checkStep).Needs(); len(n) != 1 || n[0].Step != "ovs" {
		t.Fatalf("needs %v", n)
	}
}

// ---- the measurement, with a fake OvS and a fake dataplane ----

// fakeCheckOVS is OvS as the check sees it: ports appear attached when
// added, counters move by what the fake dataplane sends.
type fakeCheckOVS struct {
	st        *ovs.State
	calls     []string
	flows     int
	counters  map[string]ovs.Counters
	attachErr string // set: added ports get this Interface error
	lastOF    int64
	dpflows   string      // what dpctl/dump-flows -m prints
	dpErr     error       // set: the dump fails
	log       ovs.LogTail // the vswitchd log since its start
}

func newFakeCheckOVS() *fakeCheckOVS {
	return &fakeCheckOVS{
		st:       &ovs.State{OtherConfig: map[string]string{"pmd-cpu-mask": "0x2"}, Bridges: []ovs.Bridge{{Name: "br0", DatapathType: "netdev"}}},
		counters: map[string]ovs.Counters{},
	}
}

func (f *fakeCheckOVS) ReadState(ctx context.Context) (*ovs.State, error) { return f.st, nil }
func (f *fakeCheckOVS) AddPort(ctx context.Context, br, port string, s ovs.IfaceSettings) error {
	f.calls = append(f.calls, fmt.Sprintf("add-port %s %s type=%s vhost-server-path=%s devargs=%s", br, port, s.Type, s.VhostServerPath, s.Devargs))
	b := &f.st.Bridges[0]
	f.lastOF++ // OvS gives a port added again a new number
	b.Ports = append(b.Ports, ovs.Port{Name: port, Interfaces: []ovs.Interface{{Name: port, Bridge: br, Port: port, OFPort: f.lastOF, Error: f.attachErr}}})
	return nil
}
func (f *fakeCheckOVS) DeletePort(ctx context.Context, br, port string) error {
	f.calls = append(f.calls, "del-port "+br+" "+port)
	delete(f.counters, port) // a port added again counts from 0
	b := &f.st.Bridges[0]
	for i, p := range b.Ports {
		if p.Name == port {
			b.Ports = append(b.Ports[:i], b.Ports[i+1:]...)
			break
		}
	}
	return nil
}
func (f *fakeCheckOVS) AddFlows(ctx context.Context, br string, flows ...string) error {
	f.calls = append(f.calls, "add-flow "+br+" "+strings.Join(flows, " "))
	f.flows += len(flows)
	return nil
}
func (f *fakeCheckOVS) DelFlowsByCookie(ctx context.Context, br string, cookie uint64) error {
	f.calls = append(f.calls, fmt.Sprintf("del-flows %s %#x", br, cookie))
	f.flows = 0
	return nil
}
func (f *fakeCheckOVS) FlowsByCookie(ctx context.Context, br string, cookie uint64) ([]string, error) {
	return make([]string, f.flows), nil
}
func (f *fakeCheckOVS) PortCounters(ctx context.Context, br string) (map[string]ovs.Counters, error) {
	out := map[string]ovs.Counters{}
	for p, c := range f.counters {
		out[p] = c
	}
	return out, nil
}
func (f *fakeCheckOVS) ClearPMDStats(ctx context.Context) error { return nil }
func (f *fakeCheckOVS) DumpDPFlows(ctx context.Context, typ string) (*ovs.DPFlowDump, error) {
	f.calls = append(f.calls, "dpctl/dump-flows -m")
	d := &ovs.DPFlowDump{Argv: []string{"ovs-appctl", "dpctl/dump-flows", "-m"}}
	if f.dpErr != nil {
		return d, f.dpErr
	}
	flows, err := ovs.ParseDPFlows([]byte(f.dpflows))
	d.Flows = flows
	var pe *ovs.DPFlowParseError
	if errors.As(err, &pe) { // as the real one: lines it cannot read are not an error
		d.Unreadable = pe.Lines
	}
	return d, nil
}
func (f *fakeCheckOVS) LogSinceStart() ovs.LogTail { return f.log }
func (f *fakeCheckOVS) PMDStats(ctx context.Context) ([]ovs.PMDStats, error) {
	return []ovs.PMDStats{{Thread: "pmd thread numa_id 0 core_id 1", CoreID: 1, RxPackets: 100, AvgCyclesPerPacket: 250, ProcessingPct: 40, IdlePct: 60}}, nil
}

// fakeDataplane sends sent frames; OvS's ingress drops rxDrop of them,
// its egress tx drops txDrop, and rig's receiver misses rigMiss.
type fakeDataplane struct {
	o                             *fakeCheckOVS
	sent, rxDrop, txDrop, rigMiss uint64
	cfgs                          []bench.Config
	hold                          bool // stay "connected" past the duration, as the real one does (Config.Hold)
	// per held run: whether the check released the hold before Hold ran
	// out, and how many OvS calls it had made by then
	released       []bool
	callsAtRelease []int
}

func (d *fakeDataplane) Run(ctx context.Context, cfg bench.Config) (*bench.Result, error) {
	d.cfgs = append(d.cfgs, cfg)
	if strings.HasPrefix(cfg.VDevs[0], "net_virtio_user") {
		// OvS restarts a vhost-user port's counters when its peer connects
		delete(d.o.counters, "rig-chk-in")
		delete(d.o.counters, "rig-chk-out")
	}
	in, out := d.o.counters["rig-chk-in"], d.o.counters["rig-chk-out"]
	in.RxPackets += d.sent - d.rxDrop
	in.RxDropped += d.rxDrop
	out.TxPackets += d.sent - d.rxDrop - d.txDrop
	out.TxDropped += d.txDrop
	d.o.counters["rig-chk-in"], d.o.counters["rig-chk-out"] = in, out
	rx := d.sent - d.rxDrop - d.txDrop - d.rigMiss
	secs := cfg.Duration.Seconds()
	if d.hold {
		time.Sleep(cfg.Duration)
		if cfg.Release == nil {
			time.Sleep(cfg.Hold)
		} else {
			cfg.Release.SetMeasured()
			select {
			case <-cfg.Release.Release:
				d.released, d.callsAtRelease = append(d.released, true), append(d.callsAtRelease, len(d.o.calls))
			case <-time.After(cfg.Hold):
				d.released, d.callsAtRelease = append(d.released, false), append(d.callsAtRelease, -1)
			}
		}
	}
	return &bench.Result{Role: bench.RoleLoop, FrameSize: cfg.FrameSize, DurationS: secs, Sent: d.sent, Received: rx, Lost: int64(d.sent - rx),
		LinkSpeedGbps: 10, LinkSpeedSource: "port",
		Ports: []bench.PortStats{{Name: "net_virtio_user0", Driver: "net_virtio_user", TxPkts: d.sent, TxMpps: float64(d.sent) / secs / 1e6},
			{Name: "net_virtio_user1", Driver: "net_virtio_user", RxPkts: rx, RxMpps: float64(rx) / secs / 1e6}},
		Latency: &bench.Latency{Samples: 10, P50Us: 5, P99Us: 9, MaxUs: 20}}, nil
}

func checkEnv(t *testing.T, dp Dataplane) *Env {
	return &Env{Env: provision.Env{Host: &host.Host{Root: "/", Exec: (&fakeexec.Recorder{}).Exec}, OVSRunDir: t.TempDir()},
		Dataplane: func(string) Dataplane { return dp }}
}

func newTestCheck(t *testing.T, spec *playbooks.CheckSpec, o *fakeCheckOVS, dp *fakeDataplane) *checkStep {
	dp.o = o
	step, err := NewCheckStep(checkEnv(t, dp), spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := step.(*checkStep)
	s.o = o
	return s
}

func TestCheckMeasureThroughBridgePassesAndRemovesWhatItAdded(t *testing.T) {
	o := newFakeCheckOVS()
	dp := &fakeDataplane{sent: 10_000_000}
	spec := &playbooks.CheckSpec{Rate: "max", Bridge: "br0", Duration: "5s", Warmup: "1s", Flows: 4, Thresholds: playbooks.CheckThresholds{MinMpps: 1, MaxLossPct: 0.1}}
	s := newTestCheck(t, spec, o, dp)
	out, err := s.Measure(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	res := out.(*CheckResult)
	if !res.Pass || len(res.Runs) != 1 || res.Runs[0].RxMpps != 2 || res.Runs[0].LossPct != 0 || !res.Runs[0].Loss.Agree {
		t.Fatalf("result: %+v", res)
	}
	sock := s.sockDir()
	want := []string{
		"add-port br0 rig-chk-in type=dpdkvhostuserclient vhost-server-path=" + sock + "/in.sock devargs=",
		"add-port br0 rig-chk-out type=dpdkvhostuserclient vhost-server-path=" + sock + "/out.sock devargs=",
		"add-flow br0 cookie=0x7269672d63686b,priority=65535,in_port=1,actions=output:2",
		"dpctl/dump-flows -m", // offload: preferred (the default): the traffic's datapath flows
		"del-flows br0 0x7269672d63686b",
		"del-port br0 rig-chk-in",
		"del-port br0 rig-chk-out",
	}
	if !reflect.DeepEqual(o.calls, want) {
		t.Fatalf("calls:\n got %q\nwant %q", o.calls, want)
	}
	if len(o.st.Bridges[0].Ports) != 0 || o.flows != 0 {
		t.Fatalf("left behind: %+v, %d flows", o.st.Bridges[0].Ports, o.flows)
	}
	// warm-up run, then the measured run: same traffic, its own duration
	if len(dp.cfgs) != 2 || dp.cfgs[0].Duration.String() != "1s" || dp.cfgs[1].Duration.String() != "5s" || dp.cfgs[1].SPort != "1024-1027" ||
		dp.cfgs[1].VDevs[0] != "net_virtio_user0,path="+sock+"/in.sock,server=1,queues=1" || !strings.Contains(dp.cfgs[1].Lcores, "1@") {
		t.Fatalf("dataplane configs: %+v", dp.cfgs)
	}
	// counted once: the warm-up's frames are not in the deltas
	if d := res.Runs[0].OVS[0].Counters.RxPackets; d != 10_000_000 {
		t.Fatalf("ingress rx delta %d", d)
	}
	var text bytes.Buffer
	_ = res.WriteText(&text)
	for _, w := range []string{"2.000 Mpps", "counts agree", "threshold min_mpps 1: measured 2: pass", "check: PASS", "250 cycles/packet"} {
		if !strings.Contains(text.String(), w) {
			t.Errorf("text lacks %q:\n%s", w, text.String())
		}
	}
	if res.Runs[0].LinkGbps != 0 {
		t.Errorf("virtio_user's nominal speed taken as a line rate")
	}
	b, _ := json.Marshal(res)
	if !strings.Contains(string(b), `"schemaVersion":"rig.check/v2"`) {
		t.Fatalf("json %s", b)
	}
}

func TestCheckMeasureBelowThresholdNamesIt(t *testing.T) {
	o := newFakeCheckOVS()
	dp := &fakeDataplane{sent: 1_000_000, txDrop: 50_000}
	spec := &playbooks.CheckSpec{Rate: "max", Bridge: "br0", Duration: "1s", Warmup: "0s", Thresholds: playbooks.CheckThresholds{MinMpps: 5, MaxLossPct: 1}}
	s := newTestCheck(t, spec, o, dp)
	out, err := s.Measure(context.Background())
	var bt *BelowThresholdError
	if !errors.As(err, &bt) || len(bt.Failed) != 2 {
		t.Fatalf("got %v", err)
	}
	msg := err.Error()
	for _, w := range []string{"min_mpps (64 B) 5: measured 0.95", "max_loss_pct (64 B) 1: measured 5"} {
		if !strings.Contains(msg, w) {
			t.Errorf("error lacks %q: %s", w, msg)
		}
	}
	res := out.(*CheckResult)
	if res.Pass || res.Runs[0].Loss.Stages[0].Where != StageOVSTx || len(dp.cfgs) != 1 {
		t.Fatalf("result %+v", res.Runs[0].Loss)
	}
	if len(o.st.Bridges[0].Ports) != 0 || o.flows != 0 {
		t.Fatal("a failed check left ports or flows")
	}
}

func TestCheckMeasurePortErrorNamesPortAndCleansUp(t *testing.T) {
	o := newFakeCheckOVS()
	o.attachErr = "could not open network device rig-chk-in (No such device)"
	s := newTestCheck(t, &playbooks.CheckSpec{Rate: "max", Bridge: "br0"}, o, &fakeDataplane{sent: 1})
	_, err := s.Measure(context.Background())
	if err == nil || !strings.Contains(err.Error(), "check: port rig-chk-in: OvS: could not open network device") {
		t.Fatalf("got %v", err)
	}
	if len(o.st.Bridges[0].Ports) != 0 {
		t.Fatalf("ports left: %+v", o.st.Bridges[0].Ports)
	}
}

func TestCheckMeasureInvalidIsNeverAPass(t *testing.T) {
	o := newFakeCheckOVS()
	s := newTestCheck(t, &playbooks.CheckSpec{Rate: "max", Bridge: "br0", Warmup: "0s"}, o, &fakeDataplane{sent: 0})
	out, err := s.Measure(context.Background())
	var bt *BelowThresholdError
	var inv *InvalidMeasurementError
	if !errors.As(err, &inv) || errors.As(err, &bt) || !strings.Contains(err.Error(), "invalid measurement: 64 B: the generator sent no frame") {
		t.Fatalf("got %v", err)
	}
	if out.(*CheckResult).Pass {
		t.Fatal("invalid run passed")
	}
}

// Apply twice through the runner: the second apply has no change; the
// check runs again (its traffic is no change) and its result is in the report.
func TestCheckStepApplyTwiceRunsCheckEachTime(t *testing.T) {
	o := newFakeCheckOVS()
	o.st.Bridges[0].Ports = []ovs.Port{{Name: "rig-chk-out", Interfaces: []ovs.Interface{{Name: "rig-chk-out", OFPort: 7}}}}
	o.flows = 1
	dp := &fakeDataplane{sent: 1000}
	s := newTestCheck(t, &playbooks.CheckSpec{Rate: "max", Bridge: "br0", Warmup: "0s", Duration: "1s"}, o, dp)
	for i, want := range []provision.Status{provision.StatusChanged, provision.StatusOK} {
		rep, err := (&provision.Runner{Steps: []provision.Step{s}}).Execute(context.Background(), provision.RunApply, provision.Selection{})
		if err != nil {
			t.Fatal(err)
		}
		st := rep.Steps[0]
		if st.Status != want || st.Result == nil || !st.Result.(*CheckResult).Pass {
			t.Fatalf("apply %d: %+v", i+1, st)
		}
		if i == 1 && len(st.Changes) != 0 {
			t.Fatalf("second apply changed %v", st.Changes)
		}
	}
	if len(dp.cfgs) != 2 {
		t.Fatalf("the check ran %d times, want once per apply", len(dp.cfgs))
	}
	// a plan never runs traffic
	rep, _ := (&provision.Runner{Steps: []provision.Step{s}}).Execute(context.Background(), provision.RunPlan, provision.Selection{})
	if rep.Steps[0].Result != nil || len(dp.cfgs) != 2 {
		t.Fatal("a plan ran the check")
	}
}

func TestCheckRunnerReportsBelowThreshold(t *testing.T) {
	o := newFakeCheckOVS()
	s := newTestCheck(t, &playbooks.CheckSpec{Rate: "max", Bridge: "br0", Warmup: "0s", Duration: "1s", Thresholds: playbooks.CheckThresholds{MinMpps: 100}}, o, &fakeDataplane{sent: 1000})
	rep, _ := (&provision.Runner{Steps: []provision.Step{s}}).Execute(context.Background(), provision.RunApply, provision.Selection{})
	st := rep.Steps[0]
	if st.Status != provision.StatusFailed || st.Phase != provision.PhaseMeasure || !st.BelowThreshold || rep.Summary.BelowThreshold != 1 || st.Result == nil {
		t.Fatalf("%+v", st)
	}
	var text bytes.Buffer
	_ = rep.WriteText(&text)
	if !strings.Contains(text.String(), "  | check: FAIL") || !strings.Contains(text.String(), "min_mpps (64 B) 100: measured 0.001") {
		t.Fatalf("text:\n%s", text.String())
	}
}

// ---- loss attribution: numbers in, verdict out ----

func TestAttributeLoss(t *testing.T) {
	cases := []struct {
		name   string
		p      PathCounts
		where  string // the stage with the most frames ("" = no loss)
		frames int64
		agree  bool
	}{
		{"clean", PathCounts{Sent: 1000, Received: 1000, Ingress: ovs.Counters{RxPackets: 1000}, Egress: ovs.Counters{TxPackets: 1000}}, "", 0, true},
		{"rx queue", PathCounts{Sent: 1000, Received: 900, Ingress: ovs.Counters{RxPackets: 900, RxDropped: 100, Custom: map[string]uint64{"rx_missed_errors": 40}}, Egress: ovs.Counters{TxPackets: 900}}, StageOVSRxQueue, 100, true},
		{"inside ovs", PathCounts{Sent: 1000, Received: 700, Ingress: ovs.Counters{RxPackets: 1000}, Egress: ovs.Counters{TxPackets: 700}}, StageInsideOVS, 300, true},
		{"ovs tx", PathCounts{Sent: 1000, Received: 800, Ingress: ovs.Counters{RxPackets: 1000}, Egress: ovs.Counters{TxPackets: 800, TxDropped: 200, Custom: map[string]uint64{"ovs_tx_failure_drops": 200}}}, StageOVSTx, 200, true},
		{"rig", PathCounts{Sent: 1000, Received: 500, Ingress: ovs.Counters{RxPackets: 1000}, Egress: ovs.Counters{TxPackets: 1000}}, StageRig, 500, false},
		{"before ovs", PathCounts{Sent: 1000, Received: 990, Ingress: ovs.Counters{RxPackets: 990}, Egress: ovs.Counters{TxPackets: 990}}, StageBeforeOVS, 10, true},
		{"within 0.1%", PathCounts{Sent: 100000, Received: 99950, Ingress: ovs.Counters{RxPackets: 100000}, Egress: ovs.Counters{TxPackets: 100000}}, StageRig, 50, true},
	}
	for _, c := range cases {
		a := AttributeLoss(c.p)
		if a.Agree != c.agree {
			t.Errorf("%s: agree %v, want %v (%s)", c.name, a.Agree, c.agree, a.Mismatch)
		}
		if c.where == "" {
			if len(a.Stages) != 0 || a.Lost != 0 || !strings.HasPrefix(a.Verdict, "no loss") {
				t.Errorf("%s: %+v", c.name, a)
			}
			continue
		}
		if !strings.Contains(a.Verdict, "most "+c.where) || !strings.Contains(a.Verdict, fmt.Sprintf("(%d:", c.frames)) {
			t.Errorf("%s: verdict %q, want most %s (%d)", c.name, a.Verdict, c.where, c.frames)
		}
		if !c.agree && !strings.Contains(a.Mismatch, "apart") {
			t.Errorf("%s: mismatch %q", c.name, a.Mismatch)
		}
	}
}

func TestLcoreListAndFarEndNetdev(t *testing.T) {
	for _, c := range []struct {
		cores int
		cpus  []int
		want  string
	}{{1, []int{0}, "0@0,1@0"}, {1, []int{0, 2}, "0@0,1@2"}, {2, []int{0, 1}, "0@0,1@0,2@1"}, {2, []int{3, 1, 2}, "0@1,1@2,2@3"}} {
		if got := LcoreList(c.cores, c.cpus); got != c.want {
			t.Errorf("LcoreList(%d, %v) = %s, want %s", c.cores, c.cpus, got, c.want)
		}
	}
	if FarEndNetdev("p0", "net_af_packet0,iface=veth-a,qpairs=1") != "veth-a" || FarEndNetdev("p0", "0000:03:00.0") != "p0" || FarEndNetdev("p0", "") != "p0" {
		t.Fatal("FarEndNetdev")
	}
}

// The dataplane's own verdict (bench.Result.Invalid) fails the check,
// exit 5 through the report, never a pass.
type invalidDataplane struct{ fakeDataplane }

func (d *invalidDataplane) Run(ctx context.Context, cfg bench.Config) (*bench.Result, error) {
	r, err := d.fakeDataplane.Run(ctx, cfg)
	r.Invalid = []string{"received 5 frames without rig's stamp"}
	return r, err
}

func TestCheckBenchInvalidFailsTheStep(t *testing.T) {
	o := newFakeCheckOVS()
	dp := &invalidDataplane{fakeDataplane{sent: 1000, o: o}}
	step, _ := NewCheckStep(checkEnv(t, dp), &playbooks.CheckSpec{Rate: "max", Bridge: "br0", Warmup: "0s", Duration: "1s"}, nil)
	step.(*checkStep).o = o
	rep, _ := (&provision.Runner{Steps: []provision.Step{step}}).Execute(context.Background(), provision.RunApply, provision.Selection{})
	st := rep.Steps[0]
	if st.Status != provision.StatusFailed || !st.InvalidMeasurement || st.BelowThreshold || rep.Summary.Invalid != 1 ||
		!strings.Contains(st.Error, "invalid measurement: 64 B: received 5 frames without rig's stamp") || st.Result.(*CheckResult).Pass {
		t.Fatalf("%+v", st)
	}
}

func TestCheckMeasureMemifPortsAndQueues(t *testing.T) {
	o := newFakeCheckOVS()
	dp := &fakeDataplane{sent: 1000}
	s := newTestCheck(t, &playbooks.CheckSpec{Rate: "max", Bridge: "br0", Transport: "memif", Warmup: "0s", Duration: "1s"}, o, dp)
	out, err := s.Measure(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if w := out.(*CheckResult).Runs[0].Warnings; !slices.Contains(w, memifServerNote) {
		t.Errorf("warnings %q: the memif transport's risk to ovs-vswitchd is not said", w)
	}
	sock := s.sockDir()
	if o.calls[0] != "add-port br0 rig-chk-in type=dpdk vhost-server-path= devargs=net_memif_rigchk0,role=server,id=0,socket="+sock+"/in.sock,socket-abstract=no" {
		t.Fatalf("calls %q", o.calls)
	}
	c := dp.cfgs[0]
	if c.VDevs[1] != "net_memif1,role=client,id=0,socket="+sock+"/out.sock,socket-abstract=no" || c.RxQ != 2 || c.TxQ != 1 {
		t.Fatalf("config %+v", c)
	}
}

// memif: once a run's traffic is over, rig deletes its memif server ports
// while its clients still hold their links (DPDK 22.11's memif server in
// OvS must not see its client leave under a polling PMD), adds them again
// for the measured run with the flows pointed at their new OpenFlow
// numbers, and counts that run from the fresh ports' zero: the figures are
// the measured run's alone, read during its hold.
func TestCheckMemifPortsClosedByOVSFirstAndReadded(t *testing.T) {
	o := newFakeCheckOVS()
	dp := &fakeDataplane{sent: 1000, hold: true}
	s := newTestCheck(t, &playbooks.CheckSpec{Rate: "max", Bridge: "br0", Transport: "memif", Warmup: "100ms", Duration: "100ms"}, o, dp)
	out, err := s.Measure(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r := out.(*CheckResult).Runs[0]
	if r.OVS[0].Counters.RxPackets != 1000 || r.OVS[1].Counters.TxPackets != 1000 || !r.Loss.Agree {
		t.Fatalf("deltas %+v, loss %+v", r.OVS, r.Loss)
	}
	var calls []string
	for _, c := range o.calls {
		if !strings.HasPrefix(c, "add-port") {
			calls = append(calls, c)
			continue
		}
		calls = append(calls, strings.Join(strings.Fields(c)[:3], " "))
	}
	want := []string{"add-port br0 rig-chk-in", "add-port br0 rig-chk-out", "add-flow br0 " + flowInOut(1, 2),
		"del-port br0 rig-chk-in", "del-port br0 rig-chk-out", // the warm-up's traffic over
		"add-port br0 rig-chk-in", "add-port br0 rig-chk-out", fmt.Sprintf("del-flows br0 %#x", CheckCookie), "add-flow br0 " + flowInOut(3, 4),
		"del-port br0 rig-chk-in", "del-port br0 rig-chk-out", // the measured run's
		"dpctl/dump-flows -m",                                                                                // the run's datapath flows (offload: preferred)
		fmt.Sprintf("del-flows br0 %#x", CheckCookie), "del-port br0 rig-chk-in", "del-port br0 rig-chk-out"} // teardown
	if strings.Join(calls, "\n") != strings.Join(want, "\n") {
		t.Errorf("calls:\n%s\nwant:\n%s", strings.Join(calls, "\n"), strings.Join(want, "\n"))
	}
	// each run's hold ended early, and only once OvS's memif ports were
	// gone (the warm-up's after call 5, the measured run's after call 11)
	if fmt.Sprint(dp.released) != "[true true]" || fmt.Sprint(dp.callsAtRelease) != "[5 11]" {
		t.Errorf("holds released %v after OvS call %v; want [true true] after [5 11] (the del-ports)", dp.released, dp.callsAtRelease)
	}
}

// A vhost-user run's hold ends once the run is measured and the path's
// counters read still after that, not when Hold runs out; the counters
// read meanwhile are the run's.
func TestCheckReleasesHoldWhenCountersSettle(t *testing.T) {
	o := newFakeCheckOVS()
	dp := &fakeDataplane{sent: 1000, rxDrop: 3, hold: true}
	s := newTestCheck(t, &playbooks.CheckSpec{Rate: "max", Bridge: "br0", Warmup: "100ms", Duration: "100ms", Thresholds: playbooks.CheckThresholds{MaxLossPct: 1}}, o, dp)
	out, err := s.Measure(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r := out.(*CheckResult).Runs[0]
	if r.OVS[0].Counters.RxPackets != 997 || r.OVS[0].Counters.RxDropped != 3 || r.OVS[1].Counters.TxPackets != 997 {
		t.Fatalf("deltas %+v", r.OVS)
	}
	if fmt.Sprint(dp.released) != "[true true]" {
		t.Errorf("holds released early: %v, want [true true] (warm-up, run)", dp.released)
	}
}

// The check's runs settle their links only where OvS's side of them is
// the check's own new port; a memif path's queues follow OvS's PMDs.
func TestCheckConfigByPath(t *testing.T) {
	sp := &playbooks.CheckSpec{Flows: 4, Cores: 2}
	for _, c := range []struct {
		kind     pathKind
		settle   time.Duration
		rxq, txq int
	}{{pathVhost, linkSettle, 0, 0}, {pathMemif, linkSettle, 3, 1}, {pathPorts, 0, 0, 0}} {
		cfg := checkConfig(sp, c.kind, []string{"a", "b"}, "0@0,1@1,2@1", 2)
		if cfg.Settle != c.settle || cfg.RxQ != c.rxq || cfg.TxQ != c.txq || cfg.Hold != counterHold || cfg.SPort != "1024-1027" || cfg.Cores != 2 {
			t.Errorf("path %d: %+v; want settle %v, rxq %d txq %d", c.kind, cfg, c.settle, c.rxq, c.txq)
		}
	}
}

// A representor list with a comma inside its brackets survives the check's
// reading of a port's devargs: the far end netdev of an af_packet port is
// its iface= however its other options are bracketed, and a PCI port with a
// representor list keeps its own name.
func TestRepresentorListSurvivesCheck(t *testing.T) {
	if got := FarEndNetdev("pf0hpf", "0000:03:00.0,representor=[0,65535]"); got != "pf0hpf" {
		t.Errorf("PCI port: %q", got)
	}
	if got := FarEndNetdev("p0", "net_af_packet0,x=[0,iface=wrong],iface=veth-a"); got != "veth-a" {
		t.Errorf("af_packet port after a bracketed option: %q, want veth-a", got)
	}
}
