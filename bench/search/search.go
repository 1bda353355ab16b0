// Package search runs many dataplane runs and reads them together: a
// sweep over frame sizes, cores, queues, bursts, descriptors and rates
// (PlanSweep, RunSweep) and RFC 2544's zero-loss search (Search, RunNDR),
// with the CPUs they may use and their tables and CSV. Each run is a
// bench.RunFunc: a child process, or a two-host trial (bench/peer).
package search

import (
	"context"
	"fmt"
	"math"
)

// The RFC 2544 throughput search (section 26.1): the highest offered rate
// at which the path loses no frame (NDR), and the highest at which it
// loses at most a tolerance (PDR), by binary search between a lower bound
// that passed and an upper bound that failed, to a resolution, then a
// confirmation trial at the rate found. Pure: trials come from a
// TrialFunc, so the algorithm is tested against fakes with a known answer.
//
// Bounds come from every trial so far, not only the last: a criterion's
// upper bound is the lowest rate that failed it, its lower bound the
// highest rate below that which passed. A loss is believed over an
// earlier zero-loss trial at a higher rate (NDR means no loss, and the
// path did lose frames at that rate): the search says so in a note, as the
// path's loss then varies from trial to trial. A confirmation that fails
// is such a loss at the rate found: the search goes on below it.
//
// A trial counts at the rate the generator actually offered, which a
// preempted generator leaves a little below the asked one. A trial whose
// generator did not come near the rate (at its limit, or preempted for
// long) is repeated once at the same rate; the repeat replaces it. Twice
// short, the rate fails: the generator is the limit.

// TrialOutcome is what one trial at an offered rate measured.
type TrialOutcome struct {
	Sent     uint64 `json:"sent"`
	Received uint64 `json:"received"`
	// OfferedPPS is the rate the generator actually sent at (over its own
	// sending span); 0: the asked rate. A trial counts at this rate
	// (RFC 2544's offered load is what the tester transmitted): a
	// generator preempted for a moment sends a little less than asked.
	OfferedPPS float64 `json:"-"`
	// NotOffered says why the generator did not send near the asked rate
	// at all (more than RateTolerance below it): the trial fails at the
	// asked rate, and the rates found are limited by the generator.
	NotOffered string `json:"notOffered,omitempty"`
	// Far is the far forwarder's counters in a two-host trial (the DUT on
	// a peer): where the frames that did not come back were lost
	Far *FarCounts `json:"far,omitempty"`
}

// FarCounts are a two-host trial's far forwarder's totals (all its ports).
type FarCounts struct {
	Received  uint64 `json:"received"`          // what reached it
	Forwarded uint64 `json:"forwarded"`         // what it sent back
	Policed   uint64 `json:"policed,omitempty"` // dropped over its --max-rate
	Dropped   uint64 `json:"dropped,omitempty"` // its tx queue full
}

// LossWhere splits a two-host trial's loss along the path: on the way to
// the far host (sent, not received there), in its forwarder (received,
// not forwarded), and on the way back (forwarded, not received here).
func (o TrialOutcome) LossWhere() string {
	if o.Far == nil {
		return ""
	}
	d := func(a, b uint64) uint64 {
		if a > b {
			return a - b
		}
		return 0
	}
	f := o.Far
	return fmt.Sprintf("%d lost on the way to the far host, %d in its forwarder (%d over its --max-rate, %d on a full tx queue), %d on the way back",
		d(o.Sent, f.Received), d(f.Received, f.Forwarded), f.Policed, f.Dropped, d(f.Forwarded, o.Received))
}

// LossPct is the share of the sent frames that did not arrive (100 when
// nothing was sent).
func (o TrialOutcome) LossPct() float64 {
	if o.Sent == 0 {
		return 100
	}
	if o.Received >= o.Sent {
		return 0
	}
	return float64(o.Sent-o.Received) / float64(o.Sent) * 100
}

// TrialFunc runs one trial at pps frames per second.
type TrialFunc func(ctx context.Context, pps float64) (TrialOutcome, error)

// SearchSpec bounds one search.
type SearchSpec struct {
	MaxPPS        float64 // the first trial's rate: the highest that may be found
	ResolutionPPS float64 // a bracket (lower bound that passed, upper that failed) this narrow ends the search
	MaxTrials     int     // all trials, confirmations included
	PDRLossPct    float64 // PDR's loss tolerance; 0: NDR only
	// LossRetries: a trial that lost frames is tried again at the same
	// rate up to this many times, the last try counting (0: RFC 2544's
	// one trial per rate). For hosts whose CPUs stop now and then: a loss
	// seen once is not the path's.
	LossRetries int
}

// Validate checks the spec before any trial.
func (s SearchSpec) Validate() error {
	switch {
	case !(s.MaxPPS > 0) || math.IsInf(s.MaxPPS, 0):
		return fmt.Errorf("search: upper bound %g frames/s: want more than 0", s.MaxPPS)
	case !(s.ResolutionPPS > 0) || s.ResolutionPPS >= s.MaxPPS:
		return fmt.Errorf("search: resolution %g frames/s: want more than 0 and below the upper bound (%g)", s.ResolutionPPS, s.MaxPPS)
	case s.MaxTrials < 2:
		return fmt.Errorf("search: --max-trials %d: want at least 2 (a trial and its confirmation)", s.MaxTrials)
	case s.PDRLossPct < 0 || s.PDRLossPct >= 100:
		return fmt.Errorf("search: --pdr-loss-pct %g: want 0 (NDR only) up to below 100", s.PDRLossPct)
	case s.LossRetries < 0 || s.LossRetries > 5:
		return fmt.Errorf("search: --loss-retries %d: want 0..5", s.LossRetries)
	}
	return nil
}

// Trial purposes. A search trial's rate is the middle of its criterion's
// bracket, or one of the two steps the bracket's failure suggests
// (searcher.forwardingStep): those say which criterion they are for.
const (
	PurposeSearch     = "search"
	purposeForwarding = "search %s: below the forwarding rate"
	purposeAbove      = "search %s: one resolution above"
	PurposeConfirmNDR = "confirm NDR"
	PurposeConfirmPDR = "confirm PDR"
	PurposeRepeat     = "repeat (not offered)"
	PurposeRetry      = "retry (loss)"
)

// Trial is one trial of a search.
type Trial struct {
	N           int     `json:"n"` // 1-based
	Purpose     string  `json:"purpose"`
	AskedMpps   float64 `json:"askedMpps"`
	OfferedMpps float64 `json:"offeredMpps"` // what the generator sent at: the trial's rate
	TrialOutcome
	LossPct float64 `json:"lossPct"`
	NDRPass bool    `json:"ndrPass"`
	PDRPass bool    `json:"pdrPass,omitempty"`
	asked   float64
	rate    float64 // pps the trial counts at: offered, or asked when not offered
	confirm bool    // a confirmation, or its repeat
}

// SearchFound is what a search found for one criterion.
type SearchFound struct {
	Mpps    float64 `json:"mpps"`    // the highest rate that passed; 0: none did
	LossPct float64 `json:"lossPct"` // at that rate (the last trial there)
	// UpperMpps is the lowest rate that failed (0: none failed, the
	// search's upper bound passed)
	UpperMpps float64 `json:"upperMpps,omitempty"`
	Resolved  bool    `json:"resolved"`  // the bracket is within the resolution (or the upper bound passed)
	Confirmed bool    `json:"confirmed"` // another trial within the resolution below Mpps passed too (its confirmation)
	// Limit: "search maximum" when the search's upper bound passed,
	// "generator" when the failure above came from a generator that did
	// not reach the rate; "" otherwise (the path's loss).
	Limit       string  `json:"limit,omitempty"`
	Gbps        float64 `json:"gbps,omitempty"`        // L2, FCS included (set by the caller, who knows the frame size)
	LineRatePct float64 `json:"lineRatePct,omitempty"` // when the link speed is known
}

// SearchResult is a search's answer and its trials.
type SearchResult struct {
	NDR    SearchFound  `json:"ndr"`
	PDR    *SearchFound `json:"pdr,omitempty"`
	Trials []Trial      `json:"trials"`
	Notes  []string     `json:"notes,omitempty"`
}

// criterion is NDR (zero loss) or PDR (loss within the tolerance).
type criterion struct {
	name    string
	confirm string
	pass    func(Trial) bool
}

// Search runs trials until both criteria are resolved and confirmed, or
// MaxTrials ran. A trial's error ends the search with the result so far.
func Search(ctx context.Context, spec SearchSpec, trial TrialFunc) (SearchResult, error) {
	if err := spec.Validate(); err != nil {
		return SearchResult{}, err
	}
	s := &searcher{spec: spec}
	// NDR first (the answer the search is for, when the budget runs
	// out); its trials narrow PDR's bracket too
	s.crits = []criterion{{name: "NDR", confirm: PurposeConfirmNDR, pass: func(t Trial) bool { return t.NDRPass }}}
	if spec.PDRLossPct > 0 {
		s.crits = append(s.crits, criterion{name: "PDR", confirm: PurposeConfirmPDR, pass: func(t Trial) bool { return t.PDRPass }})
	}
	for len(s.trials) < spec.MaxTrials {
		pps, purpose, done := s.next()
		if done {
			return s.result(), nil
		}
		if err := ctx.Err(); err != nil {
			return s.result(), fmt.Errorf("search interrupted after %d trial(s): %w", len(s.trials), err)
		}
		o, err := trial(ctx, pps)
		if err != nil {
			return s.result(), fmt.Errorf("trial %d (%s) at %.4f Mpps: %w", len(s.trials)+1, purpose, pps/1e6, err)
		}
		s.record(pps, purpose, o)
	}
	if _, _, done := s.next(); !done {
		s.notes = append(s.notes, fmt.Sprintf("stopped after %d trials (--max-trials) before the search was resolved and confirmed", spec.MaxTrials))
	}
	return s.result(), nil
}

type searcher struct {
	spec   SearchSpec
	crits  []criterion
	trials []Trial
	notes  []string
}

// bounds are a criterion's bracket: lo the highest passing rate below hi,
// hi the lowest failing rate (+Inf: none failed).
func (s *searcher) bounds(c criterion) (lo, hi float64) {
	hi = math.Inf(1)
	for i := range s.trials {
		if _, fail, _ := s.verdict(c, i); fail > 0 {
			hi = math.Min(hi, fail)
		}
	}
	for i := range s.trials {
		if pass, _, _ := s.verdict(c, i); pass > 0 && pass < hi {
			lo = math.Max(lo, pass)
		}
	}
	return lo, hi
}

// offeredSlack: a generator that sent this much below the asked rate
// offered it (its span is measured from the first to the last burst).
const offeredSlack = 0.001

// verdict is what trial i says of c: passed at a rate, failed at one
// (0: neither), and whether the failure is the generator's. A trial that
// was tried again (not offered, or a loss retried) says nothing. One the
// generator did not offer fails at the asked rate; one that passed though
// its generator stayed below the asked rate passed at what it offered,
// and when that happened at this asked rate before, tells that the rate
// cannot be offered (else the search would ask it again and again).
func (s *searcher) verdict(c criterion, i int) (pass, fail float64, generator bool) {
	t := s.trials[i]
	switch {
	case s.repeated(i):
		return 0, 0, false
	case t.NotOffered != "":
		return 0, t.asked, true
	case !c.pass(t):
		// at what it offered, or at the asked rate when its generator
		// sent a little more (a failed confirmation fails the rate found)
		return 0, math.Min(t.rate, t.asked), false
	case s.short(t) && s.shortBefore(i):
		return t.rate, t.asked, true
	}
	return t.rate, 0, false
}

// short: the trial's generator stayed below the asked rate.
func (s *searcher) short(t Trial) bool { return t.rate < t.asked*(1-offeredSlack) }

// shortBefore: an earlier trial at the same asked rate was short too.
func (s *searcher) shortBefore(i int) bool {
	for _, e := range s.trials[:i] {
		if e.asked == s.trials[i].asked && s.short(e) {
			return true
		}
	}
	return false
}

// repeated: the next trial tries trial i again (not offered, or a loss
// retried): i is replaced.
func (s *searcher) repeated(i int) bool {
	if i+1 >= len(s.trials) {
		return false
	}
	p := s.trials[i+1].Purpose
	return p == PurposeRepeat || p == PurposeRetry
}

// again is the last trial's retry, if it needs one: once when its
// generator did not offer the rate, up to LossRetries in a row when it
// lost frames.
func (s *searcher) again() (pps float64, purpose string, ok bool) {
	last := s.trials[len(s.trials)-1]
	if last.NotOffered != "" {
		return last.asked, PurposeRepeat, last.Purpose != PurposeRepeat
	}
	if last.LossPct == 0 || s.spec.LossRetries == 0 {
		return 0, "", false
	}
	n := 0
	for i := len(s.trials) - 1; i >= 0 && s.trials[i].Purpose == PurposeRetry; i-- {
		n++
	}
	return last.asked, PurposeRetry, n < s.spec.LossRetries
}

// next is the next trial's asked rate and purpose; done when every
// criterion is resolved and its rate confirmed (or nothing passed).
func (s *searcher) next() (pps float64, purpose string, done bool) {
	if len(s.trials) == 0 {
		return s.spec.MaxPPS, PurposeSearch, false
	}
	if pps, purpose, ok := s.again(); ok {
		return pps, purpose, false
	}
	for _, c := range s.crits {
		lo, hi := s.bounds(c)
		if !math.IsInf(hi, 1) && hi-lo > s.spec.ResolutionPPS {
			if pps, purpose, ok := s.forwardingStep(c, lo, hi); ok {
				return pps, purpose, false
			}
			return (lo + hi) / 2, PurposeSearch, false
		}
		if lo > 0 && !s.confirmed(c, lo) {
			return lo, c.confirm, false
		}
	}
	return 0, "", true
}

// forwardingStep is a search trial's rate that the bracket's failure
// suggests, before bisection (the idea of MLRsearch's first trials,
// draft-ietf-bmwg-mlrsearch: a trial that lost frames still forwarded at
// some rate, and the rate sought lies near it). Once per criterion: just
// below the forwarding rate of the failure at hi (its rate times the share
// received), when that lies inside the bracket; and once: one resolution
// above lo, when that forwarding rate is within a resolution of lo (the
// answer is just above it). A bounded path (a policer, a saturated core)
// is resolved in a few trials instead of log2(range/resolution); a path
// that loses a little at every rate costs one trial more than bisection.
func (s *searcher) forwardingStep(c criterion, lo, hi float64) (float64, string, bool) {
	res := s.spec.ResolutionPPS
	fwd, ok := s.forwardingAt(c, hi)
	if !ok {
		return 0, "", false
	}
	below, above := fmt.Sprintf(purposeForwarding, c.name), fmt.Sprintf(purposeAbove, c.name)
	if h := fwd - res/2; !s.asked(below) && h > lo+res/2 && h < hi-res/2 {
		return h, below, true
	}
	if !s.asked(above) && fwd < lo+res && hi-lo >= 2*res {
		return lo + res, above, true
	}
	return 0, "", false
}

// forwardingAt is the forwarding rate of the latest trial that failed c at
// hi for the path's loss (not the generator's), when it received frames.
func (s *searcher) forwardingAt(c criterion, hi float64) (float64, bool) {
	for i := len(s.trials) - 1; i >= 0; i-- {
		t := s.trials[i]
		if _, fail, generator := s.verdict(c, i); fail == hi && !generator && t.Sent > 0 && t.Received > 0 {
			return t.rate * math.Min(1, float64(t.Received)/float64(t.Sent)), true
		}
	}
	return 0, false
}

// asked: a trial of this purpose ran.
func (s *searcher) asked(purpose string) bool {
	for _, t := range s.trials {
		if t.Purpose == purpose {
			return true
		}
	}
	return false
}

// confirmed: a confirmation trial (or its repeat) asked within the
// resolution at or below lo passed c, its generator offering the rate (a
// generator a little above it carried at least lo).
func (s *searcher) confirmed(c criterion, lo float64) bool {
	for i, t := range s.trials {
		pass, fail, _ := s.verdict(c, i)
		if t.confirm && pass > 0 && fail == 0 && t.asked <= lo && t.asked >= lo-s.spec.ResolutionPPS {
			return true
		}
	}
	return false
}

// record adds a trial.
func (s *searcher) record(pps float64, purpose string, o TrialOutcome) {
	t := Trial{N: len(s.trials) + 1, Purpose: purpose, AskedMpps: pps / 1e6, TrialOutcome: o, LossPct: o.LossPct(), asked: pps, rate: pps}
	if o.OfferedPPS > 0 && o.NotOffered == "" {
		t.rate = o.OfferedPPS
	}
	t.OfferedMpps = t.rate / 1e6
	t.confirm = purpose == PurposeConfirmNDR || purpose == PurposeConfirmPDR ||
		((purpose == PurposeRepeat || purpose == PurposeRetry) && len(s.trials) > 0 && s.trials[len(s.trials)-1].confirm)
	t.NDRPass = o.NotOffered == "" && o.Sent > 0 && t.LossPct == 0
	t.PDRPass = o.NotOffered == "" && o.Sent > 0 && s.spec.PDRLossPct > 0 && t.LossPct <= s.spec.PDRLossPct
	s.trials = append(s.trials, t)
}

// contradictions notes each loss (not retried away) at or below a rate
// that passed earlier: the lower rate counts.
func (s *searcher) contradictions() []string {
	var out []string
	for _, c := range s.crits {
		for i, t := range s.trials {
			_, fail, generator := s.verdict(c, i)
			if fail == 0 || generator {
				continue
			}
			for j, e := range s.trials[:i] {
				if pass, _, _ := s.verdict(c, j); pass > 0 && pass >= fail {
					out = append(out, fmt.Sprintf("%s: trial %d failed at %.4f Mpps (loss %.4g %%) though trial %d passed at %.4f Mpps: the path's loss varies between trials (a loaded host?); the lower rate counts",
						c.name, t.N, fail/1e6, t.LossPct, e.N, pass/1e6))
					break
				}
			}
		}
	}
	return out
}

// result is the search's answer so far.
func (s *searcher) result() SearchResult {
	r := SearchResult{Trials: s.trials, Notes: append(s.contradictions(), s.notes...)}
	for _, c := range s.crits {
		f := s.found(c)
		if c.name == "NDR" {
			r.NDR = f
		} else {
			r.PDR = &f
		}
	}
	return r
}

// found is one criterion's answer from the trials so far.
func (s *searcher) found(c criterion) SearchFound {
	lo, hi := s.bounds(c)
	f := SearchFound{Mpps: lo / 1e6}
	for i, t := range s.trials {
		pass, fail, generator := s.verdict(c, i)
		if pass == lo && pass > 0 {
			f.LossPct = t.LossPct
		}
		if fail == hi && generator {
			f.Limit = "generator"
		}
	}
	switch {
	case math.IsInf(hi, 1):
		f.Resolved = lo > 0
		if lo >= s.spec.MaxPPS-s.spec.ResolutionPPS {
			f.Limit = "search maximum"
		}
	default:
		f.UpperMpps = hi / 1e6
		f.Resolved = hi-lo <= s.spec.ResolutionPPS
	}
	f.Confirmed = lo > 0 && s.confirmed(c, lo)
	return f
}
