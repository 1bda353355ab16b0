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
	StatusPendingReboot Status = "pending-reboot" // nothing to write; a reboot/power cycle is needed
	StatusFailed        Status = "failed"         // check, apply or re-check failed
	StatusNotRun        Status = "not-run"        // an earlier step failed
)

// Mode of a run.
type Mode string

const (
	ModePlan  Mode = "plan"
	ModeApply Mode = "apply"
)

// Runner runs one ordered list of steps.
type Runner struct {
	Steps []Step
	Now   func() time.Time // nil = time.Now
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

// UsageError is a bad command line (exit code 2).
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Run checks (plan) or checks, applies and re-checks (apply) each selected
// step in order. In an apply a failed step stops the run and later steps
// are not-run; a plan checks every step, so it shows every problem at once
// (checks are read-only and do not depend on an earlier step's apply).
func (r *Runner) Run(ctx context.Context, mode Mode, sel Selection) (*Report, error) {
	steps, err := r.Select(sel)
	if err != nil {
		return nil, err
	}
	now := r.Now
	if now == nil {
		now = time.Now
	}
	rep := &Report{SchemaVersion: ReportSchemaVersion, Mode: mode, Started: now().UTC()}
	failed := false
	for _, s := range steps {
		res := StepResult{Name: s.Name()}
		if failed {
			res.Status = StatusNotRun
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
		runStep(ctx, s, mode, &res)
		res.Duration = now().Sub(t0)
		res.DurationMS = float64(res.Duration.Microseconds()) / 1000
		if res.Status == StatusFailed && mode == ModeApply {
			failed = true
		}
		rep.Steps = append(rep.Steps, res)
	}
	rep.summarize()
	return rep, nil
}

func runStep(ctx context.Context, s Step, mode Mode, res *StepResult) {
	plan, err := s.Check(ctx)
	if err != nil {
		res.Status = StatusFailed
		res.Phase = PhaseCheck
		res.setErr(&StepError{Step: s.Name(), Phase: "check", Err: err})
		return
	}
	res.Notes = plan.Notes
	if plan.Satisfied() {
		res.Pending = plan.Pending
		if plan.Pending != "" {
			res.Status = StatusPendingReboot
		} else {
			res.Status = StatusOK
		}
		return
	}
	res.Changes = plan.Changes
	if mode == ModePlan {
		res.Status = StatusWouldChange
		res.Pending = plan.Pending
		return
	}
	if err := s.Apply(ctx, plan); err != nil {
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
		for _, c := range after.Changes {
			left = append(left, c.String())
		}
		res.Phase = PhaseVerify
		res.setErr(&StepError{Step: s.Name(), Phase: "verify after apply",
			Err: fmt.Errorf("still differs: %s", strings.Join(left, "; "))})
		return
	}
	res.Notes = after.Notes // what the verifying check saw, not the stale pre-apply facts
	if after.Pending != "" {
		res.Status = StatusPendingReboot
		res.Pending = after.Pending
		return
	}
	res.Status = StatusChanged
}

// Phase names where a failed step failed (StepResult.Phase).
const (
	PhaseCheck  = "check"
	PhaseApply  = "apply"  // Apply returned an error: its changes may be partly made
	PhaseVerify = "verify" // Apply succeeded; the re-check failed or still differs
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
