package search

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// policed is a fake path that forwards at most capPPS: above it the excess
// is lost (as rig bench fwd --max-rate does), below it nothing.
func policed(capPPS float64) TrialFunc {
	return func(_ context.Context, pps float64) (TrialOutcome, error) {
		sent := uint64(pps) // one second
		recv := sent
		if pps > capPPS {
			recv = uint64(capPPS)
		}
		return TrialOutcome{Sent: sent, Received: recv}, nil
	}
}

// collapsing is a fake path that forwards nothing above capPPS (a path
// that collapses in overload): its failures tell no forwarding rate, so
// the search bisects (searcher.forwardingStep has nothing to go on).
func collapsing(capPPS float64) TrialFunc {
	return func(_ context.Context, pps float64) (TrialOutcome, error) {
		o := TrialOutcome{Sent: uint64(pps), Received: uint64(pps)}
		if pps > capPPS {
			o.Received = 0
		}
		return o, nil
	}
}

// counting wraps f and records the rates it was asked for.
func counting(f TrialFunc, rates *[]float64) TrialFunc {
	return func(ctx context.Context, pps float64) (TrialOutcome, error) {
		*rates = append(*rates, pps)
		return f(ctx, pps)
	}
}

func TestSearchFindsCap(t *testing.T) {
	const capPPS = 500e3
	var rates []float64
	spec := SearchSpec{MaxPPS: 1e6, ResolutionPPS: 1e3, MaxTrials: 30, PDRLossPct: 1}
	r, err := Search(context.Background(), spec, counting(policed(capPPS), &rates))
	if err != nil {
		t.Fatal(err)
	}
	ndr := r.NDR.Mpps * 1e6
	if ndr > capPPS || ndr < capPPS-spec.ResolutionPPS || !r.NDR.Resolved || !r.NDR.Confirmed || r.NDR.LossPct != 0 {
		t.Errorf("NDR %+v, want within %g below %g, resolved and confirmed", r.NDR, spec.ResolutionPPS, capPPS)
	}
	if u := r.NDR.UpperMpps * 1e6; u <= capPPS || u-ndr > spec.ResolutionPPS {
		t.Errorf("NDR upper bound %g: want a failing rate within the resolution above %g", u, ndr)
	}
	// 1 % loss allowed: capPPS / 0.99 passes
	pdrWant := capPPS / 0.99
	if r.PDR == nil || r.PDR.Mpps*1e6 > pdrWant || r.PDR.Mpps*1e6 < pdrWant-spec.ResolutionPPS || !r.PDR.Confirmed || r.PDR.LossPct > 1 || r.PDR.LossPct == 0 {
		t.Errorf("PDR %+v, want just below %g with 0 < loss <= 1 %%", r.PDR, pdrWant)
	}
	if rates[0] != spec.MaxPPS {
		t.Errorf("first trial at %g, want the upper bound %g", rates[0], spec.MaxPPS)
	}
	// binary search: about log2(1e6/1e3) = 10 trials per criterion, fewer
	// as PDR's trials narrow NDR's bracket, plus two confirmations
	if len(r.Trials) > 24 || len(r.Trials) != len(rates) {
		t.Errorf("%d trials (%d asked), want at most 24", len(r.Trials), len(rates))
	}
	last := r.Trials[len(r.Trials)-1]
	if last.Purpose != PurposeConfirmPDR || last.OfferedMpps != r.PDR.Mpps {
		t.Errorf("last trial %+v: want PDR's confirmation at %g Mpps (NDR first, then PDR)", last, r.PDR.Mpps)
	}
	if len(r.Notes) != 0 {
		t.Errorf("notes on a monotonic path: %q", r.Notes)
	}
}

// The upper bound passes: that is the answer, confirmed, limited by the
// search's maximum; NDR only when no PDR tolerance is given.
func TestSearchUpperBoundPasses(t *testing.T) {
	r, err := Search(context.Background(), SearchSpec{MaxPPS: 2e5, ResolutionPPS: 1e3, MaxTrials: 10}, policed(1e6))
	if err != nil {
		t.Fatal(err)
	}
	if r.NDR.Mpps != 0.2 || !r.NDR.Confirmed || !r.NDR.Resolved || r.NDR.Limit != "search maximum" || r.PDR != nil || len(r.Trials) != 2 {
		t.Errorf("got %+v, %d trials; want NDR 0.2 Mpps confirmed in 2 trials, no PDR", r.NDR, len(r.Trials))
	}
}

// A policed path: the first trial's forwarding rate says where the cap
// is, so the search asks just below it, then one resolution above, and
// confirms: 4 trials where bisection (a path whose failures forward
// nothing) takes 12 for the same answer. A path that loses a little at
// every rate costs at most one trial more than bisection.
func TestSearchForwardingRateSteps(t *testing.T) {
	const capPPS = 500e3
	spec := SearchSpec{MaxPPS: 1e6, ResolutionPPS: 1e3, MaxTrials: 40}
	r, err := Search(context.Background(), spec, policed(capPPS))
	if err != nil {
		t.Fatal(err)
	}
	var purposes []string
	for _, tr := range r.Trials {
		purposes = append(purposes, fmt.Sprintf("%s@%.1f", tr.Purpose, tr.AskedMpps*1e3))
	}
	want := "search@1000.0 search NDR: below the forwarding rate@499.5 search NDR: one resolution above@500.5 confirm NDR@499.5"
	if got := strings.Join(purposes, " "); got != want || r.NDR.Mpps != 0.4995 || !r.NDR.Confirmed || !r.NDR.Resolved {
		t.Errorf("trials (purpose@kpps) %s\nwant %s; NDR %+v", got, want, r.NDR)
	}
	b, err := Search(context.Background(), spec, collapsing(capPPS))
	if err != nil {
		t.Fatal(err)
	}
	if ndr := b.NDR.Mpps * 1e6; len(b.Trials) != 12 || ndr > capPPS || ndr < capPPS-spec.ResolutionPPS || !b.NDR.Confirmed {
		t.Errorf("bisection: %d trials, NDR %+v; want 12 trials, within the resolution below %g", len(b.Trials), b.NDR, capPPS)
	}
	// 0.1 % lost at every rate: nothing passes NDR; bisection below the
	// forwarding step's failure
	lossy := func(_ context.Context, pps float64) (TrialOutcome, error) {
		return TrialOutcome{Sent: uint64(pps), Received: uint64(pps * 0.999)}, nil
	}
	l, err := Search(context.Background(), SearchSpec{MaxPPS: 1e6, ResolutionPPS: 1e5, MaxTrials: 20}, lossy)
	if err != nil {
		t.Fatal(err)
	}
	if l.NDR.Mpps != 0 || !l.NDR.Resolved || len(l.Trials) > 6 || l.Trials[1].Purpose != "search NDR: below the forwarding rate" {
		t.Errorf("lossy everywhere: NDR %+v, %d trials %+v; want none found in at most 6 (bisection: 5)", l.NDR, len(l.Trials), l.Trials)
	}
}

// Nothing passes: NDR 0, resolved (the bracket is below the resolution),
// nothing to confirm.
func TestSearchNothingPasses(t *testing.T) {
	lossy := func(_ context.Context, pps float64) (TrialOutcome, error) {
		return TrialOutcome{Sent: 1000, Received: 990}, nil
	}
	r, err := Search(context.Background(), SearchSpec{MaxPPS: 1e6, ResolutionPPS: 1e5, MaxTrials: 20}, lossy)
	if err != nil {
		t.Fatal(err)
	}
	if r.NDR.Mpps != 0 || r.NDR.Confirmed || !r.NDR.Resolved || r.NDR.UpperMpps > 0.1 {
		t.Errorf("got %+v, want none found below the resolution", r.NDR)
	}
}

// A zero-loss trial above the cap (noise) is found out by the
// confirmation, and the search goes on below it to the right answer.
func TestSearchConfirmationFails(t *testing.T) {
	const capPPS = 500e3
	lucky := 0
	base := policed(capPPS)
	noisy := func(ctx context.Context, pps float64) (TrialOutcome, error) {
		if pps > capPPS && pps < capPPS*1.2 && lucky == 0 {
			lucky++ // the first trial just above the cap loses nothing
			return TrialOutcome{Sent: uint64(pps), Received: uint64(pps)}, nil
		}
		return base(ctx, pps)
	}
	r, err := Search(context.Background(), SearchSpec{MaxPPS: 1e6, ResolutionPPS: 1e3, MaxTrials: 40}, noisy)
	if err != nil {
		t.Fatal(err)
	}
	if lucky != 1 {
		t.Fatal("the fake never passed a rate above the cap: the test proves nothing")
	}
	ndr := r.NDR.Mpps * 1e6
	if ndr > capPPS || ndr < capPPS-1e3 || !r.NDR.Confirmed {
		t.Errorf("NDR %+v: want just below %g, confirmed", r.NDR, capPPS)
	}
	failedConfirm := false
	for _, tr := range r.Trials {
		failedConfirm = failedConfirm || (tr.Purpose == PurposeConfirmNDR && !tr.NDRPass)
	}
	if !failedConfirm || len(r.Notes) == 0 || !strings.Contains(r.Notes[0], "the path's loss varies between trials") {
		t.Errorf("want a failed confirmation and a note; trials %+v, notes %q", r.Trials, r.Notes)
	}
}

// A loss below the cap (noise: a preempted forwarder) is believed: the
// answer is below the rate that lost frames. The first trial below the cap
// loses a frame (the forwarding-rate step, once the first trial failed);
// the search goes on below it, tries no rate below one that passed, so no
// contradiction is seen and there is no note.
func TestSearchLossBelowCapBelieved(t *testing.T) {
	const capPPS = 600e3
	base := policed(capPPS)
	noised := 0.0 // the rate of the trial that lost a frame
	noisy := func(ctx context.Context, pps float64) (TrialOutcome, error) {
		if noised == 0 && pps < capPPS { // one trial loses a frame whatever its rate
			noised = pps
			return TrialOutcome{Sent: uint64(pps), Received: uint64(pps) - 1}, nil
		}
		return base(ctx, pps)
	}
	r, err := Search(context.Background(), SearchSpec{MaxPPS: 1e6, ResolutionPPS: 1e3, MaxTrials: 40}, noisy)
	if err != nil {
		t.Fatal(err)
	}
	if noised == 0 {
		t.Fatalf("no trial below the cap: trials %+v", r.Trials)
	}
	if ndr := r.NDR.Mpps * 1e6; ndr >= noised || ndr < noised-1e3 || !r.NDR.Confirmed || !r.NDR.Resolved || r.NDR.UpperMpps*1e6 != noised {
		t.Errorf("NDR %+v: want just below the lossy trial's %g, confirmed", r.NDR, noised)
	}
	if len(r.Notes) != 0 {
		t.Errorf("notes %q, want none", r.Notes)
	}
}

// Random noise on both sides of the cap: whatever the trials say, the
// answer is a rate that passed, below the lowest that failed, and the
// search ends within its budget.
func TestSearchNoisyStaysConsistent(t *testing.T) {
	const capPPS = 500e3
	seed := uint64(7)
	rnd := func() float64 { // xorshift: deterministic
		seed ^= seed << 13
		seed ^= seed >> 7
		seed ^= seed << 17
		return float64(seed%10000) / 10000
	}
	noisy := func(_ context.Context, pps float64) (TrialOutcome, error) {
		eff := capPPS * (0.97 + 0.06*rnd()) // the cap seen by this trial: +-3 %
		if pps <= eff {
			return TrialOutcome{Sent: uint64(pps), Received: uint64(pps)}, nil
		}
		return TrialOutcome{Sent: uint64(pps), Received: uint64(eff)}, nil
	}
	spec := SearchSpec{MaxPPS: 1e6, ResolutionPPS: 1e3, MaxTrials: 30, PDRLossPct: 0.5}
	r, err := Search(context.Background(), spec, noisy)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Trials) > spec.MaxTrials {
		t.Fatalf("%d trials, budget %d", len(r.Trials), spec.MaxTrials)
	}
	ndr := r.NDR.Mpps * 1e6
	if ndr < capPPS*0.96 || ndr > capPPS*1.04 {
		t.Errorf("NDR %g: want within the noise of %g", ndr, capPPS)
	}
	for _, tr := range r.Trials {
		if !tr.NDRPass && tr.OfferedMpps*1e6 <= ndr {
			t.Errorf("trial %d failed at %g, at or below the NDR %g found", tr.N, tr.OfferedMpps*1e6, ndr)
		}
	}
	if r.PDR == nil || r.PDR.Mpps < r.NDR.Mpps {
		t.Errorf("PDR %+v below NDR %+v", r.PDR, r.NDR)
	}
}

// A budget too small to finish: the answer so far, unresolved or
// unconfirmed, with a note.
func TestSearchBudgetRunsOut(t *testing.T) {
	r, err := Search(context.Background(), SearchSpec{MaxPPS: 1e6, ResolutionPPS: 1, MaxTrials: 4}, policed(500e3))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Trials) != 4 || r.NDR.Resolved || r.NDR.Confirmed || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "stopped after 4 trials") {
		t.Errorf("got %+v, %d trials, notes %q", r.NDR, len(r.Trials), r.Notes)
	}
}

// A generator that cannot offer the rate fails the trial, and the answer
// says the generator was the limit.
func TestSearchGeneratorLimit(t *testing.T) {
	gen := func(_ context.Context, pps float64) (TrialOutcome, error) {
		if pps > 300e3 {
			return TrialOutcome{Sent: 300e3, Received: 300e3, NotOffered: "sent 0.3 Mpps"}, nil
		}
		return TrialOutcome{Sent: uint64(pps), Received: uint64(pps)}, nil
	}
	r, err := Search(context.Background(), SearchSpec{MaxPPS: 1e6, ResolutionPPS: 1e3, MaxTrials: 30}, gen)
	if err != nil {
		t.Fatal(err)
	}
	if r.NDR.Limit != "generator" || r.NDR.Mpps > 0.3 || r.NDR.Mpps < 0.299 || r.Trials[0].NDRPass {
		t.Errorf("got %+v, want NDR just below 0.3 Mpps limited by the generator", r.NDR)
	}
}

// A failing trial ends the search with its error and the trials so far.
func TestSearchTrialError(t *testing.T) {
	n := 0
	f := func(ctx context.Context, pps float64) (TrialOutcome, error) {
		if n++; n == 3 {
			return TrialOutcome{}, errors.New("EAL: no hugepages")
		}
		return policed(5e5)(ctx, pps)
	}
	r, err := Search(context.Background(), SearchSpec{MaxPPS: 1e6, ResolutionPPS: 1e3, MaxTrials: 30}, f)
	if err == nil || !strings.Contains(err.Error(), "trial 3 (search NDR: one resolution above) at") || !strings.Contains(err.Error(), "no hugepages") || len(r.Trials) != 2 {
		t.Errorf("err %v, %d trials; want trial 3's error after 2 trials", err, len(r.Trials))
	}
}

func TestSearchSpecValidate(t *testing.T) {
	for _, s := range []SearchSpec{
		{MaxPPS: 0, ResolutionPPS: 1, MaxTrials: 5},
		{MaxPPS: math.Inf(1), ResolutionPPS: 1, MaxTrials: 5},
		{MaxPPS: 10, ResolutionPPS: 0, MaxTrials: 5},
		{MaxPPS: 10, ResolutionPPS: 10, MaxTrials: 5},
		{MaxPPS: 10, ResolutionPPS: 1, MaxTrials: 1},
		{MaxPPS: 10, ResolutionPPS: 1, MaxTrials: 5, PDRLossPct: 100},
	} {
		if _, err := Search(context.Background(), s, policed(1)); err == nil {
			t.Errorf("%+v: want an error", s)
		}
	}
}

func TestTrialLossPct(t *testing.T) {
	for _, c := range []struct {
		o    TrialOutcome
		want float64
	}{{TrialOutcome{Sent: 0}, 100}, {TrialOutcome{Sent: 1000, Received: 1000}, 0}, {TrialOutcome{Sent: 1000, Received: 995}, 0.5}, {TrialOutcome{Sent: 10, Received: 11}, 0}} {
		if got := c.o.LossPct(); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%+v: %g, want %g", c.o, got, c.want)
		}
	}
}

// A trial the generator did not offer is repeated once at the same rate:
// a preempted generator does not make the answer low; twice short, the
// rate fails.
func TestSearchNotOfferedRepeated(t *testing.T) {
	const capPPS = 500e3
	base := collapsing(capPPS) // bisection: its trials land where this test needs them
	n, atCap := 0, 0
	flaky := func(ctx context.Context, pps float64) (TrialOutcome, error) {
		n++
		if pps == capPPS {
			atCap++
		}
		// preempted: short of the rate, once each; the third trial at the
		// cap is NDR's confirmation
		if n == 2 || n == 6 || (pps == capPPS && atCap == 3) {
			return TrialOutcome{Sent: uint64(pps * 0.8), Received: uint64(pps * 0.8), NotOffered: "sent 20 % less"}, nil
		}
		return base(ctx, pps)
	}
	r, err := Search(context.Background(), SearchSpec{MaxPPS: 1e6, ResolutionPPS: 1e3, MaxTrials: 40}, flaky)
	if err != nil {
		t.Fatal(err)
	}
	if ndr := r.NDR.Mpps * 1e6; ndr > capPPS || ndr < capPPS-1e3 || !r.NDR.Confirmed || r.NDR.Limit != "" {
		t.Errorf("NDR %+v: want just below %g, confirmed, not limited by the generator", r.NDR, capPPS)
	}
	if r.Trials[2].Purpose != PurposeRepeat || r.Trials[2].OfferedMpps != r.Trials[1].OfferedMpps || r.Trials[6].Purpose != PurposeRepeat {
		t.Errorf("trials %+v: want trials 3 and 7 repeating 2 and 6", r.Trials)
	}
	last, conf := r.Trials[len(r.Trials)-1], r.Trials[len(r.Trials)-2]
	if atCap != 4 || conf.Purpose != PurposeConfirmNDR || conf.NotOffered == "" || last.Purpose != PurposeRepeat || last.OfferedMpps != conf.OfferedMpps || !last.NDRPass {
		t.Errorf("trials %+v: want the confirmation not offered, then repeated and passed, the last", r.Trials)
	}
}

// A generator a little above the asked rate: a failed confirmation still
// fails the rate it asked (the answer), and the search goes on below it
// rather than asking the same rate again and again.
func TestSearchFailedConfirmationAboveAsked(t *testing.T) {
	const capPPS = 500e3
	confirmations := 0
	f := func(_ context.Context, pps float64) (TrialOutcome, error) {
		offered := pps * 1.003 // sends 0.3 % more than asked
		o := TrialOutcome{Sent: uint64(offered), Received: uint64(offered), OfferedPPS: offered}
		if offered > capPPS*1.005 { // a policer with 0.5 % of credit
			o.Received = uint64(capPPS * 1.005)
		}
		if pps > capPPS && pps < capPPS*1.005 && offered <= capPPS*1.005 {
			confirmations++
			if confirmations > 1 { // at the edge: passes once, then loses a few
				o.Received = o.Sent - 30
			}
		}
		return o, nil
	}
	r, err := Search(context.Background(), SearchSpec{MaxPPS: 1e6, ResolutionPPS: 1e3, MaxTrials: 40}, f)
	if err != nil {
		t.Fatal(err)
	}
	if !r.NDR.Confirmed || !r.NDR.Resolved || len(r.Trials) > 30 {
		t.Errorf("NDR %+v after %d trials: want resolved and confirmed", r.NDR, len(r.Trials))
		for _, tr := range r.Trials {
			t.Logf("%d %s asked %.1f offered %.1f loss %g", tr.N, tr.Purpose, tr.AskedMpps*1e6, tr.OfferedMpps*1e6, tr.LossPct)
		}
	}
	if ndr := r.NDR.Mpps * 1e6; ndr < capPPS*0.99 || ndr > capPPS*1.01 {
		t.Errorf("NDR %g, want about %g", ndr, capPPS)
	}
}

// --loss-retries: a loss seen once below the cap (a stalled host) is
// tried again and passes; a real loss above it fails every try.
func TestSearchLossRetries(t *testing.T) {
	const capPPS = 500e3
	base := policed(capPPS)
	below, spurious := 0, 0
	noisy := func(ctx context.Context, pps float64) (TrialOutcome, error) {
		if pps <= capPPS {
			below++
		}
		if pps <= capPPS && below%2 == 1 { // every other trial at or below the cap loses a frame
			spurious++
			return TrialOutcome{Sent: uint64(pps), Received: uint64(pps) - 1}, nil
		}
		return base(ctx, pps)
	}
	r, err := Search(context.Background(), SearchSpec{MaxPPS: 1e6, ResolutionPPS: 1e3, MaxTrials: 60, LossRetries: 1}, noisy)
	if err != nil {
		t.Fatal(err)
	}
	if spurious == 0 {
		t.Fatal("no spurious loss: the test proves nothing")
	}
	if ndr := r.NDR.Mpps * 1e6; ndr > capPPS || ndr < capPPS-1e3 || !r.NDR.Confirmed || len(r.Notes) != 0 {
		t.Errorf("NDR %+v, notes %q: want just below %g, confirmed, no contradiction", r.NDR, r.Notes, capPPS)
	}
	retries := 0
	for i, tr := range r.Trials {
		if tr.Purpose == PurposeRetry {
			retries++
			if prev := r.Trials[i-1]; prev.AskedMpps != tr.AskedMpps || prev.LossPct == 0 {
				t.Errorf("trial %d retries %+v", tr.N, prev)
			}
			if i > 1 && r.Trials[i-2].Purpose == PurposeRetry && r.Trials[i-2].AskedMpps == tr.AskedMpps {
				t.Errorf("trial %d: more than one retry in a row", tr.N)
			}
		}
	}
	if retries == 0 {
		t.Error("no retry")
	}
	if _, err := Search(context.Background(), SearchSpec{MaxPPS: 1e6, ResolutionPPS: 1e3, MaxTrials: 60, LossRetries: 6}, noisy); err == nil {
		t.Error("--loss-retries 6: want an error")
	}
}
