package check

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"rig/bench"
	"rig/bench/search"
	"rig/playbooks"
	"rig/provision"
)

// `check: {search: ndr}`: the check's path (the temporary ports, or the
// bridge's own) set up once, then rig bench ndr's search through it, each
// trial one dataplane run like the check's measured run (its memif ports
// re-added before each, as for a run). The loss is rig's: what the
// generator sent and the receiver did not get. min_mpps and
// min_linerate_pct judge each size's NDR.

// measureSearch runs the search per frame size into res.Search, after one
// warm-up run (not counted) when the check has one.
func (s *checkStep) measureSearch(ctx context.Context, p *checkPath, lcores string, res *CheckResult) error {
	sp := s.spec
	pmd := 0
	if p.kind == pathMemif {
		pmd = s.pmdThreads(ctx)
	}
	base := checkConfig(sp, p.kind, p.vdevs, lcores, pmd)
	spec := search.NDRSpec{Base: base, Sizes: sp.Sizes(), TrialDuration: sp.DurationOrDefault(), Resolution: sp.NDR.ResolutionOrDefault(),
		MaxTrials: sp.NDR.MaxTrialsOrDefault(), PDRLossPct: sp.NDR.PDRLossPctOrDefault(), SearchMax: sp.NDR.Max, TrialGap: s.trialGap,
		LossRetries: sp.NDR.LossRetries}
	if gap, ok := sp.NDR.TrialGapValue(); ok {
		spec.TrialGap = gap
	}
	if err := spec.Validate(); err != nil {
		return &provision.UsageError{Msg: "check: search: " + err.Error()}
	}
	dp := s.traffic(p)
	run := func(ctx context.Context, cfg bench.Config) (*bench.Result, error) {
		if err := s.reattach(ctx, p); err != nil {
			return nil, err
		}
		r, _, err := s.runPolling(ctx, dp, cfg, p)
		return r, err
	}
	if w := sp.WarmupOrDefault(); w > 0 {
		wc := base
		wc.FrameSize, wc.Duration = spec.Sizes[0], w
		if _, err := run(ctx, wc); err != nil {
			return fmt.Errorf("check: warm-up run: %w", err)
		}
	}
	res.Search = search.RunNDR(ctx, spec, run, s.progressWriter())
	res.SearchThresholds = searchThresholds(sp.Thresholds, res.Search)
	return ctx.Err()
}

// searchThresholds judges each size's NDR (a size whose search stopped
// has none, and fails).
func searchThresholds(t playbooks.CheckThresholds, rep *search.NDRReport) []ThresholdVerdict {
	var out []ThresholdVerdict
	for _, sz := range rep.Sizes {
		ndr := sz.NDR
		if t.MinMpps > 0 {
			out = append(out, ThresholdVerdict{Name: fmt.Sprintf("min_mpps (NDR, %d B)", sz.FrameSize), Limit: t.MinMpps, Measured: ndr.Mpps, Pass: ndr.Mpps >= t.MinMpps})
		}
		if t.MinLineRatePct > 0 {
			v := ThresholdVerdict{Name: fmt.Sprintf("min_linerate_pct (NDR, %d B)", sz.FrameSize), Limit: t.MinLineRatePct, Measured: ndr.LineRatePct,
				Pass: rep.LinkSpeedGbps > 0 && ndr.LineRatePct >= t.MinLineRatePct}
			if rep.LinkSpeedGbps == 0 {
				v.Note = "no real link speed on this path (virtual ports report a nominal one); use min_mpps"
			}
			out = append(out, v)
		}
	}
	return out
}

// judgeSearch sets Pass and returns why a search check failed: a trial
// that could not be right (exit 5), a trial that failed to run, an NDR
// below a threshold (exit 4).
func judgeSearch(res *CheckResult) error {
	var invalid, failed []string
	for _, sz := range res.Search.Sizes {
		for _, why := range sz.Invalid {
			invalid = append(invalid, fmt.Sprintf("%d B: %s", sz.FrameSize, why))
		}
		if sz.Error != "" {
			failed = append(failed, fmt.Sprintf("%d B: %s", sz.FrameSize, sz.Error))
		}
	}
	below, linv := latencyFailures(res)
	invalid = append(invalid, linv...)
	for _, t := range res.SearchThresholds {
		if !t.Pass {
			below = append(below, t)
		}
	}
	if o := res.Offload; o != nil && !o.Pass {
		below = append(below, offloadFailure(o))
	}
	res.Pass = len(invalid)+len(failed)+len(below) == 0
	switch {
	case len(invalid) > 0:
		return &InvalidMeasurementError{provision.Problem{Object: "check: search", Err: errors.New("invalid measurement: " + strings.Join(invalid, "; ")),
			CauseText: "a trial's figures cannot be right, so the search stopped there",
			FixText:   "see the trial's reasons; rerun the check (rig check -p PLAYBOOK)"}}
	case len(failed) > 0:
		return &provision.Problem{Object: "check: search", Err: errors.New(strings.Join(failed, "; ")),
			FixText: "see the failed trial's cause; `rig bench ndr` with the same ports runs the search in the open"}
	case len(below) > 0:
		return &BelowThresholdError{Failed: below, Offload: res.Offload}
	}
	return nil
}

// writeSearchText prints the search's table and its threshold verdicts.
func (r *CheckResult) writeSearchText(w io.Writer) {
	r.Search.PrintTable(w)
	for _, t := range r.SearchThresholds {
		fmt.Fprintf(w, "  threshold %s\n", t)
	}
}
