package check

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"rig/bench"
	"rig/ovs"
	"rig/playbooks"
	"rig/provision"
)

// queueDataplane is a path that carries capPPS: below it every frame
// arrives after 20 us (p99); above it the excess is lost and the queue in
// front of the bottleneck holds frames 50 ms (bench's saturation note).
type queueDataplane struct{ cappedDataplane }

func (d *queueDataplane) Run(ctx context.Context, cfg bench.Config) (*bench.Result, error) {
	r, err := d.cappedDataplane.Run(ctx, cfg)
	if err != nil {
		return r, err
	}
	r.Ports[0].TxMpps = float64(r.Sent) / r.DurationS / 1e6
	r.Ports[1].RxMpps = float64(r.Received) / r.DurationS / 1e6
	r.Latency = &bench.Latency{Samples: r.Received, P50Us: 10, P99Us: 20, MaxUs: 30}
	if r.Received < r.Sent {
		r.Latency = &bench.Latency{Samples: r.Received, P50Us: 50000, P99Us: 60000, MaxUs: 70000, Saturated: "lost frames: a queue on the path overflowed"}
	}
	return r, nil
}

func verdictCheck(t *testing.T, spec *playbooks.CheckSpec, capPPS float64) (*checkStep, *queueDataplane, *bytes.Buffer) {
	t.Helper()
	dp := &queueDataplane{cappedDataplane{capPPS: capPPS}}
	var progress bytes.Buffer
	step, err := NewCheckStep(&Env{Env: provision.Env{Host: checkEnv(t, nil).Host, OVSRunDir: t.TempDir()}, Dataplane: func(string) Dataplane { return dp }, Progress: &progress}, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := step.(*checkStep)
	s.o, s.trialGap = newFakeCheckOVS(), 0
	return s, dp, &progress
}

func verdictNames(ts []ThresholdVerdict) string {
	var n []string
	for _, t := range ts {
		n = append(n, t.Name)
	}
	return strings.Join(n, ",")
}

// As fast as possible through a path that carries 300 kpps: the run is an
// overload, reported with the capacity it measured, and fails the (default)
// loss budget; it never passes. Its latency is queueing and not judged;
// max_p99_us is judged in a run at half that capacity, where it passes.
func TestCheckAsFastAsPossibleOverloadFailsNamingCapacity(t *testing.T) {
	spec := &playbooks.CheckSpec{Bridge: "br0", Duration: "1s", Warmup: "0s", Rate: "max", Thresholds: playbooks.CheckThresholds{MinMpps: 0.1, MaxP99Us: 100}}
	s, dp, progress := verdictCheck(t, spec, 300e3)
	out, err := s.Measure(context.Background())
	res := out.(*CheckResult)
	var bt *BelowThresholdError
	if !errors.As(err, &bt) || res.Pass || len(bt.Failed) != 1 || !strings.HasPrefix(bt.Failed[0].Name, "max_loss_pct") || !strings.Contains(bt.Failed[0].Note, "overloaded at capacity 0.300 Mpps") {
		t.Fatalf("%v: want the loss budget failed, naming the capacity", err)
	}
	r := res.Runs[0]
	if !strings.Contains(r.Overloaded, "overloaded at capacity 0.300 Mpps") || r.CapacityMpps != 0.3 || r.LatencyNote == "" || verdictNames(r.Thresholds) != "min_mpps,max_loss_pct" {
		t.Errorf("run: overloaded %q, capacity %v, latency note %q, verdicts %s", r.Overloaded, r.CapacityMpps, r.LatencyNote, verdictNames(r.Thresholds))
	}
	if res.Load == nil || res.Load.Kind != playbooks.LoadMax || res.Load.LossBudgetPct != playbooks.DefaultLossBudgetPct || res.Load.Default {
		t.Errorf("load %+v", res.Load)
	}
	// the latency run: 50 % of 0.3 Mpps, judged there and passing
	if len(res.LatencyRuns) != 1 || dp.cfgs[len(dp.cfgs)-1].Rate != "150000pps" {
		t.Fatalf("latency runs %+v, last rate %q", res.LatencyRuns, dp.cfgs[len(dp.cfgs)-1].Rate)
	}
	if lr := res.LatencyRuns[0]; lr.LatencyNote != "" || verdictNames(lr.Thresholds) != "max_loss_pct,max_p99_us" || !lr.Thresholds[1].Pass || lr.Thresholds[1].Measured != 20 {
		t.Errorf("latency run %+v", lr)
	}
	var text bytes.Buffer
	_ = res.WriteText(&text)
	for _, w := range []string{"load: as fast as possible (rate: max), loss budget 0.1%", "OVERLOADED: overloaded at capacity 0.300 Mpps", "latency below capacity (50% of 0.300 Mpps)",
		"threshold max_p99_us 100: measured 20: pass", "check: FAIL"} {
		if !strings.Contains(text.String(), w) {
			t.Errorf("text lacks %q:\n%s", w, text.String())
		}
	}
	if !strings.Contains(progress.String(), "check: load: as fast as possible") || !strings.Contains(progress.String(), "check: latency run, 64 B at 150000pps") {
		t.Errorf("progress:\n%s", progress)
	}
}

// A fixed rate the path carries passes within its budget, with latency
// judged on that run; a rate above the capacity is overloaded, fails the
// budget, and its latency (queueing) is not judged.
func TestCheckFixedRateJudgesLossBudgetAndLatencyBelowCapacity(t *testing.T) {
	spec := &playbooks.CheckSpec{Bridge: "br0", Duration: "1s", Warmup: "0s", Rate: "200kpps", Thresholds: playbooks.CheckThresholds{MaxLossPct: 0.5, MaxP99Us: 100}}
	s, dp, _ := verdictCheck(t, spec, 300e3)
	out, err := s.Measure(context.Background())
	res := out.(*CheckResult)
	if err != nil || !res.Pass || len(res.LatencyRuns) != 0 || len(dp.cfgs) != 1 || verdictNames(res.Runs[0].Thresholds) != "max_loss_pct,max_p99_us" {
		t.Fatalf("%v: %+v (%d runs)", err, res.Runs, len(dp.cfgs))
	}
	if res.Load.Kind != playbooks.LoadRate || res.Load.Rate != "200kpps" || res.Load.LossBudgetPct != 0.5 {
		t.Errorf("load %+v", res.Load)
	}
	spec.Rate = "400kpps"
	out, err = s.Measure(context.Background())
	res = out.(*CheckResult)
	var bt *BelowThresholdError
	r := res.Runs[0]
	if !errors.As(err, &bt) || res.Pass || !strings.Contains(r.Overloaded, "rate 400kpps") || !strings.Contains(r.Overloaded, "overloaded at capacity 0.300 Mpps") ||
		verdictNames(r.Thresholds) != "max_loss_pct" || !strings.Contains(r.LatencyNote, "queueing") {
		t.Fatalf("%v: overloaded %q, verdicts %s, latency note %q", err, r.Overloaded, verdictNames(r.Thresholds), r.LatencyNote)
	}
}

// No rate and no search: the default load is the zero-loss search; an
// impossible floor fails it (exit 4), and latency is measured at half the
// NDR and judged there.
func TestCheckDefaultLoadIsTheZeroLossSearch(t *testing.T) {
	spec := &playbooks.CheckSpec{Bridge: "br0", Duration: "1s", Warmup: "0s", NDR: playbooks.CheckNDR{Max: "1Mpps", MaxTrials: 8, Resolution: "5%"},
		Thresholds: playbooks.CheckThresholds{MinMpps: 0.2, MaxP99Us: 100}}
	s, dp, progress := verdictCheck(t, spec, 300e3)
	out, err := s.Measure(context.Background())
	res := out.(*CheckResult)
	if err != nil || !res.Pass || res.Search == nil || len(res.Runs) != 0 || res.Load.Kind != playbooks.LoadNDR || !res.Load.Default || len(res.Search.Sizes[0].Trials) > 8 {
		t.Fatalf("%v: pass %v, load %+v, search %+v", err, res.Pass, res.Load, res.Search)
	}
	ndr := res.Search.Sizes[0].NDR.Mpps
	if len(res.LatencyRuns) != 1 || !res.LatencyRuns[0].Pass || res.LatencyRuns[0].Sent == 0 {
		t.Fatalf("latency runs %+v", res.LatencyRuns)
	}
	if want := fmt.Sprintf("%.0fpps", ndr*1e6*0.5); dp.cfgs[len(dp.cfgs)-1].Rate != want {
		t.Errorf("latency run at %s, want half the NDR %.4f Mpps (%s)", dp.cfgs[len(dp.cfgs)-1].Rate, ndr, want)
	}
	if !strings.Contains(progress.String(), "trial") {
		t.Errorf("no progress line per trial:\n%s", progress)
	}
	var prom bytes.Buffer
	_, _ = CheckMetrics{Spec: spec, Result: res}.WriteTo(&prom)
	if !strings.Contains(prom.String(), `rig_check_pass{bridge="br0",topology="through-bridge",ingress_port="rig-chk-in",egress_port="rig-chk-out",frame_size="64"} 1`) ||
		!strings.Contains(prom.String(), "rig_check_mpps{") {
		t.Errorf("metrics of the search:\n%s", prom.String())
	}
	spec.Thresholds.MinMpps = 1000
	out, err = s.Measure(context.Background())
	prom.Reset()
	_, _ = CheckMetrics{Spec: spec, Result: out.(*CheckResult)}.WriteTo(&prom)
	if !strings.Contains(prom.String(), `rig_check_pass{bridge="br0",topology="through-bridge",ingress_port="rig-chk-in",egress_port="rig-chk-out",frame_size="64"} 0`) {
		t.Errorf("metrics of the failed search:\n%s", prom.String())
	}
	var bt *BelowThresholdError
	if !errors.As(err, &bt) || len(bt.Failed) != 1 || !strings.HasPrefix(bt.Failed[0].Name, "min_mpps (NDR, 64 B)") {
		t.Fatalf("impossible floor: %v", err)
	}
}

// The lab section replaces the load and thresholds inside a virtual lab
// (the report says lab figures), and only there.
func TestCheckLabSectionOnlyInALab(t *testing.T) {
	spec := &playbooks.CheckSpec{Bridge: "br0", Duration: "5s", Thresholds: playbooks.CheckThresholds{MinMpps: 6},
		Lab: &playbooks.CheckLab{Rate: "20kpps", Duration: "2s", Thresholds: &playbooks.CheckThresholds{MaxLossPct: 1}}}
	s, _, _ := verdictCheck(t, spec, 300e3)
	if s.lab || s.spec.LoadKind() != playbooks.LoadNDR {
		t.Fatalf("outside a lab: lab %v, load %s", s.lab, s.spec.LoadKind())
	}
	l := spec.InLab()
	if l.LoadKind() != playbooks.LoadRate || l.DurationOrDefault().String() != "2s" || l.Thresholds.MinMpps != 0 || l.LossBudgetPct() != 1 {
		t.Errorf("in a lab: %+v", l)
	}
}

// The ports' own drop counters name the stage and the fix.
func TestPortDropsNameStageAndFix(t *testing.T) {
	ds := []PortDelta{
		{Port: "p0", Role: "ingress", Counters: ovs.Counters{Custom: map[string]uint64{"rx_missed_errors": 10, "rx_phy_discard_packets": 500, "rx_q0_packets": 9}}},
		{Port: "pf0hpf", Role: "egress", Counters: ovs.Counters{Custom: map[string]uint64{"ovs_tx_failure_drops": 7, "rx_mbuf_allocation_errors": 0}}},
	}
	got := portDrops(ds, nil)
	if len(got) != 3 || got[0].Counter != "rx_phy_discard_packets" || !strings.Contains(got[0].Stage, "the uplink's PHY discarded") || !strings.Contains(got[0].Fix, "PCIe") ||
		got[1].Counter != "rx_missed_errors" || got[2].Port != "pf0hpf" {
		t.Fatalf("%+v", got)
	}
	if v := dropsVerdict(LossAttribution{Verdict: "510 frame(s) lost"}, got); !strings.Contains(v, "port p0's rx_phy_discard_packets counted 500: the uplink's PHY discarded") {
		t.Errorf("verdict %q", v)
	}
	nb := portDrops([]PortDelta{{Port: "p0", Counters: ovs.Counters{Custom: map[string]uint64{"rx_mbuf_allocation_errors": 3}}}}, nil)
	if len(nb) != 1 || !strings.Contains(nb[0].Stage, "ran out of buffers") {
		t.Errorf("rx_nombuf: %+v", nb)
	}
	// rig's own ports: the receiver's imissed and rx_nombuf, the generator's oerrors
	rig := portDrops(nil, []bench.PortStats{{Name: "net_mlx5_0", DropCounters: map[string]uint64{"oerrors": 2}},
		{Name: "net_mlx5_1", DropCounters: map[string]uint64{"imissed": 40, "rx_nombuf": 5, "rx_phy_discard_packets": 9}}})
	if len(rig) != 4 || rig[0].Counter != "imissed" || rig[0].Role != "rig's receiver" || !strings.Contains(rig[0].Stage, "the receiver's NIC ran out of buffers") ||
		!strings.Contains(rig[0].Fix, "check.cores") || rig[1].Counter != "rx_phy_discard_packets" || !strings.Contains(rig[1].Stage, "the uplink's PHY discarded") ||
		rig[2].Counter != "rx_nombuf" || !strings.Contains(rig[2].Stage, "rig's receiver ran out of mbufs") || rig[3].Counter != "oerrors" || rig[3].Role != "rig's generator" {
		t.Errorf("rig's ports: %+v", rig)
	}
}

// shortOnce is a path whose generator falls short of the asked rate in
// its first measured run (other work took its CPU).
type shortOnce struct {
	queueDataplane
	runs int
}

func (d *shortOnce) Run(ctx context.Context, cfg bench.Config) (*bench.Result, error) {
	r, err := d.queueDataplane.Run(ctx, cfg)
	if d.runs++; d.runs == 1 && err == nil {
		r.Invalid = []string{"asked --rate 200kpps (0.200 Mpps) but sent 0.150 Mpps, more than 10% below it: the generator could not keep up (more --cores or --txq), so this is not a run at the asked rate"}
	}
	return r, err
}

// A fixed-rate run whose generator fell short is invalid, not a result:
// it is run once more, and the first run is named in a warning; a second
// shortfall stays invalid.
func TestCheckGeneratorShortfallRunsOnceMore(t *testing.T) {
	dp := &shortOnce{queueDataplane: queueDataplane{cappedDataplane{capPPS: 300e3}}}
	spec := &playbooks.CheckSpec{Bridge: "br0", Duration: "1s", Warmup: "0s", Rate: "200kpps"}
	step, err := NewCheckStep(&Env{Env: provision.Env{Host: checkEnv(t, nil).Host, OVSRunDir: t.TempDir()}, Dataplane: func(string) Dataplane { return dp }}, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := step.(*checkStep)
	s.o = newFakeCheckOVS()
	out, err := s.Measure(context.Background())
	res := out.(*CheckResult)
	if err != nil || !res.Pass || dp.runs != 2 || len(res.Runs) != 1 || !strings.Contains(strings.Join(res.Runs[0].Warnings, "\n"), "the first run was invalid and is not counted") {
		t.Fatalf("%v: %d runs, %+v", err, dp.runs, res.Runs)
	}
}

// Far ends on two machines' serves (two clocks): no run measures latency,
// so max_p99_us is not judged, and the run and the latency runs say why;
// both far ends on one serve (one clock) judge it.
func TestCheckTwoMachinesJudgeNoLatency(t *testing.T) {
	two := &checkPath{far: &farTraffic{in: farEnd{FarEnd: playbooks.FarEnd{Serve: "10.0.0.2:7400"}}, out: farEnd{FarEnd: playbooks.FarEnd{Serve: "192.168.100.1:7400"}}}}
	sp := &playbooks.CheckSpec{Rate: "20kpps", Thresholds: playbooks.CheckThresholds{MaxLossPct: 1, MaxP99Us: 100}}
	run := &CheckRun{FrameSize: 64, RxMpps: 0.02}
	judgeRunLoad(sp, run, two.noLatency())
	if verdictNames(run.Thresholds) != "max_loss_pct" || !strings.Contains(run.LatencyNote, "the far ends are on two machines (10.0.0.2:7400, 192.168.100.1:7400)") || !strings.Contains(run.LatencyNote, "max_p99_us not judged") {
		t.Errorf("two machines: verdicts %s, latency note %q", verdictNames(run.Thresholds), run.LatencyNote)
	}
	one := &checkPath{far: &farTraffic{in: two.far.in, out: two.far.in}}
	run = &CheckRun{FrameSize: 64, RxMpps: 0.02, Latency: &bench.Latency{Samples: 10, P99Us: 20}}
	judgeRunLoad(sp, run, one.noLatency())
	if verdictNames(run.Thresholds) != "max_loss_pct,max_p99_us" || run.LatencyNote != "" || (&checkPath{}).noLatency() != "" {
		t.Errorf("one machine: verdicts %s, latency note %q", verdictNames(run.Thresholds), run.LatencyNote)
	}
	// the zero-loss search's latency run at latency_load: not run there
	s := &checkStep{spec: &playbooks.CheckSpec{Thresholds: playbooks.CheckThresholds{MaxP99Us: 100}}}
	res := &CheckResult{Runs: []CheckRun{{FrameSize: 64, RxMpps: 0.5}}}
	if err := s.measureLatency(context.Background(), two, "", res); err != nil || len(res.LatencyRuns) != 1 || res.LatencyRuns[0].Sent != 0 ||
		!strings.Contains(res.LatencyRuns[0].LatencyNote, "latency not measured, max_p99_us not judged") || len(res.LatencyRuns[0].Thresholds) != 0 {
		t.Errorf("%v: latency runs %+v", err, res.LatencyRuns)
	}
}
