// Package provision is rig's step engine: one ordered list of idempotent
// steps, each with a read-only Check and an Apply, run as a plan (check
// only) or an apply (check, apply, re-check).
package provision

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Change is one thing a step would change (Check) or changed (Apply).
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

// Plan is what Check found: the changes Apply would make (empty = satisfied),
// and, when nothing is left to write but the effect needs a reboot or power
// cycle, why.
type Plan struct {
	Changes []Change `json:"changes,omitempty"`
	Pending string   `json:"pending,omitempty"`
	// Notes are facts worth showing that are not changes (e.g. "mst: MFT not
	// installed; mstflint addresses devices by PCI BDF").
	Notes []string `json:"notes,omitempty"`
}

// Satisfied reports whether Apply has nothing to do.
func (p Plan) Satisfied() bool { return len(p.Changes) == 0 }

// Step is one idempotent provisioning step.
type Step interface {
	Name() string
	// Check is read-only: it never writes and never runs a tool that writes.
	Check(ctx context.Context) (Plan, error)
	// Apply makes the changes of plan (the result of the Check just before).
	Apply(ctx context.Context, plan Plan) error
}

// Problem is an error that explains itself: the object, what went wrong, the
// likely cause and the fix. Steps return it (wrapped or not) so the report
// can show cause and fix apart from the message.
type Problem struct {
	Object string
	Err    error
	Cause  string
	Fix    string
}

func (p *Problem) Error() string {
	var b strings.Builder
	if p.Object != "" {
		b.WriteString(p.Object)
		b.WriteString(": ")
	}
	if p.Err != nil {
		b.WriteString(p.Err.Error())
	}
	if p.Cause != "" {
		b.WriteString("; likely cause: ")
		b.WriteString(p.Cause)
	}
	if p.Fix != "" {
		b.WriteString("; fix: ")
		b.WriteString(p.Fix)
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
