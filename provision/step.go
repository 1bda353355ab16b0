// Package provision is rig's step engine: one ordered list of idempotent
// steps. A step's Check reads the host and returns a Plan whose operations
// say what would change and how; the runner shows the plan (rig plan) or
// runs its operations in order and checks again (rig up). The engine knows
// no step: the steps live in provision/card, provision/system, provision/pcidev,
// provision/ovsstep and provision/check, their list in provision/steps.
package provision

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Change is one thing a step would change (Check) or changed (apply).
type Change struct {
	Object string `json:"object"`         // e.g. "hugepages node0 2048kB"
	Action string `json:"action"`         // e.g. "set nr_hugepages", "mount hugetlbfs"
	From   string `json:"from,omitempty"` // current value, when it has one
	To     string `json:"to,omitempty"`   // wanted value
}

func (c Change) String() string {
	s := c.Object + ": " + c.Action
	switch {
	case c.From != "" && c.To != "":
		s += fmt.Sprintf(" %s -> %s", c.From, c.To)
	case c.To != "":
		s += " " + c.To
	}
	return s
}

// Op is one write a Check planned: the changes it makes and the function
// that makes them. One op may cover several changes (one `mstconfig set`
// for every parameter of a device), so the plan needs no padding.
type Op struct {
	Changes []Change
	Do      func(ctx context.Context) error
	// Refused, when set, says why this op may not run here (e.g. a real
	// mount while reading a fixture root). The plan still shows it; an
	// apply refuses the whole step before its first write.
	Refused error
}

// Plan is what Check found: the operations an apply runs, in order (none =
// satisfied), and, when nothing is left to write but the effect needs a
// reboot or power cycle, why.
type Plan struct {
	Ops     []Op
	Pending string
	// Resets: what makes Pending take effect, one entry per class (see
	// Reset); set with Pending by AddPending.
	Resets []Reset
	// Notes are facts worth showing that are not changes (e.g. "mst: MFT not
	// installed; mstflint addresses devices by PCI BDF").
	Notes []string
	// Substitutions are what the step put in place of hardware that cannot
	// exist here (a virtual lab); each is also one of Notes.
	Substitutions []Substitution
	// Restarts names what the plan's ops stop or restart ("ovs-vswitchd"):
	// in a plan, the checks of later steps learn it (RestartsBefore), so
	// what rig down frees first (pages ovs-vswitchd holds) is predicted,
	// not a failure.
	Restarts []string
}

// Substitution is one thing a step uses in place of what the playbook
// names on hardware: in a virtual lab, an af_packet vdev on the same
// netdev for an mlx5 port. The report carries it per port (JSON
// "substitutions") and shows Text.
type Substitution struct {
	Object     string `json:"object"`             // "ovs port p0"
	Netdev     string `json:"netdev,omitempty"`   // "p0"
	Hardware   string `json:"hardware,omitempty"` // what hardware would take: "0000:03:00.0" ("" when the lab shows no mlx5 function)
	Substitute string `json:"substitute"`         // what is used: "net_af_packet_p0,iface=p0"
	Reason     string `json:"reason"`
	Text       string `json:"text"` // "p0: mlx5 devargs 0000:03:00.0 substituted by ..."
}

// Changes lists every change of the plan's operations, in order.
func (p Plan) Changes() []Change {
	var out []Change
	for _, op := range p.Ops {
		out = append(out, op.Changes...)
	}
	return out
}

// Satisfied reports whether there is nothing to write.
func (p Plan) Satisfied() bool { return len(p.Ops) == 0 }

// Add appends one op covering changes.
func (p *Plan) Add(do func(ctx context.Context) error, changes ...Change) {
	p.Ops = append(p.Ops, Op{Changes: changes, Do: do})
}

// AddPending adds one reason for a pending reset (a reboot, a power
// cycle): the reset it needs, and why.
func (p *Plan) AddPending(r Reset, msg string) {
	p.Resets = addReset(p.Resets, r)
	if p.Pending == "" {
		p.Pending = msg
	} else {
		p.Pending += "; " + msg
	}
}

// Apply runs the plan's operations in order and stops at the first error.
// It refuses, before any write, a plan with a refused operation.
func (p Plan) Apply(ctx context.Context) error {
	for _, op := range p.Ops {
		if op.Refused != nil {
			return op.Refused
		}
	}
	for _, op := range p.Ops {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := op.Do(ctx); err != nil {
			return err
		}
	}
	return nil
}

// Step is one idempotent provisioning step.
type Step interface {
	Name() string
	// Check is read-only: it never writes and never runs a tool that
	// writes. The writes it plans are in the returned Plan's Ops.
	Check(ctx context.Context) (Plan, error)
}

// Need says that a step needs another one to have run (when the playbook
// has both), and why: --skip of the needed step is refused.
type Need struct {
	Step string
	Why  string
}

// Problem is an error that explains itself: the object, what went wrong, the
// likely cause and the fix. Steps return it (wrapped or not) so the report
// can show cause and fix apart from the message.
type Problem struct {
	Object    string
	Err       error
	CauseText string
	FixText   string
}

// Cause is the likely cause ("" when unknown).
func (p *Problem) Cause() string { return p.CauseText }

// Fix is what the user can do about it ("" when nothing is known).
func (p *Problem) Fix() string { return p.FixText }

func (p *Problem) Error() string {
	var b strings.Builder
	if p.Object != "" {
		b.WriteString(p.Object)
		b.WriteString(": ")
	}
	if p.Err != nil {
		b.WriteString(p.Err.Error())
	}
	if p.CauseText != "" {
		b.WriteString("; likely cause: ")
		b.WriteString(p.CauseText)
	}
	if p.FixText != "" {
		b.WriteString("; fix: ")
		b.WriteString(p.FixText)
	}
	return b.String()
}

func (p *Problem) Unwrap() error { return p.Err }

// AsProblem returns the first *Problem in err's chain, if any.
func AsProblem(err error) (*Problem, bool) {
	var p *Problem
	ok := errors.As(err, &p)
	return p, ok
}

// explained is any error that explains itself (Problem, hugepages'
// GrantError, ovs' VswitchdDiedError, bench's errors): the report reads
// its cause and fix through this.
type explained interface {
	error
	Cause() string
	Fix() string
}

// RefuseLiveWrite is the refusal of a write that would land on this
// machine while --root names a fixture (Env.FixtureRoot): the plan shows
// the op, the apply refuses before its first write.
func RefuseLiveWrite(object, root, what, orFix string) error {
	fix := "run rig up without --root on the host itself"
	if orFix != "" {
		fix += ", " + orFix
	}
	return &Problem{Object: object, Err: fmt.Errorf("refused: --root %s reads a fixture, and this %s", root, what),
		CauseText: "--root is for read-only work on a fixture tree (inventory, mst status, rdma links, plan)", FixText: fix}
}

// restartsKey is the context key of the restarts earlier steps plan.
type restartsKey struct{}

// RestartsBefore lists, in a plan (rig plan, rig plan --down), what the
// steps before this one plan to stop or restart ("the ovs step's restart
// of ovs-vswitchd"): a check can count on what that frees. In an apply it
// is empty: those steps ran, and the host shows what they freed.
func RestartsBefore(ctx context.Context) []string {
	r, _ := ctx.Value(restartsKey{}).([]string)
	return r
}

func withRestarts(ctx context.Context, r []string) context.Context {
	if len(r) == 0 {
		return ctx
	}
	return context.WithValue(ctx, restartsKey{}, append([]string(nil), r...))
}
