package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// RunWithPrivateStateFile runs a package's tests with rig's record of what
// it changed (rig down's state file, $RIG_STATE_FILE) in a temporary
// file, removed afterwards: tests that run steps on this machine must not
// write the host's /var/lib/rig/state.json. Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(testutil.RunWithPrivateStateFile(m)) }
//
// A rig run under --root writes its state file under that root: a test
// that did so on one of the checked-in fixture hosts (testdata/hosts)
// instead of a copy fails the package here, and the file is removed (a
// fixture tree that changes under other packages' tests makes them flaky).
func RunWithPrivateStateFile(m *testing.M) int {
	dir, err := os.MkdirTemp("", "rig-state-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	os.Setenv("RIG_STATE_FILE", dir+"/state.json")
	code := m.Run()
	if leaked := fixtureStateFiles(dir); len(leaked) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: a test wrote rig's state file into a checked-in fixture host (run rig up/down under --root on a copy of the fixture): %v\n", leaked)
		for _, p := range leaked {
			os.RemoveAll(p)
			os.Remove(filepath.Dir(p)) // the fixture's tmp, when rig made it
		}
		return 1
	}
	return code
}

// fixtureStateFiles lists testdata/hosts/*/<dir> of the module the test
// runs in.
func fixtureStateFiles(dir string) []string {
	wd, err := os.Getwd()
	if err != nil {
		return nil
	}
	for d := wd; d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			out, _ := filepath.Glob(filepath.Join(d, "testdata", "hosts", "*", dir))
			return out
		}
	}
	return nil
}
