// Package steptest holds what the step packages' tests share (issue 28
// split them out of provision): running one step through the engine's
// runner, fixture host roots, and the expectations on a refusal.
package steptest

import (
	"os"
	"path/filepath"
	"testing"
)

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
