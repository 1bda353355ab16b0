package main

import (
	"encoding/json"
	"strings"
	"testing"

	"rig/bench/search"
)

// check: {search: ndr} through a private OvS: the search runs through the
// check's temporary vhost-user ports (added once, removed after), reports
// NDR and PDR per size, and its threshold judges the NDR (the exit code
// says the verdict). Not asserted: an NDR above 0. On this VM every trial
// through OvS's vhost-user ports lost 0.1-0.24 % of its frames (about
// 1-2 ms of its traffic, at any rate), so no rate passed with no loss,
// while the PDR (0.5 %) was the generator's maximum.
func TestPrivilegedCheckSearchNDR(t *testing.T) {
	pb := strings.Replace(checkPlaybook, "check:\n  duration: %s\n  warmup: %s\n  rate: max\n  thresholds: {min_mpps: 0.05, max_loss_pct: %s}\n",
		"check:\n  search: ndr\n  duration: 1s\n  warmup: 0s\n  ndr: {resolution: 50%, max_trials: 8, trial_gap: 500ms}\n  thresholds: {min_mpps: 0.01}\n", 1)
	if !strings.Contains(pb, "search: ndr") {
		t.Fatal("the playbook template changed: this test's check section was not put in")
	}
	l := newCheckLab(t, pb)
	if code, out, errOut := l.rig("up", "--only", "ovs", "-p", l.pb, "--rundir", l.rundir, "--lock-file", l.rundir+"/lock"); code != 0 {
		t.Fatalf("up: %d\n%s%s", code, out, errOut)
	}
	code, m, errOut := l.checkJSON()
	raw, _ := json.Marshal(m["search"])
	var rep search.NDRReport
	if err := json.Unmarshal(raw, &rep); err != nil || rep.SchemaVersion != search.NDRSchemaVersion || len(rep.Sizes) != 1 {
		t.Fatalf("check: exit %d, search %s, %v\n%s", code, raw, err, errOut)
	}
	s := rep.Sizes[0]
	t.Logf("through OvS: generator max %.3f Mpps, NDR %+v, PDR %+v, %d trials, notes %q", s.SearchMaxMpps, s.NDR, s.PDR, len(s.Trials), s.Notes)
	if (code == exitOK) != (m["pass"] == true) || (code != exitOK && code != exitBelowThreshold) || s.Probe == nil || s.PDR == nil ||
		s.PDR.Mpps <= 0 || s.PDR.Mpps < s.NDR.Mpps || len(s.Trials) < 2 || len(s.Trials) > 8 || s.Error != "" || len(s.Invalid) > 0 {
		t.Fatalf("check: exit %d, pass %v, size %+v\n%s", code, m["pass"], s, errOut)
	}
	for _, tr := range s.Trials {
		if tr.Sent == 0 {
			t.Errorf("trial %d sent nothing", tr.N)
		}
	}
	if th, _ := m["searchThresholds"].([]any); len(th) != 1 {
		t.Errorf("search thresholds %v", m["searchThresholds"])
	}
	if ports := l.vsctl("list-ports", "br-t"); strings.Contains(ports, "rig-chk-") {
		t.Errorf("ports left: %q", ports)
	}
}
