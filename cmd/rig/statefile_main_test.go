package main

import (
	"os"
	"testing"

	"rig/internal/testutil"
)

// TestMain keeps rig's records of what it changed out of the host's
// /var/lib/rig (see testutil.RunWithPrivateStateFile), and removes the rig
// the tests built (buildRig) at the end.
func TestMain(m *testing.M) {
	code := testutil.RunWithPrivateStateFile(m)
	rigBinary.remove()
	rigNoCgoBinary.remove()
	os.Exit(code)
}
