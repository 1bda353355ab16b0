package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

const stuckHelperEnv = "RIG_TEST_STUCK_HELPER"

// TestExitIfStuckHelper is not a test: run by TestExitIfStuck as a child
// process that never returns from its command, as a dataplane blocked in a
// syscall would not.
func TestExitIfStuckHelper(t *testing.T) {
	if os.Getenv(stuckHelperEnv) == "" {
		t.Skip("helper process for TestExitIfStuck")
	}
	go exitIfStuck(stopSignals(), 300*time.Millisecond)
	os.Stdout.WriteString("ready\n")
	select {} // stuck: ignores the context a signal cancels
}

func TestExitIfStuck(t *testing.T) {
	for _, c := range []struct {
		name    string
		signals []syscall.Signal
		want    string
	}{
		{"one signal, grace elapses", []syscall.Signal{syscall.SIGTERM}, "still running 300ms after terminated"},
		{"second signal", []syscall.Signal{syscall.SIGINT, syscall.SIGINT}, "second signal (interrupt)"},
		// a dying parent's PR_SET_PDEATHSIG, once per thread: one stop request
		{"SIGTERM burst", []syscall.Signal{syscall.SIGTERM, syscall.SIGTERM, syscall.SIGTERM}, "still running 300ms after terminated"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestExitIfStuckHelper$")
			cmd.Env = append(os.Environ(), stuckHelperEnv+"=1")
			var errOut bytes.Buffer
			cmd.Stderr = &errOut
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 6)
			if _, err := out.Read(buf); err != nil || string(buf) != "ready\n" {
				cmd.Process.Kill()
				t.Fatalf("helper did not start: %q %v", buf, err)
			}
			for _, s := range c.signals {
				cmd.Process.Signal(s)
				time.Sleep(20 * time.Millisecond)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				t.Fatal("a stuck rig did not end itself 20 s after the signal")
			}
			var xe *exec.ExitError
			if !errors.As(err, &xe) || xe.ExitCode() != exitInterrupted {
				t.Fatalf("exit: %v, want %d; stderr:\n%s", err, exitInterrupted, errOut.String())
			}
			if !strings.Contains(errOut.String(), c.want) || !strings.Contains(errOut.String(), "rig hugepages clean") {
				t.Fatalf("stderr lacks %q and the cleanup hint:\n%s", c.want, errOut.String())
			}
		})
	}
}
