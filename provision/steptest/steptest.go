// Package steptest holds what the step packages' tests share (issue 28
// split them out of provision): running one step through the engine's
// runner, fixture host roots, recorded samples, and what a refusal must
// say.
package steptest

import (
	"context"
	"errors"
	"os"
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
