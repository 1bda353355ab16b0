package bench

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
// A trial whose generator did not offer the rate (preempted on a shared
// host, or at its limit) is repeated once at the same rate; the repeat
// replaces it. Twice short, the rate fails: the generator is the limit.

// TrialOutcome is what one trial at an offered rate measured.
type TrialOutcome struct {
	Sent     uint64 `json:"sent"`
	Received uint64 `json:"received"`
	// NotOffered says why the generator did not send at the asked rate
	// (its own rate more than RateTolerance below it): the trial fails,
	// and the rates found are limited by the generator, not the path.
	NotOffered string `json:"notOffered,omitempty"`
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
	}
	return nil
}

// Trial purposes.
const (
	PurposeSearch     = "search"
	PurposeConfirmNDR = "confirm NDR"
	PurposeConfirmPDR = "confirm PDR"
	PurposeRepeat     = "repeat (not offered)"
)

// Trial is one trial of a search.
type Trial struct {
	N           int     `json:"n"` // 1-based
	Purpose     string  `json:"purpose"`
	OfferedMpps float64 `json:"offeredMpps"`
	TrialOutcome
	LossPct float64 `json:"lossPct"`
	NDRPass bool    `json:"ndrPass"`
	PDRPass bool    `json:"pdrPass,omitempty"`
	pps     float64
}

// SearchFound is what a search found for one criterion.
type SearchFound struct {
	Mpps    float64 `json:"mpps"`    // the highest rate that passed; 0: none did
	LossPct float64 `json:"lossPct"` // at that rate (the last trial there)
	// UpperMpps is the lowest rate that failed (0: none failed, the
	// search's upper bound passed)
	UpperMpps float64 `json:"upperMpps,omitempty"`
	Resolved  bool    `json:"resolved"`  // the bracket is within the resolution (or the upper bound passed)
	Confirmed bool    `json:"confirmed"` // a confirmation trial at Mpps passed too
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
	s.crits = []criterion{{name: "NDR", confirm: PurposeConfirmNDR, pass: func(t Trial) bool { return t.NDRPass }}}
	if spec.PDRLossPct > 0 {
		// PDR first: its bracket is at or above NDR's, and its trials
		// narrow NDR's upper bound too
		s.crits = append([]criterion{{name: "PDR", confirm: PurposeConfirmPDR, pass: func(t Trial) bool { return t.PDRPass }}}, s.crits...)
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
	for i, t := range s.trials {
		if !c.pass(t) && !s.repeated(i) {
			hi = math.Min(hi, t.pps)
		}
	}
	for _, t := range s.trials {
		if c.pass(t) && t.pps < hi {
			lo = math.Max(lo, t.pps)
		}
	}
	return lo, hi
}

// triedAt counts every trial at exactly pps.
func (s *searcher) triedAt(pps float64) int {
	n := 0
	for _, t := range s.trials {
		if t.pps == pps {
			n++
		}
	}
	return n
}

// repeated: trial i was not offered and a later trial at its rate
// replaces it.
func (s *searcher) repeated(i int) bool {
	if s.trials[i].NotOffered == "" {
		return false
	}
	for _, t := range s.trials[i+1:] {
		if t.pps == s.trials[i].pps {
			return true
		}
	}
	return false
}

// next is the next trial's rate and purpose; done when every criterion is
// resolved and its rate confirmed (or nothing passed).
func (s *searcher) next() (pps float64, purpose string, done bool) {
	if len(s.trials) == 0 {
		return s.spec.MaxPPS, PurposeSearch, false
	}
	if last := s.trials[len(s.trials)-1]; last.NotOffered != "" && s.triedAt(last.pps) == 1 {
		return last.pps, PurposeRepeat, false
	}
	for _, c := range s.crits {
		lo, hi := s.bounds(c)
		if !math.IsInf(hi, 1) && hi-lo > s.spec.ResolutionPPS {
			return (lo + hi) / 2, PurposeSearch, false
		}
		if lo > 0 && s.trialsAt(lo) < 2 {
			return lo, c.confirm, false
		}
	}
	return 0, "", true
}

// trialsAt counts the trials at exactly pps (a confirmation repeats the
// rate it confirms).
func (s *searcher) trialsAt(pps float64) int {
	n := 0
	for i, t := range s.trials {
		if t.pps == pps && !s.repeated(i) {
			n++
		}
	}
	return n
}

// record adds a trial and notes a loss below a rate that passed.
func (s *searcher) record(pps float64, purpose string, o TrialOutcome) {
	t := Trial{N: len(s.trials) + 1, Purpose: purpose, OfferedMpps: pps / 1e6, TrialOutcome: o, LossPct: o.LossPct(), pps: pps}
	t.NDRPass = o.NotOffered == "" && o.Sent > 0 && t.LossPct == 0
	t.PDRPass = o.NotOffered == "" && o.Sent > 0 && s.spec.PDRLossPct > 0 && t.LossPct <= s.spec.PDRLossPct
	for _, c := range s.crits {
		if c.pass(t) {
			continue
		}
		for _, e := range s.trials {
			if c.pass(e) && e.pps >= pps {
				s.notes = append(s.notes, fmt.Sprintf("%s: trial %d failed at %.4f Mpps (loss %.4g %%) though trial %d passed at %.4f Mpps: the path's loss varies between trials (a loaded host?); the lower rate counts",
					c.name, t.N, pps/1e6, t.LossPct, e.N, e.pps/1e6))
				break
			}
		}
	}
	s.trials = append(s.trials, t)
}

// result is the search's answer so far.
func (s *searcher) result() SearchResult {
	r := SearchResult{Trials: s.trials, Notes: s.notes}
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
		if t.pps == lo {
			f.LossPct = t.LossPct
		}
		if t.pps == hi && t.NotOffered != "" && !s.repeated(i) {
			f.Limit = "generator"
		}
	}
	switch {
	case math.IsInf(hi, 1):
		f.Resolved = lo > 0
		if lo == s.spec.MaxPPS {
			f.Limit = "search maximum"
		}
	default:
		f.UpperMpps = hi / 1e6
		f.Resolved = hi-lo <= s.spec.ResolutionPPS
	}
	f.Confirmed = lo > 0 && s.trialsAt(lo) >= 2
	return f
}
