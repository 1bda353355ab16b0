package playbooks

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// `check: {search: ndr}`: instead of one run per frame size at a rate,
// the check runs the RFC 2544 throughput search through the same path
// (rig bench ndr's): trials of `duration`, a binary search for the highest
// offered rate with no loss (NDR) and with loss within ndr.pdr_loss_pct
// (PDR), to ndr.resolution, each confirmed. min_mpps and min_linerate_pct
// judge the NDR.

// SearchNDR is the one search there is.
const SearchNDR = "ndr"

// CheckNDR tunes the search; zero values are its defaults.
type CheckNDR struct {
	Resolution  string   `yaml:"resolution"`   // "0.5%" (of the line rate, else of the search's bound) or "10kpps"
	MaxTrials   int      `yaml:"max_trials"`   // per frame size, confirmations included
	PDRLossPct  *float64 `yaml:"pdr_loss_pct"` // nil: 0.5; 0: NDR only
	Max         string   `yaml:"max"`          // the search's upper bound (a rate); "": the generator's maximum
	LossRetries int      `yaml:"loss_retries"` // a trial that lost frames is tried again up to this many times (0..5)
	TrialGap    string   `yaml:"trial_gap"`    // pause between trials, the DUT settles (RFC 2544 section 23); "": rig bench ndr's default (2s)
}

// TrialGapValue is trial_gap when set (validated), and whether it is.
func (n CheckNDR) TrialGapValue() (time.Duration, bool) {
	d, err := time.ParseDuration(n.TrialGap)
	return d, n.TrialGap != "" && err == nil
}

// Defaults of the search.
const (
	DefaultNDRResolution = "0.5%"
	DefaultNDRMaxTrials  = 20
	DefaultNDRPDRLossPct = 0.5
	MaxNDRTrials         = 100
)

var resolutionRe = regexp.MustCompile(`^(?i)([0-9]+(\.[0-9]+)?)(%|pps|kpps|mpps)$`)

// ResolutionOrDefault, MaxTrialsOrDefault and PDRLossPctOrDefault are the
// search's settings with their defaults.
func (n CheckNDR) ResolutionOrDefault() string { return orElse(n.Resolution, DefaultNDRResolution) }
func (n CheckNDR) MaxTrialsOrDefault() int {
	if n.MaxTrials == 0 {
		return DefaultNDRMaxTrials
	}
	return n.MaxTrials
}
func (n CheckNDR) PDRLossPctOrDefault() float64 {
	if n.PDRLossPct == nil {
		return DefaultNDRPDRLossPct
	}
	return *n.PDRLossPct
}

// set says whether the ndr section has anything in it.
func (n CheckNDR) set() bool {
	return n.Resolution != "" || n.MaxTrials != 0 || n.PDRLossPct != nil || n.Max != "" || n.LossRetries != 0 || n.TrialGap != ""
}

// search checks search and its ndr section, and what a search does not
// take (a rate: it picks its own; loss and latency thresholds: its NDR
// loses nothing by definition).
func (v *checkValidator) search(s *CheckSpec) {
	switch s.Search {
	case "":
		if s.Rate != "" {
			if s.NDR.set() {
				v.add("ndr", "only a search takes ndr settings, and rate names a fixed load; remove ndr, or remove rate for the zero-loss search")
			}
			return
		}
		// no rate and no search: the default load is the zero-loss search
		if s.Thresholds.MaxLossPct != 0 {
			v.add("thresholds.max_loss_pct", "with no rate the check runs the zero-loss search, whose NDR loses nothing; a loss budget needs a load: name it (rate: 100kpps, or rate: max), or give the search's tolerance as ndr.pdr_loss_pct")
		}
	case SearchNDR:
		if s.Rate != "" {
			v.add("rate", "a search picks its own rates; give its upper bound as ndr.max, or remove rate")
		}
		if s.Thresholds.MaxLossPct != 0 {
			v.add("thresholds.max_loss_pct", "a search's NDR loses nothing by definition; its loss tolerance is ndr.pdr_loss_pct (the PDR)")
		}
	default:
		v.add("search", "want ndr (the RFC 2544 zero-loss search), or no search with a rate for one run per frame size, got %s", shortValue(s.Search))
		return
	}
	n := s.NDR
	if n.Resolution != "" {
		m := resolutionRe.FindStringSubmatch(strings.TrimSpace(n.Resolution))
		if v0, _ := strconv.ParseFloat(firstGroup(m), 64); m == nil || v0 <= 0 || (m[3] == "%" && v0 >= 100) {
			v.add("ndr.resolution", "want a percentage above 0 and below 100 (e.g. 0.5%%) or a frame rate (e.g. 10kpps), got %s", shortValue(n.Resolution))
		}
	}
	if n.MaxTrials != 0 && (n.MaxTrials < 2 || n.MaxTrials > MaxNDRTrials) {
		v.add("ndr.max_trials", "want 2..%d trials per frame size (a trial and its confirmation at least), got %d", MaxNDRTrials, n.MaxTrials)
	}
	if p := n.PDRLossPctOrDefault(); p < 0 || p >= 100 {
		v.add("ndr.pdr_loss_pct", "want 0 (NDR only) up to below 100, got %g", p)
	}
	if n.LossRetries < 0 || n.LossRetries > 5 {
		v.add("ndr.loss_retries", "want 0 (one trial per rate, as RFC 2544) up to 5, got %d", n.LossRetries)
	}
	v.duration("ndr.trial_gap", n.TrialGap, 0, "e.g. 2s, or 0s for none")
	if n.Max != "" {
		m := rateRe.FindStringSubmatch(strings.TrimSpace(n.Max))
		if v0, _ := strconv.ParseFloat(firstGroup(m), 64); m == nil || v0 <= 0 || (m[3] == "%" && v0 > 100) {
			v.add("ndr.max", "want a rate like 1Mpps, 500kpps, 10Gbps or 100%% (of line rate), got %s", shortValue(n.Max))
		}
	}
}

func firstGroup(m []string) string {
	if len(m) < 2 {
		return ""
	}
	return m[1]
}
