package provision

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// ReportSchemaVersion names the JSON shape of Report; bump on breaking change.
const ReportSchemaVersion = "rig.report/v1"

// StepResult is one step's outcome.
type StepResult struct {
	Name       string        `json:"name"`
	Status     Status        `json:"status"`
	Duration   time.Duration `json:"-"`
	DurationMS float64       `json:"durationMs"`
	Changes    []Change      `json:"changes,omitempty"`
	Pending    string        `json:"pending,omitempty"`
	// Resets: what makes Pending take effect (status pending-reboot).
	Resets []Reset  `json:"resets,omitempty"`
	Notes  []string `json:"notes,omitempty"`
	// Substitutions: hardware a virtual lab stood in for (see Substitution).
	Substitutions []Substitution `json:"substitutions,omitempty"`
	Phase         string         `json:"phase,omitempty"` // failed steps: check, apply or verify (Apply succeeded)
	Error         string         `json:"error,omitempty"`
	Cause         string         `json:"cause,omitempty"`
	Fix           string         `json:"fix,omitempty"`
	Err           error          `json:"-"`
	// Result is what a measuring step (check) measured, also when it failed.
	Result any `json:"result,omitempty"`
	// BelowThreshold: the step ran and measured less than a threshold (exit 4).
	BelowThreshold bool `json:"belowThreshold,omitempty"`
	// InvalidMeasurement: the step's measurement cannot be right (exit 5).
	InvalidMeasurement bool `json:"invalidMeasurement,omitempty"`
}

func (r *StepResult) setErr(err error) {
	r.Err = err
	r.Error = err.Error()
	var bt interface{ BelowThreshold() bool }
	r.BelowThreshold = errors.As(err, &bt) && bt.BelowThreshold()
	var inv interface{ InvalidMeasurement() bool }
	r.InvalidMeasurement = errors.As(err, &inv) && inv.InvalidMeasurement()
	var ex explained
	if errors.As(err, &ex) {
		r.Cause = ex.Cause()
		r.Fix = ex.Fix()
	}
}

// Summary counts results by status.
type Summary struct {
	OK             int  `json:"ok"`
	Changed        int  `json:"changed"`
	WouldChange    int  `json:"wouldChange"`
	PendingReboot  int  `json:"pendingReboot"`
	Failed         int  `json:"failed"`
	BelowThreshold int  `json:"belowThreshold,omitempty"`
	Invalid        int  `json:"invalidMeasurement,omitempty"`
	NotRun         int  `json:"notRun"`
	Changes        int  `json:"changes"`
	Success        bool `json:"success"`
	// Resets: every reset the run's pending steps need (exit 3), the one
	// to do first first.
	Resets []Reset `json:"resets,omitempty"`
}

// Report is the result of one run.
type Report struct {
	SchemaVersion string  `json:"schemaVersion"`
	Mode          RunMode `json:"mode"`
	Playbook      string  `json:"playbook,omitempty"`
	// StateFile is rig's state file of the run (what down restores): a
	// path on this machine, outside --root unless --state-file put it there.
	StateFile string       `json:"stateFile,omitempty"`
	Started   time.Time    `json:"started"`
	Steps     []StepResult `json:"steps"`
	Summary   Summary      `json:"summary"`
}

func (r *Report) summarize() {
	s := Summary{}
	for _, st := range r.Steps {
		switch st.Status {
		case StatusOK:
			s.OK++
		case StatusChanged:
			s.Changed++
		case StatusWouldChange:
			s.WouldChange++
		case StatusPendingReboot:
			s.PendingReboot++
		case StatusFailed:
			s.Failed++
			if st.BelowThreshold {
				s.BelowThreshold++
			}
			if st.InvalidMeasurement {
				s.Invalid++
			}
		case StatusNotRun:
			s.NotRun++
		}
		s.Changes += len(st.Changes)
		for _, r := range st.Resets {
			s.Resets = addReset(s.Resets, r)
		}
	}
	s.Success = s.Failed == 0
	r.Summary = s
}

// FailedStep returns the failed step, if any.
func (r *Report) FailedStep() *StepResult {
	for i := range r.Steps {
		if r.Steps[i].Status == StatusFailed {
			return &r.Steps[i]
		}
	}
	return nil
}

// WriteText prints the report for people: the step table, each step's
// changes, notes, result and error, and the summary.
func (r *Report) WriteText(w io.Writer) error {
	if err := r.writeTable(w); err != nil {
		return err
	}
	for i := range r.Steps {
		if err := r.Steps[i].writeDetail(w); err != nil {
			return err
		}
	}
	s := r.Summary
	fmt.Fprintf(w, "\n%s: %d ok, %d changed, %d would change, %d pending reboot, %d failed, %d not run (%d change(s))\n",
		r.Mode, s.OK, s.Changed, s.WouldChange, s.PendingReboot, s.Failed, s.NotRun, s.Changes)
	var failed []string
	for _, st := range r.Steps {
		if st.Status == StatusFailed {
			failed = append(failed, strconv.Quote(st.Name))
		}
	}
	switch len(failed) {
	case 0:
	case 1:
		fmt.Fprintf(w, "FAILED at step %s\n", failed[0])
	default:
		fmt.Fprintf(w, "FAILED at steps %s\n", strings.Join(failed, ", "))
	}
	return nil
}

// writeTable prints one line per step: name, status, time, detail.
func (r *Report) writeTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "STEP\tSTATUS\tTIME\tDETAIL\n")
	for _, st := range r.Steps {
		detail := ""
		switch {
		case st.Status == StatusFailed:
			detail = "see below"
		case len(st.Changes) > 0:
			detail = fmt.Sprintf("%d change(s)", len(st.Changes))
		case st.Pending != "":
			detail = st.Pending
		}
		dur := "-"
		if st.Status != StatusNotRun {
			dur = st.Duration.Round(time.Millisecond).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", st.Name, st.Status, dur, detail)
	}
	return tw.Flush()
}

// writeDetail prints a step's changes, notes, pending reset, result and
// error with its cause and fix; nothing for a step with none of them.
func (st *StepResult) writeDetail(w io.Writer) error {
	if len(st.Changes) == 0 && len(st.Notes) == 0 && st.Err == nil && st.Error == "" && st.Pending == "" && st.Result == nil {
		return nil
	}
	fmt.Fprintf(w, "\n%s (%s):\n", st.Name, st.Status)
	verb := "  + " // would change (plan), or was to change when the check or apply failed
	if st.Status == StatusChanged || st.Status == StatusPendingReboot || st.Phase == PhaseVerify {
		verb = "  ✓ " // applied (a verify failure comes after a successful Apply)
	}
	for _, c := range st.Changes {
		fmt.Fprintf(w, "%s%s\n", verb, c)
	}
	for _, n := range st.Notes {
		fmt.Fprintf(w, "  · %s\n", n)
	}
	if st.Pending != "" {
		fmt.Fprintf(w, "  ! pending: %s\n", st.Pending)
		if len(st.Resets) > 0 {
			fmt.Fprintf(w, "  ! reset needed: %s\n", ResetActions(st.Resets))
		}
	}
	if err := writeResult(w, st.Result); err != nil {
		return err
	}
	if st.Error == "" {
		return nil
	}
	msg := st.Error
	// cause and fix go on their own lines, not inline too
	if st.Fix != "" {
		msg = strings.Replace(msg, "; fix: "+st.Fix, "", 1)
	}
	if st.Cause != "" {
		msg = strings.Replace(msg, "; likely cause: "+st.Cause, "", 1)
	}
	fmt.Fprintf(w, "  ✗ %s\n", msg)
	if st.Cause != "" {
		fmt.Fprintf(w, "    cause: %s\n", st.Cause)
	}
	if st.Fix != "" {
		fmt.Fprintf(w, "    fix:   %s\n", st.Fix)
	}
	return nil
}

// writeResult prints a measuring step's result (the check's), indented.
func writeResult(w io.Writer, res any) error {
	if tw, ok := res.(interface{ WriteText(io.Writer) error }); ok {
		return tw.WriteText(&indenter{w: w, prefix: "  | "})
	}
	return nil
}

// indenter prefixes every line written through it.
type indenter struct {
	w      io.Writer
	prefix string
	mid    bool // inside a line
}

func (in *indenter) Write(p []byte) (int, error) {
	var b strings.Builder
	for _, c := range string(p) {
		if !in.mid {
			b.WriteString(in.prefix)
			in.mid = true
		}
		b.WriteRune(c)
		if c == '\n' {
			in.mid = false
		}
	}
	if _, err := io.WriteString(in.w, b.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}
