package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"rig/internal/testutil/fleettest"
)

// The fleet test's reading of what site.yml left: ansible-playbook's
// recap, the fleet report (fleet-report.json and fleet-report.md) and the
// hosts' metrics files.

// recapRe is one host's line of ansible-playbook's PLAY RECAP.
var recapRe = regexp.MustCompile(`(?m)^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)`)

// recap maps each host to its changed and failed counts.
func recap(out string) map[string][2]int {
	m := map[string][2]int{}
	for _, g := range recapRe.FindAllStringSubmatch(out, -1) {
		c, _ := strconv.Atoi(g[3])
		f, _ := strconv.Atoi(g[5])
		m[g[1]] = [2]int{c, f}
	}
	return m
}

// fleetEntry and fleetReport: the fleet report as the tests read it.
type (
	fleetEntry  = fleettest.Entry
	fleetReport = fleettest.Report
)

// readFleetReport reads dir's fleet report (fleettest.Read).
func readFleetReport(t *testing.T, dir string) (*fleetReport, map[string]fleetEntry, string) {
	t.Helper()
	return fleettest.Read(t, dir)
}

// checkFirstRun: the fleet report of the first run says exactly what
// happened to each DPU.
func checkFirstRun(t *testing.T, rep *fleetReport, by map[string]fleetEntry, md, out string) {
	t.Helper()
	passed := func(e fleetEntry) bool {
		return e.CheckPass != nil && *e.CheckPass && len(e.CheckMpps) == 1 && e.CheckMpps[0] > 0
	}
	a, b, c := by["dpu-a"], by["dpu-b"], by["dpu-c"]
	if a.Status != "ready" || a.PowerCycled || !passed(a) || a.Mode != "dpu" || a.Card != "BlueField-2 0000:03:00" || !containsAll(a.StepsChanged, "hugepages", "ovs") || contains(a.StepsChanged, "mode") {
		t.Errorf("dpu-a: %+v, want ready without a power cycle, hugepages and ovs changed (not mode), check passed, DPU mode, BlueField-2 0000:03:00", a)
	}
	if b.Status != "ready" || !b.PowerCycled || !passed(b) || b.Mode != "dpu" || !containsAll(b.StepsChanged, "mode", "hugepages", "ovs") {
		t.Errorf("dpu-b: %+v, want ready after a power cycle, mode, hugepages and ovs changed, check passed, DPU mode", b)
	}
	if c.Status != "check-failed" || c.CheckPass == nil || *c.CheckPass || len(c.CheckMpps) != 1 || c.CheckMpps[0] <= 0 ||
		!strings.Contains(c.Error, "check below threshold: min_mpps 1000: measured") || !containsAll(c.StepsChanged, "hugepages", "ovs") {
		t.Errorf("dpu-c: %+v, want check-failed naming min_mpps 1000 with the measured Mpps, after hugepages and ovs changed", c)
	}
	if rep.Summary.Hosts != 3 || rep.Summary.Ready != 2 || rep.Summary.ByStatus["check-failed"] != 1 {
		t.Errorf("summary %+v", rep.Summary)
	}
	rc := recap(out)
	if rc["dpu-a"][1] != 0 || rc["dpu-b"][1] != 0 || rc["dpu-c"][1] != 1 {
		t.Errorf("recap %v: want dpu-c alone failed", rc)
	}
	checkReportMarkdown(t, rep, md, "2 ready, 1 check-failed")
	if t.Failed() {
		t.Logf("ansible-playbook output (first run):\n%s", out)
	}
}

// checkMetrics: the role's rig check wrote the DPU's metrics file.
func checkMetrics(t *testing.T, h *fleetHost, pass bool) {
	t.Helper()
	g := promGauges(t, filepath.Join(h.dir, "metrics", "rig.prom"))
	series := "bridge=ovs_dpdk_br0,egress_port=pf0hpf,frame_size=64,ingress_port=p0,topology=through-ports"
	want := 0.0
	if pass {
		want = 1
	}
	if g["rig_check_pass"][series] != want || g["rig_check_valid"][series] != 1 || g["rig_check_mpps"][series] <= 0 {
		t.Errorf("%s: metrics %v, want series %s with pass %v, valid 1, mpps > 0", h.name, g, series, want)
	}
}

func containsAll(list []string, want ...string) bool {
	for _, w := range want {
		if !contains(list, w) {
			return false
		}
	}
	return true
}

// checkSecondRun: the second run changed nothing and power-cycled nothing
// on any DPU; dpu-a and dpu-b are still ready, dpu-c still fails its check.
func checkSecondRun(t *testing.T, code int, rep *fleetReport, by map[string]fleetEntry, md, out string) {
	t.Helper()
	rc := recap(out)
	for _, h := range []string{"dpu-a", "dpu-b", "dpu-c"} {
		wantFailed := 0
		if h == "dpu-c" {
			wantFailed = 1
		}
		if r, ok := rc[h]; !ok || r != [2]int{0, wantFailed} {
			t.Errorf("second run: %s changed=%d failed=%d (in the recap: %v), want changed=0 failed=%d", h, r[0], r[1], ok, wantFailed)
		}
		if e := by[h]; len(e.StepsChanged) != 0 || e.PowerCycled {
			t.Errorf("second run: %s in the report: %+v, want no step changed, no power cycle", h, e)
		}
	}
	if by["dpu-a"].Status != "ready" || by["dpu-b"].Status != "ready" || by["dpu-c"].Status != "check-failed" || code != 2 {
		t.Errorf("second run: exit %d (want 2), statuses %s %s %s (want ready ready check-failed)", code, by["dpu-a"].Status, by["dpu-b"].Status, by["dpu-c"].Status)
	}
	checkReportMarkdown(t, rep, md, "2 ready, 1 check-failed")
	if t.Failed() {
		t.Logf("ansible-playbook output (second run):\n%s", out)
	}
}

// mdRow is a host's row of fleet-report.md's table.
type mdRow struct{ card, mode, steps, mpps, check, status string }

// mdTable reads the table's rows by host, and the hosts of "## Not ready".
func mdTable(md string) (map[string]mdRow, []string) {
	rows := map[string]mdRow{}
	var notReady []string
	notReadyRe := regexp.MustCompile(`^- \*\*(\S+)\*\* \(`)
	for _, line := range strings.Split(md, "\n") {
		if g := notReadyRe.FindStringSubmatch(line); g != nil {
			notReady = append(notReady, g[1])
		}
		c := strings.Split(strings.Trim(line, "|"), "|")
		if !strings.HasPrefix(line, "| ") || len(c) != 7 {
			continue
		}
		for i := range c {
			c[i] = strings.TrimSpace(c[i])
		}
		if c[0] != "host" {
			rows[c[0]] = mdRow{c[1], c[2], c[3], c[4], c[5], c[6]}
		}
	}
	return rows, notReady
}

// checkReportMarkdown: fleet-report.md says what fleet-report.json says,
// host by host (card, mode, steps changed, check Mpps, pass/fail, status),
// its summary line counts them, and "Not ready" lists the others.
func checkReportMarkdown(t *testing.T, rep *fleetReport, md, summary string) {
	t.Helper()
	rows, notReady := mdTable(md)
	var wantNotReady []string
	for _, e := range rep.Hosts {
		want := mdRow{card: e.Card, mode: e.Mode, steps: strconv.Itoa(len(e.StepsChanged)), mpps: "-", check: "-", status: e.Status}
		if len(e.StepsChanged) > 0 {
			want.steps += " (" + strings.Join(e.StepsChanged, ", ") + ")"
		}
		var mpps []string
		for _, m := range e.CheckMpps {
			mpps = append(mpps, fmt.Sprintf("%.3f (64 B)", m))
		}
		if len(mpps) > 0 {
			want.mpps = strings.Join(mpps, ", ")
		}
		if e.CheckPass != nil {
			want.check = map[bool]string{true: "pass", false: "FAIL"}[*e.CheckPass]
		}
		if e.PowerCycled {
			want.status += " (power-cycled)"
		}
		if rows[e.Host] != want {
			t.Errorf("fleet-report.md, %s: %+v, want %+v (fleet-report.json's)", e.Host, rows[e.Host], want)
		}
		if e.Status != "ready" {
			wantNotReady = append(wantNotReady, e.Host)
		}
	}
	if len(rows) != len(rep.Hosts) || fmt.Sprint(notReady) != fmt.Sprint(wantNotReady) {
		t.Errorf("fleet-report.md: %d rows for %d hosts; not ready: %v, want %v", len(rows), len(rep.Hosts), notReady, wantNotReady)
	}
	if want := fmt.Sprintf("%d host(s), %s\n", len(rep.Hosts), summary); !strings.Contains(md, want) {
		t.Errorf("fleet-report.md has no summary %q", want)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
