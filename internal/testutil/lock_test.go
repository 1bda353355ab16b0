package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

const lockChildEnv = "RIG_TESTUTIL_LOCK_CHILD"

// TestHostLockChildHelper is the child's part of TestHostLockChildren.
func TestHostLockChildHelper(t *testing.T) {
	name := os.Getenv(lockChildEnv)
	if name == "" {
		t.Skip("helper process for TestHostLockChildren")
	}
	HostLock(t, name, 300*time.Millisecond)
	fmt.Println("CHILD-LOCKED")
}

// HostLock passes through for a second lock in the same process and for
// a child the holder runs; a process the holder does not run for waits
// and fails naming the holder.
func TestHostLockChildren(t *testing.T) {
	name := fmt.Sprintf("rig-testutil-%d", os.Getpid())
	t.Cleanup(func() { os.Remove(os.TempDir() + "/" + name + ".lock") })
	HostLock(t, name, time.Second)
	HostLock(t, name, time.Second) // the same process: through at once
	child := func(env []string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHostLockChildHelper$", "-test.v")
		cmd.Env = append(env, lockChildEnv+"="+name)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := child(os.Environ()); err != nil || !strings.Contains(out, "CHILD-LOCKED") {
		t.Errorf("the holder's child: %v\n%s", err, out)
	}
	var other []string // not told who holds it: as another test binary
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "RIG_TESTLOCK_") {
			other = append(other, e)
		}
	}
	out, err := child(other)
	if err == nil || strings.Contains(out, "CHILD-LOCKED") || !strings.Contains(out, fmt.Sprintf("held by pid %d", os.Getpid())) {
		t.Errorf("a process the holder does not run for: %v\n%s", err, out)
	}
}
