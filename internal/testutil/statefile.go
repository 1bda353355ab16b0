package testutil

import (
	"os"
	"testing"
)

// RunWithPrivateStateFile runs a package's tests with rig's record of what
// it changed (rig down's state file, $RIG_STATE_FILE) in a temporary
// file, removed afterwards: tests that run steps on this machine must not
// write the host's /var/lib/rig/state.json. Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(testutil.RunWithPrivateStateFile(m)) }
func RunWithPrivateStateFile(m *testing.M) int {
	dir, err := os.MkdirTemp("", "rig-state-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	os.Setenv("RIG_STATE_FILE", dir+"/state.json")
	return m.Run()
}
