package ovsstep

import (
	"errors"
	"fmt"
	"strings"

	"rig/internal/host"
	"rig/ovs/diagnose"
	"rig/provision"
)

// opFailed explains a failed write (obj and action name it): ovsdb-server
// dead is said as such (not as ovs-vswitchd's fault); else err as it is.
func (s *ovsStep) opFailed(obj, action string, err error) error {
	var te *host.ToolError
	if d, ok := diagnose.DBDied(s.c, err); ok && errors.As(err, &te) {
		// the tool's own words, not a guess at ovs-vswitchd's part
		return &provision.Problem{Object: obj, Err: fmt.Errorf("%s: %s: %w", action, d.Error, te), CauseText: d.Cause, FixText: d.Fix}
	}
	return fmt.Errorf("%s: %s: %w", obj, action, err)
}

// recordFailed is a failed update of the state file before a write: that
// write was not made; "nothing was written" only when no earlier write of
// this apply changed OvS, else those writes are named (each was recorded
// before it was made, so rig down undoes them).
func (s *ovsStep) recordFailed(err error) error {
	if len(s.applied) == 0 {
		return &provision.Problem{Object: "ovs", Err: fmt.Errorf("%w; nothing was written", err)}
	}
	msg, cause, fix := err.Error(), "", ""
	if p, ok := provision.AsProblem(err); ok {
		msg, cause, fix = p.Object+": "+p.Err.Error(), p.CauseText, p.FixText
	}
	msg = strings.ReplaceAll(msg, "; nothing was written", "")
	return &provision.Problem{Object: "ovs", CauseText: cause, FixText: fix, Err: &partialErr{err: err,
		msg: msg + "; this write was not made, but this run already changed OvS: " + strings.Join(s.applied, "; ") + " (each recorded before it was made: rig down undoes them)"}}
}

// partialErr words a state-file failure after earlier writes; it wraps
// the failure itself.
type partialErr struct {
	msg string
	err error
}

func (e *partialErr) Error() string { return e.msg }
func (e *partialErr) Unwrap() error { return e.err }
