package check

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"rig/bench"
	"rig/playbooks"
	"rig/provision"
)

// cappedDataplane is a path that carries at most capPPS: what the
// generator offers above it is lost.
type cappedDataplane struct {
	capPPS float64
	cfgs   []bench.Config
}

func (d *cappedDataplane) Run(_ context.Context, cfg bench.Config) (*bench.Result, error) {
	d.cfgs = append(d.cfgs, cfg)
	secs := cfg.Duration.Seconds()
	pps := 2e6 // the generator's maximum
	if cfg.Rate != "" {
		v, err := bench.ParseRate(cfg.Rate, cfg.FrameSize, 0)
		if err != nil {
			return nil, err
		}
		pps = v
	}
	sent := uint64(pps * secs)
	recv := uint64(math.Min(pps, d.capPPS) * secs)
	return &bench.Result{Role: bench.RoleLoop, FrameSize: cfg.FrameSize, DurationS: secs, SendS: secs, Sent: sent, Received: recv, Lost: int64(sent - recv),
		Ports: []bench.PortStats{{Name: "net_virtio_user0", Driver: "net_virtio_user", TxPkts: sent}, {Name: "net_virtio_user1", Driver: "net_virtio_user", RxPkts: recv}}}, nil
}

// check: {search: ndr} through the bridge: one warm-up, then the search
// through the same temporary ports (set up once, removed after); the
// threshold judges the NDR.
func TestCheckSearchNDRThroughBridge(t *testing.T) {
	o := newFakeCheckOVS()
	dp := &cappedDataplane{capPPS: 300e3}
	spec := &playbooks.CheckSpec{Bridge: "br0", Duration: "1s", Warmup: "1s", Search: playbooks.SearchNDR,
		NDR: playbooks.CheckNDR{Resolution: "1kpps", Max: "1Mpps"}, Thresholds: playbooks.CheckThresholds{MinMpps: 0.25}}
	step, err := NewCheckStep(&Env{Env: provision.Env{Host: checkEnv(t, nil).Host, OVSRunDir: t.TempDir()}, Dataplane: func(string) Dataplane { return dp }}, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := step.(*checkStep)
	s.o, s.trialGap = o, 0
	out, err := s.Measure(context.Background())
	res := out.(*CheckResult)
	if err != nil || !res.Pass || res.Search == nil || len(res.Runs) != 0 {
		t.Fatalf("%v: %+v", err, res)
	}
	sz := res.Search.Sizes[0]
	if ndr := sz.NDR.Mpps; ndr > 0.3 || ndr < 0.299 || !sz.NDR.Confirmed {
		t.Errorf("NDR %+v, want just below 0.3 Mpps, confirmed", sz.NDR)
	}
	if dp.cfgs[0].Rate != "" || dp.cfgs[0].Duration.String() != "1s" || dp.cfgs[1].Rate != "1000000.0pps" || dp.cfgs[1].Hold != counterHold ||
		!strings.HasPrefix(dp.cfgs[1].VDevs[0], "net_virtio_user0,path=") || len(dp.cfgs) != len(sz.Trials)+1 {
		t.Errorf("runs: %d, first %+v, second %+v", len(dp.cfgs), dp.cfgs[0], dp.cfgs[1])
	}
	if len(o.st.Bridges[0].Ports) != 0 || o.flows != 0 || strings.Count(strings.Join(o.calls, "\n"), "add-port") != 2 {
		t.Errorf("ports added once and removed: calls %q", o.calls)
	}
	var text bytes.Buffer
	_ = res.WriteText(&text)
	for _, w := range []string{"rig bench ndr (RFC 2544 throughput)", "threshold min_mpps (NDR, 64 B) 0.25: measured 0.2", ": pass", "check: PASS"} {
		if !strings.Contains(text.String(), w) {
			t.Errorf("text lacks %q:\n%s", w, text.String())
		}
	}
	// the NDR below the threshold: exit 4's error, naming it
	spec.Thresholds.MinMpps = 0.5
	out, err = s.Measure(context.Background())
	var bt *BelowThresholdError
	if !errors.As(err, &bt) || !strings.Contains(err.Error(), "min_mpps (NDR, 64 B) 0.5: measured 0.2") || out.(*CheckResult).Pass {
		t.Errorf("below threshold: %v", err)
	}
}

// A trial whose numbers cannot be right stops the search: an invalid
// measurement (exit 5), never a pass.
func TestCheckSearchInvalidTrial(t *testing.T) {
	o := newFakeCheckOVS()
	spec := &playbooks.CheckSpec{Bridge: "br0", Duration: "1s", Warmup: "0s", Search: playbooks.SearchNDR, NDR: playbooks.CheckNDR{Max: "1Mpps"}}
	bad := dataplaneFunc(func(_ context.Context, cfg bench.Config) (*bench.Result, error) {
		return &bench.Result{Sent: 100, Received: 120, DurationS: 1, SendS: 1, Invalid: []string{"received 120 frames but sent 100"}}, nil
	})
	step, err := NewCheckStep(&Env{Env: provision.Env{Host: checkEnv(t, nil).Host, OVSRunDir: t.TempDir()}, Dataplane: func(string) Dataplane { return bad }}, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := step.(*checkStep)
	s.o, s.trialGap = o, 0
	out, err := s.Measure(context.Background())
	var ie *InvalidMeasurementError
	if !errors.As(err, &ie) || out.(*CheckResult).Pass || !strings.Contains(err.Error(), "64 B: received 120 frames but sent 100") {
		t.Errorf("got %v", err)
	}
}

type dataplaneFunc func(ctx context.Context, cfg bench.Config) (*bench.Result, error)

func (f dataplaneFunc) Run(ctx context.Context, cfg bench.Config) (*bench.Result, error) {
	return f(ctx, cfg)
}
