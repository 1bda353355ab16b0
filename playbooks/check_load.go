package playbooks

import (
	"fmt"
	"strconv"
	"strings"
)

// The check judges at a stated load (RFC 2544): what it offers decides
// what its figures mean. A receive rate taken at overload is not
// throughput and its latency is queueing, so the load is always one of:
//
//   - ndr: the zero-loss search (search: ndr); the default when the
//     playbook names no rate. min_mpps and min_linerate_pct judge the NDR;
//     latency (max_p99_us) is measured after it, at latency_load of the
//     NDR.
//   - rate: a fixed rate (rate: 100kpps | 10Gbps | 50%) with a loss budget
//     (thresholds.max_loss_pct, default DefaultLossBudgetPct); latency is
//     judged on that run only when the path carried it within the budget.
//   - max: as fast as possible (rate: max) with the same loss budget: a
//     run that loses more reports the path as overloaded at the capacity
//     it measured and fails the budget; its latency is queueing, never
//     judged (max_p99_us is measured in one more run at latency_load of
//     that capacity).
const (
	LoadNDR  = "ndr"
	LoadRate = "rate"
	LoadMax  = "max"
	// RateMax is `rate: max`: as fast as possible, judged by the loss budget.
	RateMax = "max"
	// DefaultLossBudgetPct is the loss a fixed-rate or as-fast-as-possible
	// check may lose when thresholds.max_loss_pct is not set.
	DefaultLossBudgetPct = 0.1
	// DefaultLatencyLoad is where latency is measured: this share of the
	// path's capacity (the NDR, or what rate: max received), as rig bench
	// --latency-load does.
	DefaultLatencyLoad = "50%"
)

// LoadKind is the check's load: ndr (search: ndr, or no rate named),
// rate or max.
func (s *CheckSpec) LoadKind() string {
	switch {
	case s.Search == SearchNDR:
		return LoadNDR
	case strings.EqualFold(strings.TrimSpace(s.Rate), RateMax):
		return LoadMax
	case s.Rate != "":
		return LoadRate
	}
	return LoadNDR
}

// LoadNamed says whether the playbook names its load (a search or a
// rate); false: the default, the zero-loss search.
func (s *CheckSpec) LoadNamed() bool { return s.Search != "" || s.Rate != "" }

// IsSearch says whether the check runs the zero-loss search (named or by
// default).
func (s *CheckSpec) IsSearch() bool { return s.LoadKind() == LoadNDR }

// DataplaneRate is the rate handed to the dataplane for a run: "" (as
// fast as possible) for rate: max.
func (s *CheckSpec) DataplaneRate() string {
	if s.LoadKind() == LoadMax {
		return ""
	}
	return s.Rate
}

// LossBudgetPct is the loss the load may have: max_loss_pct, else
// DefaultLossBudgetPct (rate, max); the search's NDR loses nothing.
func (s *CheckSpec) LossBudgetPct() float64 {
	if s.LoadKind() == LoadNDR {
		return 0
	}
	if s.Thresholds.MaxLossPct > 0 {
		return s.Thresholds.MaxLossPct
	}
	return DefaultLossBudgetPct
}

// LatencyLoadOrDefault is latency_load (default 50%).
func (s *CheckSpec) LatencyLoadOrDefault() string { return orElse(s.LatencyLoad, DefaultLatencyLoad) }

// LatencyLoadFraction is latency_load as a fraction (0.5 for 50%; the
// default when unset or invalid: validated).
func (s *CheckSpec) LatencyLoadFraction() float64 {
	if f, ok := loadFraction(s.LatencyLoadOrDefault()); ok {
		return f
	}
	f, _ := loadFraction(DefaultLatencyLoad)
	return f
}

func loadFraction(v string) (float64, bool) {
	v = strings.TrimSpace(v)
	if !strings.HasSuffix(v, "%") {
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
	if err != nil || !(f > 0) || f >= 100 {
		return 0, false
	}
	return f / 100, true
}

// CheckLab is what the check does instead inside a virtual lab (`rig lab
// up`), where af_packet on veths stands in for the card's ports and the
// path is bound by the kernel, not the card: lab figures. A field left
// out keeps the check's own.
type CheckLab struct {
	Rate       string           `yaml:"rate"`
	Search     string           `yaml:"search"`
	Duration   string           `yaml:"duration"`
	Warmup     string           `yaml:"warmup"`
	Thresholds *CheckThresholds `yaml:"thresholds"`
	NDR        *CheckNDR        `yaml:"ndr"`
}

// InLab is the check as it runs inside a virtual lab: s with check.lab's
// fields in place of its own (s itself when there is no lab section). A
// lab that names a rate drops the card's search, and one that names a
// search drops the card's rate.
func (s *CheckSpec) InLab() *CheckSpec {
	if s.Lab == nil {
		return s
	}
	c := *s
	l := s.Lab
	c.Lab = nil
	if l.Rate != "" {
		c.Rate, c.Search, c.NDR = l.Rate, "", CheckNDR{}
	}
	if l.Search != "" {
		c.Search, c.Rate = l.Search, ""
	}
	c.Duration = orElse(l.Duration, c.Duration)
	c.Warmup = orElse(l.Warmup, c.Warmup)
	if l.Thresholds != nil {
		c.Thresholds = *l.Thresholds
	}
	if l.NDR != nil {
		c.NDR = *l.NDR
	}
	return &c
}

// load checks latency_load, and the lab section as the check it makes.
func (v *checkValidator) load(s *CheckSpec, o *OVSSpec) {
	if s.LatencyLoad != "" {
		if _, ok := loadFraction(s.LatencyLoad); !ok {
			v.add("latency_load", "want a share of the path's capacity above 0%% and below 100%% (e.g. 50%%), got %s", shortValue(s.LatencyLoad))
		}
	}
	if s.Lab == nil {
		return
	}
	own := map[string]bool{}
	for _, e := range v.errs {
		own[e.Field] = true
	}
	// the lab's check, validated as a check: its errors that the card's
	// check does not have are the lab section's
	lab := s.InLab()
	for _, e := range lab.ValidateWith(o) {
		if !own[e.Field] {
			v.errs = append(v.errs, FieldError{"lab." + e.Field, e.Msg})
		}
	}
}

// describeLoad says the load in words, for the plan and the report.
func (s *CheckSpec) DescribeLoad() string {
	switch s.LoadKind() {
	case LoadMax:
		return fmt.Sprintf("as fast as possible (rate: max), loss budget %g%%: more loss is an overload and fails", s.LossBudgetPct())
	case LoadRate:
		return fmt.Sprintf("fixed rate %s, loss budget %g%%", s.Rate, s.LossBudgetPct())
	}
	d := "the zero-loss rate (RFC 2544 NDR search"
	if p := s.NDR.PDRLossPctOrDefault(); p > 0 {
		d += fmt.Sprintf(", and PDR within %g%% loss", p)
	}
	d += fmt.Sprintf(", at most %d trials of %v)", s.NDR.MaxTrialsOrDefault(), s.DurationOrDefault())
	if !s.LoadNamed() {
		d += ", the default: the playbook names no rate"
	}
	return d
}
