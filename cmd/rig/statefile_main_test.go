package main

import (
	"os"
	"testing"
)

// TestMain keeps rig's record of what it changed (rig down's state file)
// in a temporary file: tests that run steps on this machine must not
// write the host's /var/lib/rig/state.json.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "rig-state-")
	if err != nil {
		panic(err)
	}
	os.Setenv("RIG_STATE_FILE", dir+"/state.json")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
