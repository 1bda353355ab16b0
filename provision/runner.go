package provision

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Status of one step in a report.
type Status string

const (
	StatusOK            Status = "ok"             // satisfied, nothing to do
	StatusChanged       Status = "changed"        // applied and verified
	StatusWouldChange   Status = "would-change"   // plan only: Apply would change things
	StatusPendingReboot Status = "pending-reboot" // nothing to write; a reset is needed (StepResult.Resets: a reboot, a power cycle)
	StatusFailed        Status = "failed"         // check, apply or re-check failed
	StatusNotRun        Status = "not-run"        // an earlier step failed; or a measuring step after one pending a reboot
)

// RunMode says what a run does with each step's plan: show it (RunPlan) or
// carry it out and check again (RunApply).
type RunMode string

const (
	RunPlan  RunMode = "plan"
	RunApply RunMode = "apply"
)

// Runner runs one ordered list of steps.
type Runner struct {
	Steps []Step
	Now   func() time.Time // nil = time.Now
	// StateFile is the state file the steps record in, for the report
	// ("" = not said).
	StateFile string
}

// Selection filters steps by name; Only and Skip are mutually exclusive.
type Selection struct {
	Only []string
	Skip []string
}

// Names returns the step names in order.
func (r *Runner) Names() []string {
	out := make([]string, len(r.Steps))
	for i, s := range r.Steps {
		out[i] = s.Name()
	}
	return out
}

// Select returns the steps that the selection keeps, in list order, or a
// usage error naming any unknown step.
func (r *Runner) Select(sel Selection) ([]Step, error) {
	if len(sel.Only) > 0 && len(sel.Skip) > 0 {
		return nil, &UsageError{Msg: "--only and --skip cannot be used together"}
	}
	known := map[string]bool{}
	for _, s := range r.Steps {
		known[s.Name()] = true
	}
	var unknown []string
	for _, n := range append(append([]string{}, sel.Only...), sel.Skip...) {
		if !known[n] {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, &UsageError{Msg: fmt.Sprintf("unknown step %s; steps of this playbook: %s",
			strings.Join(unknown, ", "), strings.Join(r.Names(), ", "))}
	}
	in := func(list []string, n string) bool {
		for _, x := range list {
			if x == n {
				return true
			}
		}
		return false
	}
	if err := r.checkNeeds(sel, in); err != nil {
		return nil, err
	}
	var out []Step
	for _, s := range r.Steps {
		if len(sel.Only) > 0 && !in(sel.Only, s.Name()) {
			continue
		}
		if in(sel.Skip, s.Name()) {
			continue
		}
		out = append(out, s)
	}
	return out, nil
}

// needer is a step that needs others to run first (see Need).
type needer interface{ Needs() []Need }

// checkNeeds refuses --skip of a step that a running step of this
// playbook needs.
func (r *Runner) checkNeeds(sel Selection, in func([]string, string) bool) error {
	present := map[string]bool{}
	for _, s := range r.Steps {
		present[s.Name()] = true
	}
	for _, s := range r.Steps {
		n, ok := s.(needer)
		if !ok || in(sel.Skip, s.Name()) || (len(sel.Only) > 0 && !in(sel.Only, s.Name())) {
			continue
		}
		for _, need := range n.Needs() {
			if present[need.Step] && in(sel.Skip, need.Step) {
				return &UsageError{Msg: fmt.Sprintf("--skip %s: step %s needs it (%s); skip %s too, or run %s alone with --only %s",
					need.Step, s.Name(), need.Why, s.Name(), s.Name(), s.Name())}
			}
		}
	}
	return nil
}

// UsageError is a bad command line (exit code 2).
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Execute checks (plan) or checks, applies and re-checks (apply) each
// selected step in order. In an apply a failed step stops the run and later steps
// are not-run; a plan checks every step, so it shows every problem at once
// (checks are read-only and do not depend on an earlier step's apply).
func (r *Runner) Execute(ctx context.Context, mode RunMode, sel Selection) (*Report, error) {
	steps, err := r.Select(sel)
	if err != nil {
		return nil, err
	}
	now := r.Now
	if now == nil {
		now = time.Now
	}
	rep := &Report{SchemaVersion: ReportSchemaVersion, Mode: mode, Started: now().UTC(), StateFile: r.StateFile}
	if refused := vetRecords(ctx, steps); refused != nil {
		rep.Steps = refused
		rep.summarize()
		return rep, nil
	}
	failed, pending, pendingAction := false, "", ""
	var restarts []string // in a plan: what earlier steps stop or restart (RestartsBefore)
	for _, s := range steps {
		res := StepResult{Name: s.Name()}
		if failed {
			res.Status = StatusNotRun
			rep.Steps = append(rep.Steps, res)
			continue
		}
		if _, ok := s.(measurer); ok && pending != "" && mode == RunApply {
			res.Status = StatusNotRun
			res.Notes = []string{fmt.Sprintf("not run: step %s needs a reset first, and what this step measures changes with it; %s, then `rig up` again", pending, pendingAction)}
			rep.Steps = append(rep.Steps, res)
			continue
		}
		if err := ctx.Err(); err != nil {
			res.Status = StatusFailed
			res.Phase = PhaseCheck
			res.setErr(&StepError{Step: s.Name(), Phase: "interrupted", Err: err})
			failed = true
			rep.Steps = append(rep.Steps, res)
			continue
		}
		t0 := now()
		for _, what := range checkApplyVerify(withRestarts(ctx, restarts), s, mode, &res) {
			if mode == RunPlan {
				restarts = append(restarts, "the "+s.Name()+" step's "+what)
			}
		}
		res.Duration = now().Sub(t0)
		res.DurationMS = float64(res.Duration.Microseconds()) / 1000
		if res.Status == StatusFailed && mode == RunApply {
			failed = true
		}
		if res.Status == StatusPendingReboot && pending == "" {
			pending, pendingAction = s.Name(), ResetActions(res.Resets)
			if pendingAction == "" {
				pendingAction = "reset as its pending note says (reboot or power-cycle)"
			}
		}
		rep.Steps = append(rep.Steps, res)
	}
	rep.summarize()
	return rep, nil
}

// vetRecords vets the state file's records of every step that acts on
// them (RecordVetter: rig down), before any step runs, in a plan as in an
// apply. When one is refused it returns the run's results: each step with
// a refused record failed (phase check), every other step not run; nil
// when all are rig's.
func vetRecords(ctx context.Context, steps []Step) []StepResult {
	errs := make([]error, len(steps))
	var refused []string
	for i, s := range steps {
		if v, ok := s.(RecordVetter); ok {
			if errs[i] = v.VetRecords(ctx); errs[i] != nil {
				refused = append(refused, s.Name())
			}
		}
	}
	if len(refused) == 0 {
		return nil
	}
	out := make([]StepResult, len(steps))
	for i, s := range steps {
		out[i] = StepResult{Name: s.Name()}
		if errs[i] != nil {
			out[i].Status, out[i].Phase = StatusFailed, PhaseCheck
			out[i].setErr(&StepError{Step: s.Name(), Phase: "check", Err: errs[i]})
			continue
		}
		out[i].Status = StatusNotRun
		out[i].Notes = []string{fmt.Sprintf("not run: rig's state file is refused (step %s); no step runs until it is fixed, so nothing was written", strings.Join(refused, ", "))}
	}
	return out
}

// checkApplyVerify is one step's turn: check; in an apply, run the plan's
// operations and check again, which must find nothing left to write. It
// returns what the plan stops or restarts (Plan.Restarts).
func checkApplyVerify(ctx context.Context, s Step, mode RunMode, res *StepResult) []string {
	plan, err := s.Check(ctx)
	if err != nil {
		res.Status = StatusFailed
		res.Phase = PhaseCheck
		res.setErr(&StepError{Step: s.Name(), Phase: "check", Err: err})
		return nil
	}
	verifyApply(ctx, s, mode, res, plan)
	return plan.Restarts
}

func verifyApply(ctx context.Context, s Step, mode RunMode, res *StepResult, plan Plan) {
	res.Notes, res.Substitutions = plan.Notes, plan.Substitutions
	if plan.Satisfied() {
		res.Pending, res.Resets = plan.Pending, plan.Resets
		if plan.Pending != "" {
			res.Status = StatusPendingReboot
		} else {
			res.Status = StatusOK
		}
		measure(ctx, s, mode, res)
		return
	}
	res.Changes = plan.Changes()
	if mode == RunPlan {
		res.Status = StatusWouldChange
		res.Pending, res.Resets = plan.Pending, plan.Resets
		return
	}
	if err := plan.Apply(ctx); err != nil {
		res.Status = StatusFailed
		res.Phase = PhaseApply
		res.setErr(&StepError{Step: s.Name(), Phase: "apply", Err: err})
		return
	}
	after, err := s.Check(ctx)
	if err != nil {
		res.Status = StatusFailed
		res.Phase = PhaseVerify
		res.setErr(&StepError{Step: s.Name(), Phase: "verify after apply", Err: err})
		return
	}
	if !after.Satisfied() {
		res.Status = StatusFailed
		var left []string
		for _, c := range after.Changes() {
			left = append(left, c.String())
		}
		res.Phase = PhaseVerify
		res.setErr(&StepError{Step: s.Name(), Phase: "verify after apply",
			Err: fmt.Errorf("still differs: %s", strings.Join(left, "; "))})
		return
	}
	res.Notes, res.Substitutions = after.Notes, after.Substitutions // what the verifying check saw, not the stale pre-apply facts
	if after.Pending != "" {
		res.Status = StatusPendingReboot
		res.Pending, res.Resets = after.Pending, after.Resets
		return
	}
	res.Status = StatusChanged
	measure(ctx, s, mode, res)
}

// measurer is a step that, once its plan is applied and verified, runs
// something that is no change (the check's traffic) and reports it.
type measurer interface {
	Measure(ctx context.Context) (any, error)
}

// measure runs a measurer step's measurement in an apply: its result goes
// into the report; its failure fails the step (phase measure).
func measure(ctx context.Context, s Step, mode RunMode, res *StepResult) {
	m, ok := s.(measurer)
	if !ok || mode != RunApply {
		return
	}
	out, err := m.Measure(ctx)
	if out != nil {
		res.Result = out
	}
	if err != nil {
		res.Status = StatusFailed
		res.Phase = PhaseMeasure
		res.setErr(&StepError{Step: s.Name(), Phase: "measure", Err: err})
	}
}

// Phase names where a failed step failed (StepResult.Phase).
const (
	PhaseCheck   = "check"
	PhaseApply   = "apply"   // an operation failed: the plan's changes may be partly made
	PhaseVerify  = "verify"  // every operation succeeded; the re-check failed or still differs
	PhaseMeasure = "measure" // satisfied and verified; its measurement (the check) failed
)

// StepError is a step's failure as the runner reports it, named once: the
// runner prefixes "STEP: PHASE: " unless the message already starts with
// "STEP: " (a step or resource package that names its objects "ovs: port
// p0"); a name repeated at the front ("ovs: ovs: ...") is collapsed to one.
// The phase is always in StepResult.Phase.
type StepError struct {
	Step  string
	Phase string
	Err   error
}

func (e *StepError) Error() string {
	msg, p := e.Err.Error(), e.Step+": "
	if !strings.HasPrefix(msg, p) {
		return p + e.Phase + ": " + msg
	}
	for strings.HasPrefix(msg[len(p):], p) {
		msg = msg[len(p):]
	}
	return msg
}

func (e *StepError) Unwrap() error { return e.Err }
