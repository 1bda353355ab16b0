package check

import (
	"context"
	"fmt"
	"io"
	"strings"

	"rig/playbooks"
)

// The check judges at a stated load (playbooks/check_load.go): the
// zero-loss search's NDR, a fixed rate with a loss budget, or as fast as
// possible with a loss budget. A run that lost more than the budget is an
// overload: its receive rate is the path's capacity, not a throughput,
// and it fails the loss criterion; its latency is queueing, reported and
// never judged. Latency is judged in a run below capacity: the fixed
// rate's own run when the path carried it, else one more run at
// latency_load of the capacity (the NDR, or what rate: max received).

// CheckLoad is the load the check judged at (rig.check/v2's "load").
type CheckLoad struct {
	Kind          string  `json:"kind"`           // ndr | rate | max
	Rate          string  `json:"rate,omitempty"` // rate: the playbook's
	LossBudgetPct float64 `json:"lossBudgetPct"`  // rate, max: the loss it may have (ndr: 0)
	PDRLossPct    float64 `json:"pdrLossPct,omitempty"`
	Default       bool    `json:"default,omitempty"`     // the playbook named no load: the zero-loss search
	LatencyLoad   string  `json:"latencyLoad,omitempty"` // latency measured at this share of the capacity
	// LabFigures: the check ran inside a virtual lab with check.lab's
	// load and thresholds (what the lab's kernel-bound path sustains)
	LabFigures bool   `json:"labFigures,omitempty"`
	Text       string `json:"text"`
}

func loadOf(sp *playbooks.CheckSpec, lab bool) *CheckLoad {
	l := &CheckLoad{Kind: sp.LoadKind(), LossBudgetPct: sp.LossBudgetPct(), Default: !sp.LoadNamed(), LabFigures: lab, Text: sp.DescribeLoad()}
	switch l.Kind {
	case playbooks.LoadRate:
		l.Rate = sp.Rate
	case playbooks.LoadNDR:
		l.PDRLossPct = sp.NDR.PDRLossPctOrDefault()
	}
	if l.Kind != playbooks.LoadRate && (sp.Thresholds.MaxP99Us > 0 || sp.LatencyLoad != "") {
		l.LatencyLoad = sp.LatencyLoadOrDefault()
	}
	return l
}

// judgeRunLoad judges one fixed-rate or as-fast-as-possible run against
// the loss budget: the max_loss_pct verdict with the budget (the default
// one too), the overload named with the capacity, and the latency
// verdict dropped where the run was not below capacity or where no
// latency can be measured (noLatency, checkPath.noLatency: the far ends
// on two machines' clocks).
func judgeRunLoad(sp *playbooks.CheckSpec, run *CheckRun, noLatency string) {
	budget := sp.LossBudgetPct()
	var ts []ThresholdVerdict
	for _, t := range run.Thresholds {
		if t.Name != "max_loss_pct" && t.Name != "max_p99_us" {
			ts = append(ts, t)
		}
	}
	lossV := ThresholdVerdict{Name: "max_loss_pct", Limit: budget, Measured: run.LossPct, Pass: run.LossPct <= budget}
	if sp.Thresholds.MaxLossPct == 0 {
		lossV.Note = "the default loss budget"
	}
	over := run.Invalid == "" && !lossV.Pass
	if over {
		run.CapacityMpps = run.RxMpps
		offered := 0.0
		if len(run.Ports) > 0 {
			offered = run.Ports[0].TxMpps
		}
		if sp.LoadKind() == playbooks.LoadMax {
			run.Overloaded = fmt.Sprintf("overloaded at capacity %.3f Mpps: as fast as possible the generator offered %.3f Mpps and the path lost %.4g%%, over the %g%% budget; the received rate is the path's capacity, not a throughput (name a load below it: rate, or no rate for the zero-loss search)",
				run.RxMpps, offered, run.LossPct, budget)
		} else {
			run.Overloaded = fmt.Sprintf("overloaded at capacity %.3f Mpps: rate %s (%.3f Mpps offered) lost %.4g%%, over the %g%% budget; the path carries less than the stated load",
				run.RxMpps, sp.Rate, offered, run.LossPct, budget)
		}
		lossV.Note = "overloaded at capacity " + fmt.Sprintf("%.3f Mpps", run.RxMpps)
	}
	ts = append(ts, lossV)
	if sp.Thresholds.MaxP99Us > 0 {
		switch {
		case noLatency != "":
			run.LatencyNote = noLatency + ": max_p99_us not judged"
		case sp.LoadKind() == playbooks.LoadMax:
			run.LatencyNote = "as fast as possible the path is full: this latency is queueing, not the path's; not judged (max_p99_us is judged in the latency run below capacity)"
		case over:
			run.LatencyNote = "the run was overloaded: this latency is queueing, not the path's; not judged"
		case run.Latency != nil && run.Latency.Saturated != "":
			run.LatencyNote = "saturated (" + run.Latency.Saturated + "): this latency is queueing; not judged"
		default:
			ts = append(ts, latencyVerdict(sp.Thresholds.MaxP99Us, run))
		}
	}
	run.Thresholds = ts
}

// generatorShort says whether a fixed-rate run is invalid only because
// rig's generator fell short of the asked rate (bench.Judge's words).
func generatorShort(run *CheckRun) bool {
	return run != nil && run.Invalid != "" && strings.Contains(run.Invalid, "the generator could not keep up") && !strings.Contains(run.Invalid, ";")
}

// latencyVerdict judges max_p99_us on a run below capacity.
func latencyVerdict(limit float64, run *CheckRun) ThresholdVerdict {
	v := ThresholdVerdict{Name: "max_p99_us", Limit: limit}
	if run.Latency != nil && run.Latency.Samples > 0 {
		v.Measured, v.Pass = run.Latency.P99Us, run.Latency.P99Us <= limit
	} else {
		v.Note = "no latency samples"
	}
	return v
}

// latencyAt runs one frame size at rate pps (below the capacity) to
// measure latency there: the check's run with that rate, no warm-up (the
// path is warm) and no threshold but the loss budget and max_p99_us.
func (s *checkStep) latencyAt(ctx context.Context, p *checkPath, size int, lcores string, pps, capacity float64) (*CheckRun, error) {
	sp := *s.spec
	sp.Search, sp.Rate, sp.Warmup = "", fmt.Sprintf("%.0fpps", max(1, pps)), "0s"
	sp.Thresholds = playbooks.CheckThresholds{MaxP99Us: s.spec.Thresholds.MaxP99Us, MaxLossPct: max(s.spec.LossBudgetPct(), playbooks.DefaultLossBudgetPct)}
	ls := *s
	ls.spec = &sp
	s.progressf("check: latency run, %d B at %s (%s of the capacity %.3f Mpps)", size, sp.Rate, s.spec.LatencyLoadOrDefault(), capacity)
	run, err := ls.runOne(ctx, p, size, lcores)
	if run != nil {
		judgeRunLoad(&sp, run, p.noLatency())
		run.LatencyLoad = fmt.Sprintf("%s of %.3f Mpps", s.spec.LatencyLoadOrDefault(), capacity)
	}
	return run, err
}

// measureLatency adds the latency runs below capacity: for a search, at
// latency_load of each size's NDR; for rate: max, of what each run
// received; judged with max_p99_us. Only with max_p99_us or latency_load
// (a run more); a fixed rate's run is its own.
func (s *checkStep) measureLatency(ctx context.Context, p *checkPath, lcores string, res *CheckResult) error {
	sp := s.spec
	if sp.LoadKind() == playbooks.LoadRate || (sp.Thresholds.MaxP99Us <= 0 && sp.LatencyLoad == "") {
		return nil
	}
	type at struct {
		size int
		cap  float64
	}
	var ats []at
	if res.Search != nil {
		for _, sz := range res.Search.Sizes {
			ats = append(ats, at{sz.FrameSize, sz.NDR.Mpps})
		}
	}
	for _, r := range res.Runs {
		if r.Invalid == "" {
			ats = append(ats, at{r.FrameSize, r.RxMpps})
		}
	}
	for _, a := range ats {
		if why := p.noLatency(); why != "" {
			// no run that could not measure it: said, not judged
			res.LatencyRuns = append(res.LatencyRuns, CheckRun{FrameSize: a.size, LatencyNote: why + ": latency not measured, max_p99_us not judged"})
			continue
		}
		if a.cap <= 0 {
			lr := CheckRun{FrameSize: a.size, LatencyNote: "no capacity measured (no NDR): latency not measured"}
			if sp.Thresholds.MaxP99Us > 0 {
				lr.Thresholds = []ThresholdVerdict{{Name: "max_p99_us", Limit: sp.Thresholds.MaxP99Us, Note: "not measured: no load below a capacity to measure it at"}}
			}
			res.LatencyRuns = append(res.LatencyRuns, lr)
			continue
		}
		run, err := s.latencyAt(ctx, p, a.size, lcores, a.cap*1e6*sp.LatencyLoadFraction(), a.cap)
		if run != nil {
			res.LatencyRuns = append(res.LatencyRuns, *run)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// latencyFailures are the failed verdicts of the latency runs.
func latencyFailures(res *CheckResult) (below []ThresholdVerdict, invalid []string) {
	for i := range res.LatencyRuns {
		r := &res.LatencyRuns[i]
		r.Pass = r.Invalid == ""
		if r.Invalid != "" {
			invalid = append(invalid, fmt.Sprintf("latency run %d B: %s", r.FrameSize, r.Invalid))
		}
		for _, t := range r.Thresholds {
			if !t.Pass {
				r.Pass = false
				t.Name = fmt.Sprintf("%s (latency run, %d B)", t.Name, r.FrameSize)
				below = append(below, t)
			}
		}
	}
	return below, invalid
}

// writeLoadText prints the load the check judged at.
func (r *CheckResult) writeLoadText(w io.Writer) {
	if r.Load == nil {
		return
	}
	fmt.Fprintf(w, "load: %s", r.Load.Text)
	if r.Load.LatencyLoad != "" {
		fmt.Fprintf(w, "; latency at %s of the capacity", r.Load.LatencyLoad)
	}
	fmt.Fprintln(w)
	if r.Load.LabFigures {
		fmt.Fprintln(w, "thresholds: lab figures (check.lab: rig runs inside a virtual lab, whose af_packet path is bound by the kernel, not the card)")
	}
}

// writeLatencyText prints the latency runs.
func (r *CheckResult) writeLatencyText(w io.Writer) {
	for _, run := range r.LatencyRuns {
		if run.Sent == 0 {
			fmt.Fprintf(w, "latency %d B: %s\n", run.FrameSize, run.LatencyNote)
			for _, t := range run.Thresholds {
				fmt.Fprintf(w, "  threshold %s\n", t)
			}
			continue
		}
		fmt.Fprintf(w, "latency below capacity (%s), ", run.LatencyLoad)
		run.writeText(w, r.senders(r.Ingress, r.Egress))
	}
}

// searchRuns are a search's sizes as runs for the metrics file: the NDR's
// rate, no loss (its definition), valid unless a trial was invalid or
// failed, passing when the check passed or none of its failed verdicts
// names the size.
func (r *CheckResult) searchRuns() []*CheckRun {
	if r.Search == nil {
		return nil
	}
	var out []*CheckRun
	for _, sz := range r.Search.Sizes {
		run := &CheckRun{FrameSize: sz.FrameSize, RxMpps: sz.NDR.Mpps, RxGbps: sz.NDR.Gbps, Pass: true}
		if len(sz.Invalid) > 0 || sz.Error != "" {
			run.Invalid = strings.Join(append(append([]string(nil), sz.Invalid...), sz.Error), "; ")
		}
		tag := fmt.Sprintf("%d B)", sz.FrameSize)
		for _, t := range r.SearchThresholds {
			if !t.Pass && strings.HasSuffix(t.Name, tag) {
				run.Pass = false
			}
		}
		for _, lr := range r.LatencyRuns {
			if lr.FrameSize == sz.FrameSize && !lr.Pass {
				run.Pass = false
			}
		}
		run.Pass = run.Pass && run.Invalid == "" && (r.Offload == nil || r.Offload.Pass)
		out = append(out, run)
	}
	return out
}
