package search

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"rig/bench"
)

// fakePath is a loop through a DUT that forwards at most capPPS (the rest
// is lost) behind a generator that sends at most genPPS; 1518 B frames
// come back with frames the generator never sent (invalid) when
// invalidAt1518.
type fakePath struct {
	capPPS, genPPS float64
	invalidAt1518  bool
	runs           []bench.Config
}

func (f *fakePath) run(_ context.Context, c bench.Config) (*bench.Result, error) {
	f.runs = append(f.runs, c)
	secs := c.Duration.Seconds()
	pps := f.genPPS
	if c.Rate != "" {
		asked, err := bench.ParseRate(c.Rate, c.FrameSize, 0)
		if err != nil {
			return nil, err
		}
		pps = math.Min(asked, f.genPPS)
	}
	sent := uint64(pps * secs)
	recv := uint64(math.Min(pps, f.capPPS) * secs)
	r := &bench.Result{SchemaVersion: bench.SchemaVersion, Role: bench.RoleLoop, FrameSize: c.FrameSize, DurationS: secs, SendS: secs, Sent: sent, Received: recv, Lost: int64(sent - recv)}
	if c.Rate != "" && pps < 0.9*mustRate(c) { // as Judge says it
		r.Invalid = append(r.Invalid, bench.RateNotReached+c.Rate+" ...")
	}
	if c.FrameSize == 1518 && f.invalidAt1518 {
		r.Received = sent + 10
		r.Invalid = append(r.Invalid, "received 10 frames more than sent")
	}
	return r, nil
}

func mustRate(c bench.Config) float64 {
	v, _ := bench.ParseRate(c.Rate, c.FrameSize, 0)
	return v
}

func ndrSpec() NDRSpec {
	return NDRSpec{Base: bench.Config{Role: bench.RoleLoop, VDevs: []string{"net_ring0"}}, Sizes: []int{64}, TrialDuration: 2 * time.Second,
		Resolution: "0.1%", MaxTrials: 30, PDRLossPct: 0.5}
}

// The known answer: NDR within the resolution below the cap, after an
// unlimited trial measured the generator; the trials run for the trial
// duration at the offered rate.
func TestNDRFindsCap(t *testing.T) {
	f := &fakePath{capPPS: 500e3, genPPS: 2e6}
	var progress bytes.Buffer
	rep := RunNDR(context.Background(), ndrSpec(), f.run, &progress)
	s := rep.Sizes[0]
	if s.Error != "" || s.Probe == nil || s.Probe.OfferedMpps != 2 || s.SearchMaxMpps != 2 || s.SearchMaxSource != "generator maximum (an unlimited trial)" {
		t.Fatalf("size %+v", s)
	}
	if math.Abs(s.ResolutionMpps-0.002) > 1e-12 {
		t.Errorf("resolution %g Mpps, want 0.1 %% of the 2 Mpps upper bound", s.ResolutionMpps)
	}
	if ndr := s.NDR.Mpps; ndr > 0.5 || ndr < 0.498 || !s.NDR.Confirmed || s.status() != "confirmed" {
		t.Errorf("NDR %+v, want 0.498..0.5 confirmed", s.NDR)
	}
	if math.Abs(s.NDR.Gbps-s.NDR.Mpps*64*8/1000) > 1e-9 || s.NDR.LineRatePct != 0 {
		t.Errorf("NDR Gbps %g, %% line %g", s.NDR.Gbps, s.NDR.LineRatePct)
	}
	if f.runs[0].Rate != "" || f.runs[1].Rate != "2000000.0pps" || f.runs[1].Duration != 2*time.Second || f.runs[1].FrameSize != 64 {
		t.Errorf("runs: %+v then %+v", f.runs[0], f.runs[1])
	}
	if !strings.Contains(progress.String(), "ndr 64 B: trial 1 at 2.0000 Mpps (offered 2.0000) for 2s: sent 4000000, received 1000000, loss 75 %: NDR fail") {
		t.Errorf("progress:\n%s", progress.String())
	}
}

// A link speed: the upper bound is the line rate when the generator is
// faster, the resolution a share of it, and % of line is reported.
func TestNDRLineRateBound(t *testing.T) {
	spec := ndrSpec()
	spec.Base.LinkSpeed = "1G"
	spec.Resolution = "1%"
	f := &fakePath{capPPS: 1e6, genPPS: 5e6}
	rep := RunNDR(context.Background(), spec, f.run, nil)
	s := rep.Sizes[0]
	lr := bench.LineRatePPS(1e9, 64) / 1e6 // 1.488 Mpps
	if s.SearchMaxMpps != lr || !strings.HasPrefix(s.SearchMaxSource, "line rate (1G)") || math.Abs(s.ResolutionMpps-lr/100) > 1e-12 {
		t.Errorf("bound %g (%s), resolution %g; want the line rate %g", s.SearchMaxMpps, s.SearchMaxSource, s.ResolutionMpps, lr)
	}
	if s.NDR.LineRatePct < 66 || s.NDR.LineRatePct > 67.3 {
		t.Errorf("NDR %+v: want 1 Mpps, 67.2 %% of 1G at 64 B", s.NDR)
	}
}

// Goldens: two sizes, one found, one stopped by an invalid trial; a
// --search-max that passes at once (the path may carry more).
func TestNDRGoldenTableJSON(t *testing.T) {
	spec := ndrSpec()
	spec.Sizes = []int{64, 1518}
	spec.SearchMax = "1Mpps"
	spec.Resolution = "5kpps"
	f := &fakePath{capPPS: 600e3, genPPS: 2e6, invalidAt1518: true}
	rep := RunNDR(context.Background(), spec, f.run, nil)
	var txt, js bytes.Buffer
	rep.PrintTable(&txt)
	enc := json.NewEncoder(&js)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		t.Fatal(err)
	}
	golden(t, "ndr.txt", txt.Bytes())
	golden(t, "ndr.json", js.Bytes())
	if rep.Sizes[0].Probe != nil || rep.Sizes[0].SearchMaxSource != "--search-max 1Mpps" || rep.Sizes[1].status() != "INVALID" || len(rep.Sizes[1].Trials) != 0 {
		t.Errorf("sizes %+v", rep.Sizes)
	}
	// a cap above the search maximum: the upper bound passes
	spec.Sizes = []int{64}
	rep = RunNDR(context.Background(), spec, (&fakePath{capPPS: 3e6, genPPS: 5e6}).run, nil)
	txt.Reset()
	rep.PrintTable(&txt)
	if s := rep.Sizes[0]; s.NDR.Mpps != 1 || s.NDR.Limit != "search maximum" || !strings.Contains(txt.String(), "NDR is the search's upper bound (--search-max 1Mpps)") {
		t.Errorf("NDR %+v\n%s", s.NDR, txt.String())
	}
}

// A generator slower than the bound: the trials above its rate fail as
// not offered, and the answer says the generator was the limit.
func TestNDRGeneratorLimited(t *testing.T) {
	spec := ndrSpec()
	spec.SearchMax = "1Mpps"
	spec.PDRLossPct = 0
	rep := RunNDR(context.Background(), spec, (&fakePath{capPPS: 3e6, genPPS: 400e3}).run, nil)
	s := rep.Sizes[0]
	// a trial counts at what the generator offered: 0.4 Mpps at most
	if s.NDR.Limit != "generator" || s.NDR.Mpps != 0.4 || !s.NDR.Confirmed || !s.NDR.Resolved || s.PDR != nil {
		t.Errorf("NDR %+v, want about the generator's 0.4 Mpps", s.NDR)
	}
}

// A run that fails stops that size's search (with the cause and fix);
// the next size runs.
func TestNDRRunFailure(t *testing.T) {
	spec := ndrSpec()
	spec.Sizes = []int{64, 128}
	spec.SearchMax = "1Mpps"
	n := 0
	f := &fakePath{capPPS: 5e5, genPPS: 2e6}
	rep := RunNDR(context.Background(), spec, func(ctx context.Context, c bench.Config) (*bench.Result, error) {
		if n++; n == 3 {
			return nil, bench.NewError("port net_ring0", errors.New("link down"), "", "connect the peer")
		}
		return f.run(ctx, c)
	}, nil)
	if s := rep.Sizes[0]; s.status() != "FAILED" || !strings.Contains(s.Error, "trial 3 (search") || !strings.Contains(s.Error, ") at 0.") || !strings.Contains(s.Error, "fix: connect the peer") || len(s.Trials) != 2 {
		t.Errorf("size 64: %+v", s)
	}
	if s := rep.Sizes[1]; s.status() != "confirmed" {
		t.Errorf("size 128: %+v", s)
	}
}

func TestNDRSpecValidate(t *testing.T) {
	for _, c := range []struct {
		mod  func(*NDRSpec)
		want string
	}{
		{func(s *NDRSpec) { s.Base.Role = bench.RoleGen }, "the trials are loop runs"},
		{func(s *NDRSpec) { s.Sizes = nil }, "--size"},
		{func(s *NDRSpec) { s.Sizes = []int{32} }, "--size 32"},
		{func(s *NDRSpec) { s.TrialDuration = time.Millisecond }, "--trial-duration"},
		{func(s *NDRSpec) { s.MaxTrials = 1 }, "--max-trials"},
		{func(s *NDRSpec) { s.PDRLossPct = -1 }, "--pdr-loss-pct"},
		{func(s *NDRSpec) { s.Resolution = "fine" }, "--resolution"},
		{func(s *NDRSpec) { s.Resolution = "0%" }, "--resolution"},
		{func(s *NDRSpec) { s.Resolution = "1Gbps" }, "--resolution"},
		{func(s *NDRSpec) { s.SearchMax = "50%" }, "--search-max"},
		{func(s *NDRSpec) { s.SearchMax = "fast" }, "--search-max"},
	} {
		s := ndrSpec()
		c.mod(&s)
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.want, err)
		}
	}
	s := ndrSpec()
	s.SearchMax, s.Base.LinkSpeed = "50%", "10G"
	if err := s.Validate(); err != nil {
		t.Errorf("50%% with a link speed: %v", err)
	}
}

// RFC 2544's settling pause between trials: none before the first.
func TestNDRTrialGap(t *testing.T) {
	spec := ndrSpec()
	spec.SearchMax, spec.MaxTrials, spec.TrialGap, spec.Resolution = "1Mpps", 3, 30*time.Millisecond, "40%"
	f := &fakePath{capPPS: 5e5, genPPS: 2e6}
	var at []time.Time
	start := time.Now()
	RunNDR(context.Background(), spec, func(ctx context.Context, c bench.Config) (*bench.Result, error) {
		at = append(at, time.Now())
		return f.run(ctx, c)
	}, nil)
	if len(at) != 3 || at[0].Sub(start) > 20*time.Millisecond || at[1].Sub(at[0]) < 30*time.Millisecond || at[2].Sub(at[1]) < 30*time.Millisecond {
		t.Errorf("trials at %v after the start", at)
	}
	spec.TrialGap = -time.Second
	if err := spec.Validate(); err == nil || !strings.Contains(err.Error(), "--trial-gap") {
		t.Errorf("negative gap: %v", err)
	}
}
