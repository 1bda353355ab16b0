package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestDoctorOnFixtures: rig doctor on every fixture host prints findings
// (the cx6dx host's PCIe link trained below max is a warning with a fix),
// exits 0 without an error-level finding, and skips the OvS checks with a
// reason (this machine's OvS is not the fixture's).
func TestDoctorOnFixtures(t *testing.T) {
	for _, hostName := range fixtureHosts {
		code, out, errOut := rig(t, "doctor", "--root", "../../testdata/hosts/"+hostName)
		if code != exitOK || errOut != "" || !strings.Contains(out, "doctor: 0 error(s)") || !strings.Contains(out, "OvS checks were skipped") {
			t.Errorf("%s: code %d stderr %q\n%s", hostName, code, errOut, out)
		}
	}
	_, out, _ := rig(t, "doctor", "--root", "../../testdata/hosts/cx6dx-host")
	if !strings.Contains(out, "WARNING pcie       0000:3b:00.0: ConnectX-6 Dx: x16 at 8.0 GT/s PCIe (max x16 at 16.0 GT/s PCIe") || !strings.Contains(out, "fix: seat the card") {
		t.Errorf("no PCIe finding:\n%s", out)
	}
}

// TestDoctorPlaybookErrorExits1: the ovs-check playbook's PMD CPU given as
// rig's lcore too is an error: exit 1, and the JSON names it.
func TestDoctorPlaybookErrorExits1(t *testing.T) {
	code, out, errOut := rig(t, "doctor", "-p", "ovs-check", "--cores", "1", "-o", "json")
	if code != exitFailure {
		t.Fatalf("code %d stderr %q\n%s", code, errOut, out)
	}
	var rep struct {
		SchemaVersion string
		Errors        int
		Findings      []struct{ Check, Severity, Evidence, Fix string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range rep.Findings {
		found = found || f.Severity == "error" && strings.Contains(f.Evidence, "also in OvS's pmd-cpu-mask (playbook embedded:ovs-check)") && f.Fix != ""
	}
	if rep.SchemaVersion != "rig.doctor/v1" || rep.Errors == 0 || !found {
		t.Fatalf("%s", out)
	}
	if code, _, errOut := rig(t, "doctor", "--cores", "x"); code != exitUsage || !strings.Contains(errOut, "--cores") {
		t.Errorf("bad --cores: code %d %q", code, errOut)
	}
}
