package provision

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"rig/internal/pci"
)

// DownOptions are `rig down`'s choices.
type DownOptions struct {
	// Firmware restores firmware parameters (the DPU mode) too; they only
	// take effect after a power cycle, so it is asked for explicitly.
	Firmware bool
}

// Downer is a step that can undo what it configured: Down returns the
// step whose Check plans the undo from rig's state file (read-only, as
// every Check), so `rig plan --down` and `rig down` share the runner's
// plan, apply and verify.
type Downer interface {
	Down(opts DownOptions) Step
}

// keptStep is a step rig down leaves as it is; its Check says why.
type keptStep struct{ name, why string }

func (k keptStep) Name() string { return k.name }

func (k keptStep) Check(context.Context) (Plan, error) {
	return Plan{Notes: []string{k.why}}, nil
}

// Kept is the step rig down runs for a step whose work it leaves in
// place: its Check notes why.
func Kept(name, why string) Step { return keptStep{name: name, why: why} }

// RecordVetter is a step whose apply acts on records of rig's state file
// (a rig down step). VetRecords reads the state file (refusing one another
// user could have planted: LoadState) and refuses, reading only, every
// record the step would act on that rig's own steps could not have written
// for this playbook on this host: a path the step never writes, a value
// out of the host's range, a name the playbook does not manage. It returns
// nil for any other problem: the step's Check reports those in its turn.
//
// Runner.Execute vets every selected step before the first one runs, and
// one refused record refuses the whole run: no step writes, the step whose
// record is refused fails (phase check, exit 1 like any step's failure:
// the command line is right, what is wrong is data on the host) and the
// others are not run. A partial down would leave the host half restored
// by a file known to be edited or damaged, whose other records are then
// suspect too; refusing before any write leaves the host as it is until
// the file is fixed. Each step's Check vets its records again, so a plan
// or a step run alone refuses them the same way.
type RecordVetter interface {
	VetRecords(ctx context.Context) error
}

// ErrStateRecord is wrapped by the refusal of a record rig could not have
// written.
var ErrStateRecord = errors.New("records rig could not have written")

// Bounds of what a record may hold (rig records the host's own values;
// anything longer is not one).
const (
	// MaxRecordedContent bounds a file's content before rig (the files
	// rig writes are drop-ins and units of a few hundred bytes).
	MaxRecordedContent = 64 << 10
	// MaxRecordedValue bounds a sysctl or OvS value before rig.
	MaxRecordedValue = 4096
)

// RecordCheck collects the refused records of one step's part of the
// state file.
type RecordCheck struct {
	State StateStore
	bad   []string
}

// Refuse notes that field (e.g. kernel.files[0].path) holds what rig could
// not have written: why, and what rig would write there.
func (c *RecordCheck) Refuse(field, format string, args ...any) {
	c.bad = append(c.bad, field+": "+fmt.Sprintf(format, args...))
}

// Err is the refusal of every noted record, nil when there is none.
func (c *RecordCheck) Err() error {
	if len(c.bad) == 0 {
		return nil
	}
	return &Problem{Object: "rig state " + c.State.String(),
		Err:       fmt.Errorf("%w: %s; rig down acts on none of them, nothing was written", ErrStateRecord, strings.Join(c.bad, "; ")),
		CauseText: "the state file was edited or damaged: rig's own steps could not have written these records (" + c.State.PlaybookName() + ") for this playbook on this host",
		FixText:   "remove those entries (or the file " + c.State.String() + ") and restore those settings by hand; then rig down again"}
}

// BadText says what is wrong with a recorded value: a NUL or another
// control character (a newline would start another line of a sysfs or
// drop-in write), or more than max bytes ("" = none).
func BadText(v string, max int) string {
	if len(v) > max {
		return fmt.Sprintf("%d bytes, more than the %d rig records", len(v), max)
	}
	if i := strings.IndexFunc(v, func(r rune) bool { return r < ' ' || r == 0x7f }); i >= 0 {
		return fmt.Sprintf("%q holds the control character %q", v, v[i])
	}
	return ""
}

// WellFormedBDF: s is a PCI address as rig records it (canonical,
// 0000:03:00.0).
func WellFormedBDF(s string) bool {
	c, ok := pci.Canonical(s)
	return ok && c == s
}

// OrNoneList joins xs with ", ", or says "none" (the names a refusal
// or a note offers instead).
func OrNoneList(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}
