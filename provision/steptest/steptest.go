// Package steptest holds what the step packages' tests share (issue 28
// split them out of provision): running one step through the engine's
// runner, fixture host roots, recorded samples, and what a refusal must
// say.
package steptest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"rig/provision"
)

// RunStep applies one step through the runner and returns its result.
func RunStep(t *testing.T, s provision.Step) provision.StepResult {
	t.Helper()
	rep, err := (&provision.Runner{Steps: []provision.Step{s}}).Execute(context.Background(), provision.RunApply, provision.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	return rep.Steps[0]
}

// RunStepOnce runs one step through the runner in mode and returns its
// result.
func RunStepOnce(t *testing.T, s provision.Step, mode provision.RunMode) provision.StepResult {
	t.Helper()
	rep, err := (&provision.Runner{Steps: []provision.Step{s}}).Execute(context.Background(), mode, provision.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	return rep.Steps[0]
}

// CopyHostRoot copies a fixture host root (testdata/hosts/NAME, from a
// step package's directory) so a test may change it; symlinks stay
// symlinks.
func CopyHostRoot(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command("cp", "-a", "../../testdata/hosts/"+name, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp fixture: %v: %s", err, out)
	}
	return dst
}

// RefusedPlan checks a plan whose ops are all refused, naming what, and
// that says so in its notes (what rig plan shows).
func RefusedPlan(t *testing.T, p provision.Plan, want string) {
	t.Helper()
	if len(p.Ops) == 0 {
		t.Fatal("no ops planned")
	}
	if notes := strings.Join(p.Notes, "\n"); !strings.Contains(notes, "apply refuses") {
		t.Errorf("plan notes do not show the refusal: %q", p.Notes)
	}
	for _, op := range p.Ops {
		if op.Refused == nil || !strings.Contains(op.Refused.Error(), want) {
			t.Fatalf("op %v: refused %v, want %q", op.Changes, op.Refused, want)
		}
		if pr, ok := provision.AsProblem(op.Refused); !ok || pr.Cause() == "" || pr.Fix() == "" {
			t.Fatalf("refusal without cause/fix: %v", op.Refused)
		}
	}
}

// WantRefused checks that res failed at check naming the state file, each
// field and the fix, with the refusal wrapping ErrStateRecord.
func WantRefused(t *testing.T, res provision.StepResult, stateFile string, want ...string) {
	t.Helper()
	if res.Status != provision.StatusFailed || res.Phase != provision.PhaseCheck || !errors.Is(res.Err, provision.ErrStateRecord) {
		t.Fatalf("%s: status %s phase %s error %v, want a refused record", res.Name, res.Status, res.Phase, res.Err)
	}
	for _, w := range append([]string{"rig state " + stateFile + ": records rig could not have written", "nothing was written",
		"the state file was edited or damaged", "remove those entries (or the file " + stateFile + ") and restore those settings by hand"}, want...) {
		if !strings.Contains(res.Error, w) {
			t.Errorf("%s: error lacks %q:\n%s", res.Name, w, res.Error)
		}
	}
}

// Sample reads a recorded ovsdb state of provision/testdata (the step
// packages' shared test data, a directory above each of them).
func Sample(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
