package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"rig/provision"
	"rig/provision/check"
)

// rigModule is the rig.smartnic collection's module, run standalone as
// Ansible runs it on a host (python3 MODULE ARGS.json).
const rigModule = "../../ansible/collections/ansible_collections/rig/smartnic/plugins/modules/rig.py"

// needAnsiblePython skips when the host's python3 has no ansible-core.
func needAnsiblePython(t *testing.T) string {
	t.Helper()
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import ansible.module_utils.basic").Run(); err != nil {
		t.Skipf("the rig module's tests need ansible-core for %s (make test installs Debian's ansible-core: make deps-fleet): %v", py, err)
	}
	return py
}

// moduleRun is one run of the module against a fake rig that prints doc
// and exits with code.
type moduleRun struct {
	args  map[string]any
	check bool // Ansible's check mode
	doc   any  // what the fake rig prints on stdout (nil: nothing)
	code  int
	err   string // what it prints on stderr
}

// runModule runs the module and returns its JSON result and the argv the
// fake rig got.
func runModule(t *testing.T, py string, r moduleRun) (map[string]any, []string) {
	t.Helper()
	dir := t.TempDir()
	out := filepath.Join(dir, "stdout")
	var b []byte
	if r.doc != nil {
		var err error
		if b, err = json.Marshal(r.doc); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(dir, "rig")
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + filepath.Join(dir, "argv") + "\ncat " + out + "\nprintf '%s' '" + r.err + "' >&2\nexit " + itoa(r.code) + "\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"rig_path": fake, "_ansible_check_mode": r.check}
	for k, v := range r.args {
		args[k] = v
	}
	af := filepath.Join(dir, "args.json")
	ab, _ := json.Marshal(map[string]any{"ANSIBLE_MODULE_ARGS": args})
	if err := os.WriteFile(af, ab, 0o644); err != nil {
		t.Fatal(err)
	}
	res, _ := exec.Command(py, rigModule, af).Output() // a failed module exits 1
	var m map[string]any
	if err := json.Unmarshal(res, &m); err != nil {
		t.Fatalf("module output: %v\n%s", err, res)
	}
	argv, _ := os.ReadFile(filepath.Join(dir, "argv"))
	return m, strings.Split(strings.TrimSuffix(string(argv), "\n"), "\n")
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// upReport is a rig.report/v1 as rig up prints it.
func upReport(steps ...provision.StepResult) *provision.Report {
	return &provision.Report{SchemaVersion: provision.ReportSchemaVersion, Mode: provision.RunApply, Playbook: "embedded:bf2-dpu", Steps: steps}
}

var someChange = []provision.Change{{Object: "hugepages 2048kB", Action: "mount /dev/hugepages"}}

// belowCheck is a check that measured 0.45 Mpps against min_mpps 1000.
func belowCheck() *check.CheckResult {
	return &check.CheckResult{SchemaVersion: check.CheckSchemaVersion, Topology: "through-ports", Bridge: "ovs_dpdk_br0", Ingress: "p0", Egress: "pf0hpf",
		Runs: []check.CheckRun{{FrameSize: 64, RxMpps: 0.45, RxGbps: 0.3024, LossPct: 31.2,
			Thresholds: []check.ThresholdVerdict{{Name: "min_mpps", Limit: 1000, Measured: 0.45}}}}}
}

// TestAnsibleRigModuleMapsReports: the module maps rig's exit codes and
// JSON reports (made from rig's own types) to Ansible's result, and runs
// rig with exactly the arguments asked, no shell in between.
func TestAnsibleRigModuleMapsReports(t *testing.T) {
	py := needAnsiblePython(t)
	pb := map[string]any{"playbook": "bf2-dpu"}
	t.Run("up changed", func(t *testing.T) {
		m, argv := runModule(t, py, moduleRun{args: map[string]any{"playbook": "bf2-dpu", "skip": []string{"check"}, "lock_timeout": "90s"}, doc: upReport(
			provision.StepResult{Name: "mode", Status: provision.StatusOK},
			provision.StepResult{Name: "hugepages", Status: provision.StatusChanged, Changes: someChange},
			provision.StepResult{Name: "check", Status: provision.StatusNotRun})})
		if m["failed"] != false || m["changed"] != true || !reflect.DeepEqual(m["changed_steps"], []any{"hugepages"}) || m["power_cycle_required"] != false {
			t.Errorf("result %v", m)
		}
		if want := []string{"-o", "json", "up", "-p", "bf2-dpu", "--skip", "check", "--lock-timeout", "90s"}; !reflect.DeepEqual(argv, want) {
			t.Errorf("argv %q, want %q", argv, want)
		}
		if rep, _ := m["report"].(map[string]any); rep["schemaVersion"] != provision.ReportSchemaVersion {
			t.Errorf("report not returned: %v", m["report"])
		}
	})
	t.Run("up unchanged", func(t *testing.T) {
		m, _ := runModule(t, py, moduleRun{args: pb, doc: upReport(provision.StepResult{Name: "hugepages", Status: provision.StatusOK})})
		if m["failed"] != false || m["changed"] != false {
			t.Errorf("result %v", m)
		}
	})
	t.Run("exit 3 power cycle", func(t *testing.T) {
		m, _ := runModule(t, py, moduleRun{args: pb, code: exitPowerCycle, doc: upReport(
			provision.StepResult{Name: "mode", Status: provision.StatusPendingReboot, Changes: someChange, Pending: "power cycle: INTERNAL_CPU_MODEL set for the next boot"},
			provision.StepResult{Name: "check", Status: provision.StatusNotRun})})
		facts, _ := m["ansible_facts"].(map[string]any)
		if m["failed"] != false || m["power_cycle_required"] != true || facts["rig_power_cycle_required"] != true || m["changed"] != true ||
			!strings.Contains(m["msg"].(string), "power cycle required: mode (power cycle: INTERNAL_CPU_MODEL") || m["rc"] != 3.0 {
			t.Errorf("result %v", m)
		}
	})
	t.Run("exit 1 step failed", func(t *testing.T) {
		m, _ := runModule(t, py, moduleRun{args: pb, code: exitFailure, doc: upReport(
			provision.StepResult{Name: "rdma", Status: provision.StatusFailed, Phase: provision.PhaseCheck, Error: `rdma: mlx5_0/1 (p0): phys_state "2: Polling"`, Cause: "no link", Fix: "check the cable"},
			provision.StepResult{Name: "ovs", Status: provision.StatusNotRun})})
		if m["failed"] != true || m["cause"] != "no link" || m["fix"] != "check the cable" ||
			m["msg"] != `rig up -p bf2-dpu: step rdma failed (check): rdma: mlx5_0/1 (p0): phys_state "2: Polling"; fix: check the cable` {
			t.Errorf("result %v", m)
		}
	})
	t.Run("exit 4 check below threshold", func(t *testing.T) {
		doc := checkReport{SchemaVersion: check.CheckSchemaVersion, CheckResult: belowCheck(), Error: "check: below threshold: min_mpps (64 B) 1000: measured 0.45"}
		m, argv := runModule(t, py, moduleRun{args: map[string]any{"command": "check", "playbook": "bf2-dpu", "metrics_file": "/var/lib/node_exporter/rig.prom"}, code: exitBelowThreshold, doc: doc})
		chk, _ := m["check"].(map[string]any)
		runs, _ := chk["runs"].([]any)
		if m["failed"] != true || len(runs) != 1 || runs[0].(map[string]any)["mpps"] != 0.45 || chk["pass"] != false ||
			!strings.Contains(m["msg"].(string), "check below threshold: min_mpps 1000: measured 0.45 (64 B) (64 B: 0.450 Mpps, 0.302 Gbps, loss 31.2000%)") {
			t.Errorf("result %v", m)
		}
		if want := []string{"-o", "json", "check", "-p", "bf2-dpu", "--metrics-file", "/var/lib/node_exporter/rig.prom"}; !reflect.DeepEqual(argv, want) {
			t.Errorf("argv %q, want %q", argv, want)
		}
	})
	t.Run("exit 5 invalid", func(t *testing.T) {
		res := belowCheck()
		res.Runs[0].Invalid = "received more than sent"
		st := provision.StepResult{Name: "check", Status: provision.StatusFailed, Phase: provision.PhaseMeasure, InvalidMeasurement: true, Result: res,
			Error: "check: measure: invalid measurement: 64 B: received more than sent", Fix: "rerun the check"}
		m, _ := runModule(t, py, moduleRun{args: pb, code: exitInvalid, doc: upReport(st)})
		chk, _ := m["check"].(map[string]any)
		if m["failed"] != true || !strings.Contains(m["msg"].(string), "step check failed (measure): check: measure: invalid measurement: 64 B: received more than sent") ||
			chk["runs"].([]any)[0].(map[string]any)["invalid"] != "received more than sent" {
			t.Errorf("result %v", m)
		}
	})
	t.Run("exit 2 usage", func(t *testing.T) {
		m, _ := runModule(t, py, moduleRun{args: pb, code: exitUsage, err: "rig: unknown step check; steps of this playbook: hugepages"})
		if m["failed"] != true || m["msg"] != "rig up -p bf2-dpu: exit 2 (usage: a bad flag, playbook or step name): rig: unknown step check; steps of this playbook: hugepages" {
			t.Errorf("result %v", m)
		}
	})
	t.Run("check mode plans", func(t *testing.T) {
		m, argv := runModule(t, py, moduleRun{check: true, args: map[string]any{"playbook": "bf2-dpu", "metrics_file": "/x.prom", "lock_timeout": "9s"},
			doc: &provision.Report{SchemaVersion: provision.ReportSchemaVersion, Mode: provision.RunPlan, Steps: []provision.StepResult{{Name: "ovs", Status: provision.StatusWouldChange, Changes: someChange}}}})
		if want := []string{"-o", "json", "plan", "-p", "bf2-dpu"}; !reflect.DeepEqual(argv, want) || m["changed"] != true || m["failed"] != false {
			t.Errorf("check mode: argv %q (want %q), result %v", argv, want, m)
		}
		_, argv = runModule(t, py, moduleRun{check: true, args: map[string]any{"command": "check", "playbook": "bf2-dpu"}, doc: upReport()})
		if want := []string{"-o", "json", "plan", "--only", "check", "-p", "bf2-dpu"}; !reflect.DeepEqual(argv, want) {
			t.Errorf("check mode, command check: argv %q, want %q", argv, want)
		}
	})
	t.Run("check mode before rig is on the host", func(t *testing.T) {
		m, _ := runModule(t, py, moduleRun{check: true, args: map[string]any{"playbook": "bf2-dpu", "rig_path": "/nonexistent/rig"}})
		if m["failed"] == true || m["changed"] != true || !strings.Contains(fmt.Sprint(m["msg"]), "/nonexistent/rig is not on the host yet") {
			t.Errorf("result %v", m)
		}
	})
	t.Run("no shell", func(t *testing.T) {
		odd := "/tmp/a b;touch " + t.TempDir() + "/pwned $(id).yaml"
		_, argv := runModule(t, py, moduleRun{args: map[string]any{"playbook": odd, "only": []string{"mode", "rdma"}}, doc: upReport()})
		if want := []string{"-o", "json", "up", "-p", odd, "--only", "mode", "--only", "rdma"}; !reflect.DeepEqual(argv, want) {
			t.Errorf("argv %q, want %q", argv, want)
		}
	})
}
