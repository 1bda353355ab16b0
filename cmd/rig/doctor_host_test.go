package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rig/internal/testutil"
	"rig/lab/card"
)

// doctorJSON is rig.doctor/v1 as the tests read it.
type doctorJSON struct {
	SchemaVersion string `json:"schemaVersion"`
	Errors        int    `json:"errors"`
	Warnings      int    `json:"warnings"`
	Findings      []struct {
		Check, Severity, Object, Evidence, Fix string
	} `json:"findings"`
}

// checkDoctorJSON parses a doctor -o json run and checks that it is
// consistent: the schema, counts that match the findings, an exit code
// that matches the errors (1 with one, else 0), evidence on every finding
// and a fix on every error and warning.
func checkDoctorJSON(t *testing.T, where string, code int, out, errOut string) doctorJSON {
	t.Helper()
	var r doctorJSON
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.SchemaVersion != "rig.doctor/v1" || len(r.Findings) == 0 {
		t.Fatalf("%s: doctor -o json: exit %d, %v\n%s%s", where, code, err, out, errOut)
	}
	errs, warns := 0, 0
	for _, f := range r.Findings {
		switch f.Severity {
		case "error":
			errs++
		case "warning":
			warns++
		}
		if f.Evidence == "" || f.Check == "" || (f.Severity == "error" || f.Severity == "warning") && f.Fix == "" {
			t.Errorf("%s: finding without evidence, or an error/warning without a fix: %+v", where, f)
		}
	}
	if want := map[bool]int{true: exitFailure, false: exitOK}[errs > 0]; errs != r.Errors || warns != r.Warnings || code != want {
		t.Errorf("%s: exit %d, errors %d, warnings %d; the findings hold %d error(s), %d warning(s)\n%s", where, code, r.Errors, r.Warnings, errs, warns, out)
	}
	return r
}

// checkDoctorText checks the text form: every ERROR and WARNING line is
// followed by its fix, and the summary counts the lines.
func checkDoctorText(t *testing.T, where string, code int, out string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	errs, warns, n := 0, 0, 0
	for i, l := range lines[:len(lines)-1] {
		if strings.HasPrefix(l, " ") {
			continue
		}
		n++
		sev := strings.Fields(l)[0]
		errs += map[bool]int{true: 1}[sev == "ERROR"]
		warns += map[bool]int{true: 1}[sev == "WARNING"]
		if (sev == "ERROR" || sev == "WARNING") && !strings.HasPrefix(lines[i+1], "        fix: ") {
			t.Errorf("%s: %q has no fix line after it:\n%s", where, l, out)
		}
	}
	want := fmt.Sprintf("doctor: %d error(s), %d warning(s), %d finding(s)", errs, warns, n)
	if lines[len(lines)-1] != want || code != map[bool]int{true: exitFailure, false: exitOK}[errs > 0] {
		t.Errorf("%s: exit %d, last line %q, want %q:\n%s", where, code, lines[len(lines)-1], want, out)
	}
}

func findingOf(r doctorJSON, check, object string) (sev, evidence, fix string, ok bool) {
	for _, f := range r.Findings {
		if f.Check == check && f.Object == object {
			return f.Severity, f.Evidence, f.Fix, true
		}
	}
	return "", "", "", false
}

// TestDoctorOnThisHost: rig doctor on the machine the tests run on (real
// root; OvS read if one answers, skipped with a reason otherwise) prints
// findings with evidence, a fix on each error and warning, counts and an
// exit code that agree, in text and JSON; the checks that need no NIC or
// OvS (NUMA, IOMMU, governor, THP, irqbalance) always report, and --cores
// 0 gets an isolation finding for that CPU.
func TestDoctorOnThisHost(t *testing.T) {
	code, out, errOut := rig(t, "-o", "json", "doctor", "--cores", "0")
	r := checkDoctorJSON(t, "this host", code, out, errOut)
	seen := map[string]bool{}
	for _, f := range r.Findings {
		seen[f.Check] = true
	}
	for _, c := range []string{"numa", "iommu", "governor", "thp", "irqbalance"} {
		if !seen[c] {
			t.Errorf("no %s finding on this host:\n%s", c, out)
		}
	}
	if _, _, _, ok := findingOf(r, "cpus", "rig lcores 0"); !ok {
		t.Errorf("no isolation finding for --cores 0:\n%s", out)
	}
	code, out, _ = rig(t, "doctor", "--cores", "0")
	checkDoctorText(t, "this host", code, out)
	t.Logf("rig doctor --cores 0 on this host (exit %d):\n%s", code, out)
}

// labSysfs reads one sysfs attribute inside the lab.
func labSysfs(t *testing.T, bin, name, p string) string {
	t.Helper()
	return strings.TrimSpace(labExec(t, bin, name, "cat", p))
}

// TestPrivilegedLabDoctor: rig doctor inside a lab of each kind prints
// findings with fixes, counts and exit code agreeing (text and JSON),
// reads the lab's own OvS (no "OvS skipped" finding), and reports the
// card as the lab's sysfs view shows it: a PCIe finding per physical
// function with the link the lab's sysfs gives (ok when it runs at its
// maximum, a warning with a fix when it trained below, as cx6dx-host's
// Gen3 link in a Gen4 slot), and the NUMA finding from the node count
// (with two or more nodes, a function with numa_node -1 is named).
func TestPrivilegedLabDoctor(t *testing.T) {
	testutil.RequirePrivileged(t)
	bin := buildRigNoCgo(t)
	nodes, _ := filepath.Glob("/sys/devices/system/node/node[0-9]*")
	for _, c := range card.Kinds() {
		name := fmt.Sprintf("dr-%s-%d", strings.SplitN(c.Kind, "-", 2)[0], os.Getpid()%10000)
		labUp(t, bin, c.Kind, name)
		code, out, errOut := runBin(t, bin, "lab", "exec", name, "--", bin, "-o", "json", "doctor")
		r := checkDoctorJSON(t, c.Kind, code, out, errOut)
		if _, ev, _, ok := findingOf(r, "ovs", "OvS"); ok {
			t.Errorf("%s: the lab's OvS was not read: %s", c.Kind, ev)
		}
		pcie := 0
		for _, fn := range c.Fns {
			dev := "/sys/bus/pci/devices/" + fn.BDF + "/"
			cur, max := labSysfs(t, bin, name, dev+"current_link_speed"), labSysfs(t, bin, name, dev+"max_link_speed")
			if max == "Unknown" { // a VF: no link of its own
				continue
			}
			pcie++
			curW, maxW := labSysfs(t, bin, name, dev+"current_link_width"), labSysfs(t, bin, name, dev+"max_link_width")
			sev, ev, fix, ok := findingOf(r, "pcie", fn.BDF)
			want := fmt.Sprintf("x%s at %s (max x%s at %s", curW, cur, maxW, max)
			switch {
			case !ok || !strings.Contains(ev, want):
				t.Errorf("%s: pcie finding for %s: %q, want the lab's link %q", c.Kind, fn.BDF, ev, want)
			case cur == max && curW == maxW && sev != "ok":
				t.Errorf("%s: %s runs at its maximum, finding is %s: %s", c.Kind, fn.BDF, sev, ev)
			case (cur != max || curW != maxW) && (sev != "warning" || !strings.Contains(fix, "seat the card")):
				t.Errorf("%s: %s trained below max, finding is %s (fix %q): %s", c.Kind, fn.BDF, sev, fix, ev)
			}
			if numa := labSysfs(t, bin, name, dev+"numa_node"); len(nodes) >= 2 && numa == "-1" {
				if _, ev, _, ok := findingOf(r, "numa", fn.BDF); !ok || !strings.Contains(ev, "numa_node -1") {
					t.Errorf("%s: %d NUMA nodes, %s has numa_node -1: finding %q", c.Kind, len(nodes), fn.BDF, ev)
				}
			}
		}
		if pcie == 0 {
			t.Errorf("%s: no physical function with a PCIe link in the card", c.Kind)
		}
		if _, ev, _, ok := findingOf(r, "numa", "NUMA"); len(nodes) < 2 && (!ok || !strings.Contains(ev, fmt.Sprintf("%d NUMA node(s)", len(nodes)))) {
			t.Errorf("%s: %d NUMA node(s) here, numa finding %q", c.Kind, len(nodes), ev)
		}
		code, out, _ = runBin(t, bin, "lab", "exec", name, "--", bin, "doctor")
		checkDoctorText(t, c.Kind, code, out)
		t.Logf("rig doctor in a %s lab (exit %d):\n%s", c.Kind, code, out)
		if code, out, errOut := runBin(t, bin, "lab", "down", name); code != 0 {
			t.Fatalf("lab down %s: exit %d\n%s%s", name, code, out, errOut)
		}
	}
}
