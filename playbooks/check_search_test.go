package playbooks

import (
	"strings"
	"testing"
	"time"
)

func TestParseCheckSearchNDR(t *testing.T) {
	pb, err := Parse("c.yaml", []byte(checkOVS+"check:\n  search: ndr\n  duration: 2s\n  frame_sizes: [64, 1518]\n  thresholds: {min_mpps: 0.1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	n := pb.Check.NDR
	if pb.Check.Search != SearchNDR || n.ResolutionOrDefault() != "0.5%" || n.MaxTrialsOrDefault() != 20 || n.PDRLossPctOrDefault() != 0.5 || n.Max != "" {
		t.Fatalf("defaults: %+v", pb.Check)
	}
	if _, set := n.TrialGapValue(); set {
		t.Fatalf("trial_gap unset: %+v", n)
	}
	pb, err = Parse("c.yaml", []byte(checkOVS+"check:\n  search: ndr\n  ndr: {resolution: 10kpps, max_trials: 12, pdr_loss_pct: 0, max: 2Mpps, trial_gap: 500ms}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if n := pb.Check.NDR; n.ResolutionOrDefault() != "10kpps" || n.MaxTrialsOrDefault() != 12 || n.PDRLossPctOrDefault() != 0 || n.Max != "2Mpps" {
		t.Fatalf("ndr: %+v", n)
	}
	if gap, set := pb.Check.NDR.TrialGapValue(); !set || gap != 500*time.Millisecond {
		t.Fatalf("trial_gap: %v %v", gap, set)
	}
}

// Every search field's error, with file:line and field path.
func TestParseCheckSearchErrors(t *testing.T) {
	for _, c := range []struct{ name, doc, want string }{
		{"search", "check:\n  search: pdr\n", `c.yaml:10: check.search: want ndr (the RFC 2544 zero-loss search)`},
		{"ndr with a rate", "check:\n  rate: 1Mpps\n  ndr: {max_trials: 5}\n", "c.yaml:11: check.ndr: only a search takes ndr settings"},
		{"loss budget with the default search", "check:\n  thresholds: {max_loss_pct: 1}\n", "check.thresholds.max_loss_pct: with no rate the check runs the zero-loss search"},
		{"latency load", "check:\n  latency_load: 100%\n", "check.latency_load: want a share of the path's capacity above 0% and below 100%"},
		{"lab", "check:\n  lab: {rate: fast}\n", "check.lab.rate: want \"\" (the zero-loss search)"},
		{"lab thresholds", "check:\n  lab: {thresholds: {min_mpps: -1}}\n", "check.lab.thresholds.min_mpps: want 0"},
		{"rate", "check:\n  search: ndr\n  rate: 1Mpps\n", "c.yaml:11: check.rate: a search picks its own rates; give its upper bound as ndr.max"},
		{"loss threshold", "check:\n  search: ndr\n  thresholds: {max_loss_pct: 1}\n", "check.thresholds.max_loss_pct: a search's NDR loses nothing by definition"},
		{"resolution", "check:\n  search: ndr\n  ndr: {resolution: fine}\n", "check.ndr.resolution: want a percentage above 0 and below 100"},
		{"resolution 100%", "check:\n  search: ndr\n  ndr: {resolution: 100%}\n", "check.ndr.resolution: want a percentage"},
		{"resolution bps", "check:\n  search: ndr\n  ndr: {resolution: 1Gbps}\n", "check.ndr.resolution: want a percentage"},
		{"max trials", "check:\n  search: ndr\n  ndr: {max_trials: 1}\n", "check.ndr.max_trials: want 2..100 trials"},
		{"pdr", "check:\n  search: ndr\n  ndr: {pdr_loss_pct: 100}\n", "check.ndr.pdr_loss_pct: want 0 (NDR only) up to below 100, got 100"},
		{"max", "check:\n  search: ndr\n  ndr: {max: fast}\n", "check.ndr.max: want a rate like 1Mpps"},
		{"max pct", "check:\n  search: ndr\n  ndr: {max: 120%}\n", "check.ndr.max: want a rate like 1Mpps"},
		{"unknown", "check:\n  search: ndr\n  ndr: {tolerance: 1}\n", "check.ndr.tolerance: unknown field"},
		{"loss retries", "check:\n  search: ndr\n  ndr: {loss_retries: 9}\n", "check.ndr.loss_retries: want 0 (one trial per rate, as RFC 2544) up to 5, got 9"},
		{"trial gap", "check:\n  search: ndr\n  ndr: {trial_gap: 2}\n", "c.yaml:11: check.ndr.trial_gap: want a duration (e.g. 2s, or 0s for none), got \"2\""},
		{"trial gap too long", "check:\n  search: ndr\n  ndr: {trial_gap: 2h}\n", "check.ndr.trial_gap: want at most"},
	} {
		_, err := Parse("c.yaml", []byte(checkOVS+c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\nwant substring %q", c.name, err, c.want)
		}
	}
}
