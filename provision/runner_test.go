package provision

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeStep is a scripted step: Check returns plans in order (the last one
// repeats), whose ops record their calls and may fail.
type fakeStep struct {
	name     string
	plans    []Plan
	checkErr error
	applyErr error
	checks   int
	applies  int
}

func (f *fakeStep) Name() string { return f.name }
func (f *fakeStep) Check(ctx context.Context) (Plan, error) {
	if f.checkErr != nil {
		return Plan{}, f.checkErr
	}
	i := f.checks
	if i >= len(f.plans) {
		i = len(f.plans) - 1
	}
	f.checks++
	p := f.plans[i]
	p.Ops = append([]Op(nil), p.Ops...)
	for j := range p.Ops {
		p.Ops[j].Do = func(context.Context) error {
			f.applies++
			return f.applyErr
		}
	}
	return p, nil
}

// changes is a plan of one op covering cs.
func changes(cs ...Change) Plan { return Plan{Ops: []Op{{Changes: cs}}} }

var oneChange = changes(Change{Object: "x", Action: "set", From: "0", To: "1"})

func statuses(r *Report) []Status {
	var out []Status
	for _, s := range r.Steps {
		out = append(out, s.Status)
	}
	return out
}

func TestRunnerApplyAndPlan(t *testing.T) {
	a := &fakeStep{name: "a", plans: []Plan{{}}}
	b := &fakeStep{name: "b", plans: []Plan{oneChange, {}}}
	c := &fakeStep{name: "c", plans: []Plan{{Pending: "power cycle required"}}}
	r := &Runner{Steps: []Step{a, b, c}}
	rep, err := r.Execute(context.Background(), RunPlan, Selection{})
	if err != nil {
		t.Fatal(err)
	}
	if got := statuses(rep); !reflect.DeepEqual(got, []Status{StatusOK, StatusWouldChange, StatusPendingReboot}) {
		t.Fatalf("plan statuses %v", got)
	}
	if a.applies+b.applies+c.applies != 0 {
		t.Fatal("plan must not apply")
	}
	b.checks = 0
	rep, err = r.Execute(context.Background(), RunApply, Selection{})
	if err != nil {
		t.Fatal(err)
	}
	if got := statuses(rep); !reflect.DeepEqual(got, []Status{StatusOK, StatusChanged, StatusPendingReboot}) {
		t.Fatalf("apply statuses %v", got)
	}
	if a.applies != 0 || b.applies != 1 || c.applies != 0 {
		t.Fatalf("applies a=%d b=%d c=%d", a.applies, b.applies, c.applies)
	}
	if rep.Summary.Changed != 1 || rep.Summary.Changes != 1 || rep.Summary.PendingReboot != 1 || !rep.Summary.Success {
		t.Fatalf("summary %+v", rep.Summary)
	}
}

func TestRunnerFailureStopsRun(t *testing.T) {
	a := &fakeStep{name: "a", plans: []Plan{oneChange, {}}}
	b := &fakeStep{name: "b", plans: []Plan{oneChange}, applyErr: &Problem{Object: "thing", Err: errors.New("boom"), CauseText: "because", FixText: "do x"}}
	c := &fakeStep{name: "c", plans: []Plan{oneChange}}
	r := &Runner{Steps: []Step{a, b, c}}
	rep, err := r.Execute(context.Background(), RunApply, Selection{})
	if err != nil {
		t.Fatal(err)
	}
	if got := statuses(rep); !reflect.DeepEqual(got, []Status{StatusChanged, StatusFailed, StatusNotRun}) {
		t.Fatalf("statuses %v", got)
	}
	if c.checks != 0 || c.applies != 0 {
		t.Fatal("step after the failure ran")
	}
	f := rep.FailedStep()
	if f == nil || f.Name != "b" || f.Cause != "because" || f.Fix != "do x" || !strings.Contains(f.Error, "b: apply: thing: boom") {
		t.Fatalf("failed step %+v", f)
	}
	var sb strings.Builder
	if err := rep.WriteText(&sb); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`FAILED at step "b"`, "cause: because", "fix:   do x", "not-run"} {
		if !strings.Contains(sb.String(), s) {
			t.Errorf("text report lacks %q:\n%s", s, sb.String())
		}
	}
}

func TestRunnerVerifyAfterApply(t *testing.T) {
	// Apply "succeeds" but the re-check still sees the change: failed, named.
	a := &fakeStep{name: "a", plans: []Plan{oneChange}}
	rep, _ := (&Runner{Steps: []Step{a}}).Execute(context.Background(), RunApply, Selection{})
	if rep.Steps[0].Status != StatusFailed || !strings.Contains(rep.Steps[0].Error, "still differs: x: set 0 -> 1") {
		t.Fatalf("got %+v", rep.Steps[0])
	}
	// A check error fails the step too.
	b := &fakeStep{name: "b", checkErr: errors.New("cannot read")}
	rep, _ = (&Runner{Steps: []Step{b}}).Execute(context.Background(), RunPlan, Selection{})
	if rep.Steps[0].Status != StatusFailed || rep.Steps[0].Error != "b: check: cannot read" {
		t.Fatalf("got %+v", rep.Steps[0])
	}
}

func TestRunnerOnlySkip(t *testing.T) {
	mk := func() []Step {
		return []Step{&fakeStep{name: "hugepages", plans: []Plan{{}}}, &fakeStep{name: "rdma", plans: []Plan{{}}}, &fakeStep{name: "ovs", plans: []Plan{{}}}}
	}
	names := func(r *Report) []string {
		var out []string
		for _, s := range r.Steps {
			out = append(out, s.Name)
		}
		return out
	}
	r := &Runner{Steps: mk()}
	rep, err := r.Execute(context.Background(), RunPlan, Selection{Only: []string{"ovs", "hugepages"}})
	if err != nil || !reflect.DeepEqual(names(rep), []string{"hugepages", "ovs"}) {
		t.Fatalf("--only: %v %v", names(rep), err)
	}
	rep, err = r.Execute(context.Background(), RunPlan, Selection{Skip: []string{"rdma"}})
	if err != nil || !reflect.DeepEqual(names(rep), []string{"hugepages", "ovs"}) {
		t.Fatalf("--skip: %v %v", names(rep), err)
	}
	var ue *UsageError
	if _, err := r.Execute(context.Background(), RunPlan, Selection{Only: []string{"hugepage"}}); !errors.As(err, &ue) ||
		!strings.Contains(err.Error(), "unknown step hugepage") || !strings.Contains(err.Error(), "hugepages, rdma, ovs") {
		t.Fatalf("unknown --only: %v", err)
	}
	if _, err := r.Execute(context.Background(), RunPlan, Selection{Skip: []string{"nope"}}); !errors.As(err, &ue) {
		t.Fatalf("unknown --skip: %v", err)
	}
	if _, err := r.Execute(context.Background(), RunPlan, Selection{Only: []string{"ovs"}, Skip: []string{"rdma"}}); !errors.As(err, &ue) {
		t.Fatalf("--only with --skip: %v", err)
	}
}

func TestReportJSONSchema(t *testing.T) {
	a := &fakeStep{name: "a", plans: []Plan{oneChange, {Notes: []string{"n"}}}}
	r := &Runner{Steps: []Step{a}, Now: func() time.Time { return time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC) }}
	rep, _ := r.Execute(context.Background(), RunApply, Selection{})
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["schemaVersion"] != ReportSchemaVersion || m["mode"] != "apply" {
		t.Fatalf("top level: %s", b)
	}
	want := `{"schemaVersion":"rig.report/v1","mode":"apply","started":"2026-11-30T00:00:00Z","steps":[{"name":"a","status":"changed","durationMs":0,"changes":[{"object":"x","action":"set","from":"0","to":"1"}],"notes":["n"]}],"summary":{"ok":0,"changed":1,"wouldChange":0,"pendingReboot":0,"failed":0,"notRun":0,"changes":1,"success":true}}`
	if string(b) != want {
		t.Fatalf("JSON changed shape (bump ReportSchemaVersion if intended):\n got %s\nwant %s", b, want)
	}
}

const lockChildEnv = "RIG_LOCK_CHILD"

// TestLockContention: a second process waits for the lock, times out with a
// clear error naming the holder's pid, and gets it once the first releases.
func TestLockContention(t *testing.T) {
	if p := os.Getenv(lockChildEnv); p != "" {
		_, err := AcquireLock(context.Background(), p, 200*time.Millisecond)
		if err == nil {
			os.Stdout.WriteString("GOT-LOCK\n")
			return
		}
		os.Stdout.WriteString("LOCK-ERR " + err.Error() + "\n")
		return
	}
	path := filepath.Join(t.TempDir(), "rig.lock")
	l, err := AcquireLock(context.Background(), path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the lock file rig made: %v %v, want mode 0600 (no other user reads or writes it)", fi, err)
	}
	child := func() string {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLockContention$")
		cmd.Env = append(os.Environ(), lockChildEnv+"="+path)
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	out := child()
	if !strings.Contains(out, "LOCK-ERR") || !strings.Contains(out, "lock held by another rig") ||
		!strings.Contains(out, "(pid "+strconv.Itoa(os.Getpid())+")") || !strings.Contains(out, "--lock-timeout") {
		t.Fatalf("second process while held: %s", out)
	}
	// in-process too: flock is per open file, so a second acquire contends
	t0 := time.Now()
	if _, err := AcquireLock(context.Background(), path, 150*time.Millisecond); !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("in-process second acquire: %v", err)
	} else if time.Since(t0) < 150*time.Millisecond {
		t.Fatal("did not wait for the timeout")
	}
	// a waiter gets it as soon as the holder releases
	done := make(chan error, 1)
	go func() {
		l2, err := AcquireLock(context.Background(), path, 5*time.Second)
		if err == nil {
			l2.Release()
		}
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	l.Release()
	if err := <-done; err != nil {
		t.Fatalf("waiter after release: %v", err)
	}
	if out := child(); !strings.Contains(out, "GOT-LOCK") {
		t.Fatalf("after release: %s", out)
	}
}

// TestPlanChecksEveryStep: a failed check in a plan does not hide the later
// steps' checks; an apply still stops at the first failure.
func TestPlanChecksEveryStep(t *testing.T) {
	mk := func() (a, b, c, d *fakeStep) {
		return &fakeStep{name: "a", checkErr: errors.New("cannot read")},
			&fakeStep{name: "b", plans: []Plan{oneChange}},
			&fakeStep{name: "c", checkErr: errors.New("no tool")},
			&fakeStep{name: "d", plans: []Plan{{}}}
	}
	a, b, c, d := mk()
	rep, err := (&Runner{Steps: []Step{a, b, c, d}}).Execute(context.Background(), RunPlan, Selection{})
	if err != nil {
		t.Fatal(err)
	}
	if got := statuses(rep); !reflect.DeepEqual(got, []Status{StatusFailed, StatusWouldChange, StatusFailed, StatusOK}) {
		t.Fatalf("plan statuses %v", got)
	}
	if b.checks != 1 || d.checks != 1 || b.applies+d.applies != 0 {
		t.Fatalf("plan checks b=%d d=%d applies %d", b.checks, d.checks, b.applies+d.applies)
	}
	if rep.Summary.Failed != 2 || rep.Summary.WouldChange != 1 || rep.Summary.NotRun != 0 || rep.Summary.Success {
		t.Fatalf("summary %+v", rep.Summary)
	}
	var sb strings.Builder
	rep.WriteText(&sb)
	if !strings.Contains(sb.String(), "FAILED at steps \"a\", \"c\"\n") || !strings.Contains(sb.String(), "  + x: set 0 -> 1\n") {
		t.Fatalf("plan text:\n%s", sb.String())
	}

	a, b, c, d = mk()
	rep, _ = (&Runner{Steps: []Step{a, b, c, d}}).Execute(context.Background(), RunApply, Selection{})
	if got := statuses(rep); !reflect.DeepEqual(got, []Status{StatusFailed, StatusNotRun, StatusNotRun, StatusNotRun}) {
		t.Fatalf("apply statuses %v", got)
	}
	if b.checks+c.checks+d.checks+b.applies != 0 {
		t.Fatal("apply ran steps after the failure")
	}
}

// TestVerifyFailureReport: Apply succeeded but the re-check still differs:
// the applied changes carry the applied mark, not the would-change one.
func TestVerifyFailureReport(t *testing.T) {
	ch := changes(Change{Object: "bridge br0", Action: "create"})
	s := &fakeStep{name: "ovs", plans: []Plan{ch}}
	fixed := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	rep, _ := (&Runner{Steps: []Step{s}, Now: func() time.Time { return fixed }}).Execute(context.Background(), RunApply, Selection{})
	if rep.Steps[0].Phase != PhaseVerify {
		t.Fatalf("phase %q", rep.Steps[0].Phase)
	}
	var sb strings.Builder
	rep.WriteText(&sb)
	want := `STEP  STATUS  TIME  DETAIL
ovs   failed  0s    see below

ovs (failed):
  ✓ bridge br0: create
  ✗ ovs: verify after apply: still differs: bridge br0: create

apply: 0 ok, 0 changed, 0 would change, 0 pending reboot, 1 failed, 0 not run (1 change(s))
FAILED at step "ovs"
`
	if sb.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", sb.String(), want)
	}
	// a failed Apply: the changes were not (all) made, so they keep "+"
	s = &fakeStep{name: "ovs", plans: []Plan{ch}, applyErr: errors.New("ovs-vsctl: exit 1")}
	rep, _ = (&Runner{Steps: []Step{s}}).Execute(context.Background(), RunApply, Selection{})
	sb.Reset()
	rep.WriteText(&sb)
	if !strings.Contains(sb.String(), "\n  + bridge br0: create\n  ✗ ovs: apply: ovs-vsctl: exit 1\n") {
		t.Fatalf("apply failure text:\n%s", sb.String())
	}
}

// TestStepErrorOnePrefix: an error that already names the step (here twice:
// a Problem whose Object is the step around an error naming it again) is
// named once, not re-prefixed; its cause and fix still reach the report.
// An error that does not name the step gets one "STEP: PHASE:" prefix.
func TestStepErrorOnePrefix(t *testing.T) {
	inner := errors.New("ovs: ovsdb-server unreachable at unix:/x/db.sock")
	s := &fakeStep{name: "ovs", checkErr: &Problem{Object: "ovs", Err: inner, CauseText: "not running", FixText: "rig ovs daemon start --rundir /x"}}
	rep, _ := (&Runner{Steps: []Step{s}}).Execute(context.Background(), RunPlan, Selection{})
	st := rep.Steps[0]
	if want := "ovs: ovsdb-server unreachable at unix:/x/db.sock; likely cause: not running; fix: rig ovs daemon start --rundir /x"; st.Error != want {
		t.Fatalf("error\n got %q\nwant %q", st.Error, want)
	}
	if !errors.Is(st.Err, inner) || st.Cause != "not running" || st.Phase != PhaseCheck {
		t.Fatalf("chain lost: %+v", st)
	}
	var sb strings.Builder
	rep.WriteText(&sb)
	if want := "\novs (failed):\n  ✗ ovs: ovsdb-server unreachable at unix:/x/db.sock\n    cause: not running\n    fix:   rig ovs daemon start --rundir /x\n"; !strings.Contains(sb.String(), want) {
		t.Fatalf("text:\n%s\nwant it to contain:\n%s", sb.String(), want)
	}
	// an object of the step, named the way the ovs package names them
	s = &fakeStep{name: "ovs", plans: []Plan{oneChange}, applyErr: &Problem{Object: "ovs: port p0", Err: errors.New("Error attaching device")}}
	rep, _ = (&Runner{Steps: []Step{s}}).Execute(context.Background(), RunApply, Selection{})
	if rep.Steps[0].Error != "ovs: port p0: Error attaching device" || rep.Steps[0].Phase != PhaseApply {
		t.Fatalf("got %q (%s)", rep.Steps[0].Error, rep.Steps[0].Phase)
	}
	// an error naming something else keeps its own name after the prefix
	s = &fakeStep{name: "ovs", checkErr: errors.New("ovsdb: bad row")}
	rep, _ = (&Runner{Steps: []Step{s}}).Execute(context.Background(), RunPlan, Selection{})
	if rep.Steps[0].Error != "ovs: check: ovsdb: bad row" {
		t.Fatalf("got %q", rep.Steps[0].Error)
	}
}

// opsStep plans ops until they all ran once, then is satisfied.
type opsStep struct {
	name  string
	ops   []Op
	needs []Need
	ran   bool
}

func (s *opsStep) Name() string  { return s.name }
func (s *opsStep) Needs() []Need { return s.needs }
func (s *opsStep) Check(context.Context) (Plan, error) {
	if s.ran {
		return Plan{}, nil
	}
	p := Plan{Ops: append([]Op(nil), s.ops...)}
	p.Ops = append(p.Ops, Op{Do: func(context.Context) error { s.ran = true; return nil }})
	return p, nil
}

// One op may cover several changes: it runs once, the report lists each.
func TestRunnerOneOpCoversSeveralChanges(t *testing.T) {
	writes := 0
	s := &opsStep{name: "mode", ops: []Op{{
		Changes: []Change{{Object: "mode 03:00.0", Action: "set A"}, {Object: "mode 03:00.0", Action: "set B"}},
		Do:      func(context.Context) error { writes++; return nil },
	}}}
	rep, err := (&Runner{Steps: []Step{s}}).Execute(context.Background(), RunApply, Selection{})
	if err != nil || rep.Steps[0].Status != StatusChanged || len(rep.Steps[0].Changes) != 2 || writes != 1 {
		t.Fatalf("status %s, %d changes, %d writes, %v", rep.Steps[0].Status, len(rep.Steps[0].Changes), writes, err)
	}
	// apply twice: the second apply changes nothing and writes nothing
	rep, _ = (&Runner{Steps: []Step{s}}).Execute(context.Background(), RunApply, Selection{})
	if rep.Steps[0].Status != StatusOK || len(rep.Steps[0].Changes) != 0 || writes != 1 {
		t.Fatalf("second apply: %s, %d changes, %d writes", rep.Steps[0].Status, len(rep.Steps[0].Changes), writes)
	}
}

// The runner runs ops in order and stops at the first error; a refused op
// stops the step before its first write.
func TestRunnerOpsStopAtFirstErrorAndRefuseBeforeWriting(t *testing.T) {
	var order []string
	op := func(name string, err error) Op {
		return Op{Changes: []Change{{Object: name, Action: "set"}}, Do: func(context.Context) error {
			order = append(order, name)
			return err
		}}
	}
	s := &opsStep{name: "x", ops: []Op{op("a", nil), op("b", errors.New("b failed")), op("c", nil)}}
	rep, _ := (&Runner{Steps: []Step{s}}).Execute(context.Background(), RunApply, Selection{})
	st := rep.Steps[0]
	if st.Status != StatusFailed || st.Phase != PhaseApply || st.Error != "x: apply: b failed" || !reflect.DeepEqual(order, []string{"a", "b"}) {
		t.Fatalf("%s %s %q, ran %v", st.Status, st.Phase, st.Error, order)
	}

	order = nil
	refused := op("mount", nil)
	refused.Refused = &Problem{Object: "hugetlbfs /mnt", Err: errors.New("refusing to mount"), FixText: "run without --root"}
	s = &opsStep{name: "hugepages", ops: []Op{op("pool", nil), refused}}
	rep, _ = (&Runner{Steps: []Step{s}}).Execute(context.Background(), RunApply, Selection{})
	st = rep.Steps[0]
	if st.Status != StatusFailed || len(order) != 0 || st.Fix != "run without --root" || !strings.Contains(st.Error, "refusing to mount") {
		t.Fatalf("refused op: %s %q fix %q, ran %v", st.Status, st.Error, st.Fix, order)
	}
	// a plan still shows the refused op's change
	rep, _ = (&Runner{Steps: []Step{s}}).Execute(context.Background(), RunPlan, Selection{})
	if st := rep.Steps[0]; st.Status != StatusWouldChange || len(st.Changes) != 2 || len(order) != 0 {
		t.Fatalf("plan: %s %d changes, ran %v", st.Status, len(st.Changes), order)
	}
}

// --skip of a step that a running step needs is a usage error naming both
// and why; skipping both, or the needing one alone, is fine.
func TestSkipOfNeededStepRefused(t *testing.T) {
	hp := &opsStep{name: "hugepages"}
	ovs := &opsStep{name: "ovs", needs: []Need{{Step: "hugepages", Why: "OvS-DPDK allocates from hugepages"}}}
	r := &Runner{Steps: []Step{hp, ovs}}
	_, err := r.Execute(context.Background(), RunApply, Selection{Skip: []string{"hugepages"}})
	var ue *UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--skip hugepages: step ovs needs it (OvS-DPDK allocates from hugepages)") {
		t.Fatalf("skip needed: %v", err)
	}
	for _, sel := range []Selection{{Skip: []string{"hugepages", "ovs"}}, {Skip: []string{"ovs"}}, {Only: []string{"ovs"}}} {
		if _, err := r.Execute(context.Background(), RunPlan, sel); err != nil {
			t.Errorf("%+v: %v", sel, err)
		}
	}
	// a needed step the playbook does not have: nothing to refuse
	if _, err := (&Runner{Steps: []Step{ovs}}).Execute(context.Background(), RunPlan, Selection{Skip: []string{}}); err != nil {
		t.Errorf("ovs alone: %v", err)
	}
}

// measuringStep is a fakeStep with a measurement (the check's shape).
type measuringStep struct {
	fakeStep
	measured int
}

func (m *measuringStep) Measure(context.Context) (any, error) { m.measured++; return "figures", nil }

// A measurement after a step that needs a power cycle is not run (what it
// would measure changes with the power cycle; exit 3 stays the verdict),
// and runs once nothing is pending; a plan never measures.
func TestRunnerMeasureWaitsForPowerCycle(t *testing.T) {
	mode := &fakeStep{name: "mode", plans: []Plan{{Pending: "power cycle required", Resets: []Reset{ResetHostPowerCycle}}}}
	chk := &measuringStep{fakeStep: fakeStep{name: "check", plans: []Plan{{}}}}
	r := &Runner{Steps: []Step{mode, chk}}
	rep, err := r.Execute(context.Background(), RunApply, Selection{})
	if err != nil {
		t.Fatal(err)
	}
	if got := statuses(rep); !reflect.DeepEqual(got, []Status{StatusPendingReboot, StatusNotRun}) || chk.measured != 0 || chk.checks != 0 {
		t.Fatalf("statuses %v, measured %d, checks %d", got, chk.measured, chk.checks)
	}
	if n := rep.Steps[1].Notes; len(n) != 1 || !strings.Contains(n[0], "step mode needs a reset first, and what this step measures changes with it; power-cycle the server (cold") {
		t.Fatalf("notes %q", n)
	}
	if s := rep.Summary; s.PendingReboot != 1 || s.NotRun != 1 || s.Failed != 0 {
		t.Fatalf("summary %+v", s)
	}
	mode.plans = []Plan{{}}
	rep, _ = r.Execute(context.Background(), RunApply, Selection{})
	if got := statuses(rep); !reflect.DeepEqual(got, []Status{StatusOK, StatusOK}) || chk.measured != 1 || rep.Steps[1].Result != "figures" {
		t.Fatalf("after the power cycle: statuses %v, measured %d, result %v", got, chk.measured, rep.Steps[1].Result)
	}
	mode.plans = []Plan{{Pending: "power cycle required"}}
	rep, _ = r.Execute(context.Background(), RunPlan, Selection{})
	if got := statuses(rep); !reflect.DeepEqual(got, []Status{StatusPendingReboot, StatusOK}) || chk.measured != 1 {
		t.Fatalf("plan: statuses %v, measured %d", got, chk.measured)
	}
}
