package ovs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"rig/internal/host"
)

// pmd-stats-show of OvS 3.1 (recorded): one PMD thread and the main thread.
func TestParsePMDStatsShow(t *testing.T) {
	st, err := ParsePMDStats(fixture(t, "pmd-stats-show.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 2 {
		t.Fatalf("threads: %+v", st)
	}
	p := st[0]
	want := PMDStats{Thread: "pmd thread numa_id 0 core_id 1", NUMAID: 0, CoreID: 1, Form: PMDFormStats,
		RxPackets: 25664, MegaflowHits: 62, Upcalls: 2, IdleCycles: 31740752358, ProcessingCycles: 4094203575,
		UsedCycles: 35834955933, IdlePct: 88.57, ProcessingPct: 11.43, AvgCyclesPerPacket: 1396312.19,
		AvgProcessingCyclesPerPacket: 159531.00, Unknown: []string{"txPackets"}}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("pmd:\n got %+v\nwant %+v", p, want)
	}
	m := st[1]
	if !m.Main || m.Thread != "main thread" || m.RxPackets != 0 || m.CoreID != -1 ||
		!reflect.DeepEqual(m.Unknown, []string{"idleCycles", "processingCycles", "usedCycles", "idlePct", "processingPct", "avgCyclesPerPacket", "avgProcessingCyclesPerPacket", "txPackets"}) {
		t.Errorf("main: %+v", m)
	}
	busy, err := ParsePMDStats(fixture(t, "pmd-stats-show-busy.txt"))
	if err != nil || busy[0].EMCHits != 273825152 || busy[0].IdleCycles != 0 || busy[0].ProcessingPct != 100 || busy[0].AvgCyclesPerPacket != 72.85 {
		t.Errorf("busy: %+v %v", busy, err)
	}
}

// The pmd-perf-show form (pmd-stats-show's in OvS 4.0-dev), recorded from
// OvS 3.1's pmd-perf-show.
func TestParsePMDPerfShow(t *testing.T) {
	st, err := ParsePMDStats(fixture(t, "pmd-perf-show.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 1 {
		t.Fatalf("threads: %+v", st)
	}
	p := st[0]
	if p.Form != PMDFormPerf || p.CoreID != 1 || p.RxPackets != 225792 || p.TxPackets != 338688 || p.UsedCycles != 13139356860 ||
		p.IdlePct != 80.9 || p.ProcessingPct != 19.1 || p.AvgProcessingCyclesPerPacket != 11137 || p.MegaflowHits != 62 || p.Upcalls != 2 {
		t.Errorf("perf: %+v", p)
	}
	if avg := float64(13139356860) / 225792; p.AvgCyclesPerPacket != avg {
		t.Errorf("avg cycles/pkt %v, want used/rx = %v", p.AvgCyclesPerPacket, avg)
	}
	if !reflect.DeepEqual(p.Unknown, []string{"recirculations", "idleCycles", "processingCycles"}) {
		t.Errorf("unknown: %v", p.Unknown)
	}
}

func TestParsePMDStatsRejects(t *testing.T) {
	for _, in := range []string{"", "please specify an existing datapath\n", "pmd thread numa_id 0 core_id 1:\n  packets received: many\n",
		"pmd thread numa_id 0 core_id 1:\n  idle cycles: 5 (x%)\n  - idle iterations: 3 (no pct)\n"} {
		if st, err := ParsePMDStats([]byte(in)); err == nil {
			t.Errorf("%q: no error, got %+v", in, st)
		}
	}
}

func FuzzParsePMDStats(f *testing.F) {
	for _, n := range []string{"pmd-stats-show.txt", "pmd-stats-show-busy.txt", "pmd-perf-show.txt"} {
		f.Add(fixture(f, n))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := ParsePMDStats(b)
		if err != nil {
			return
		}
		if len(st) == 0 {
			t.Fatal("no threads and no error")
		}
		for _, p := range st {
			if p.Form != PMDFormStats && p.Form != PMDFormPerf {
				t.Fatalf("form %q", p.Form)
			}
		}
	})
}

// ovs-appctl goes to the private instance's unixctl socket; a vswitchd
// without a netdev datapath (real message) is explained.
func TestPMDStatsArgvAndErrors(t *testing.T) {
	var fail bool
	c, rec, run := fakeClient(t, true, func(name string, args []string) ([]byte, error, bool) {
		if fail {
			return nil, &host.ToolError{Argv: append([]string{name}, args...), Err: errors.New("exit status 2"),
				Stdout: "please specify an existing datapath\n", Stderr: "ovs-appctl: " + args[1] + ": server returned an error\n"}, true
		}
		if args[len(args)-1] == "dpif-netdev/pmd-stats-clear" {
			return nil, nil, true
		}
		return fixture(t, "pmd-stats-show.txt"), nil, true
	})
	if err := c.ClearPMDStats(context.Background()); err != nil {
		t.Fatal(err)
	}
	st, err := c.PMDStats(context.Background())
	if err != nil || len(st) != 2 {
		t.Fatalf("%+v %v", st, err)
	}
	// no pidfile and no ovs-vswitchd.ctl: the fixed path rig starts vswitchd with
	want := []string{"ovs-appctl -t " + run + "/ovs-vswitchd.ctl --timeout=7 dpif-netdev/pmd-stats-clear",
		"ovs-appctl -t " + run + "/ovs-vswitchd.ctl --timeout=7 dpif-netdev/pmd-stats-show"}
	if got := rec.Lines(); !reflect.DeepEqual(got, want) {
		t.Errorf("argv:\n got %q\nwant %q", got, want)
	}
	fail = true
	_, err = c.PMDStats(context.Background())
	var tp *ToolProblem
	if !errors.As(err, &tp) || tp.Diagnosis.Kind != ProblemNoNetdevDP || !strings.Contains(tp.Fix(), "datapath_type: netdev") {
		t.Fatalf("no datapath: %v", err)
	}
	// real message of ovs-appctl 3.1 with vswitchd killed (no live pid behind the pidfile)
	down, _, run2 := fakeClient(t, true, func(name string, args []string) ([]byte, error, bool) {
		return nil, &host.ToolError{Argv: append([]string{name}, args...), Err: errors.New("exit status 1"),
			Stderr: "2026-12-01T19:12:12Z|00001|unixctl|WARN|failed to connect to " + args[1] + "\novs-appctl: cannot connect to \"" + args[1] + "\" (Connection refused)\n"}, true
	})
	_, err = down.PMDStats(context.Background())
	if !errors.As(err, &tp) || tp.Diagnosis.Kind != ProblemVswitchdDown || !strings.Contains(tp.Fix(), "rig ovs daemon start --rundir "+run2) ||
		!strings.Contains(err.Error(), "Connection refused") {
		t.Fatalf("vswitchd down: %v", err)
	}
	sys, rec2, _ := fakeClient(t, false, func(name string, args []string) ([]byte, error, bool) { return nil, nil, true })
	_ = sys.ClearPMDStats(context.Background())
	if got := rec2.Lines(); len(got) != 1 || got[0] != "ovs-appctl --timeout=7 dpif-netdev/pmd-stats-clear" {
		t.Errorf("system argv: %q", got)
	}
}

// The private instance's unixctl socket: the fixed ovs-vswitchd.ctl rig
// starts vswitchd with, else OvS's default ovs-vswitchd.<pid>.ctl.
func TestAppctlTarget(t *testing.T) {
	c, _, run := fakeClient(t, true, nil)
	if err := os.WriteFile(filepath.Join(run, "ovs-vswitchd.pid"), []byte("4242\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := c.AppctlTarget(); got != filepath.Join(run, "ovs-vswitchd.4242.ctl") {
		t.Errorf("default unixctl: %s", got)
	}
	if err := os.WriteFile(filepath.Join(run, "ovs-vswitchd.ctl"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := c.AppctlTarget(); got != filepath.Join(run, "ovs-vswitchd.ctl") {
		t.Errorf("fixed unixctl: %s", got)
	}
	if sys, _, _ := fakeClient(t, false, nil); sys.AppctlTarget() != "" {
		t.Error("the system instance uses ovs-appctl's default target")
	}
}
