package pcidev

import (
	"os"
	"testing"

	"rig/internal/testutil"
)

// TestMain keeps rig's records of what it changed out of the host's
// /var/lib/rig (see testutil.RunWithPrivateStateFile).
func TestMain(m *testing.M) { os.Exit(testutil.RunWithPrivateStateFile(m)) }

func intp(n int) *int { return &n }
