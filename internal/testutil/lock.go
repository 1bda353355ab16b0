package testutil

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// WaitedFormat is the line a test logs when HostLock waited for another
// process's hold: the seconds and the lock's name. make test's summary
// (internal/cmd/testsummary) ranks tests by their time without it.
const WaitedFormat = "hostlock: waited %.1fs for %s"

// HostLock gives the test a host-wide lock named name until it ends: an
// flock on a file in the temp dir that holds the holder's pid. Test
// binaries run in parallel (make test: go test -p 2); what the lock
// guards is shared by all of them. A second HostLock of the same name in
// the same process while the first is held (a subtest, a helper that
// locks again) passes through, and so does one in a child process the
// holder runs (a test binary re-executed for a child's part of a test):
// the holder names itself in the environment its children inherit, and
// waits for them. It waits up to wait for another process's hold, then
// fails the test naming the holder.
func HostLock(t testing.TB, name string, wait time.Duration) {
	t.Helper()
	release, err := hostLock(name, wait, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if release != nil {
		t.Cleanup(release)
	}
}

// hostLock is HostLock without a test: release is nil when this process
// (or the parent it runs for) holds the lock already.
func hostLock(name string, wait time.Duration, logf func(string, ...any)) (release func(), err error) {
	p := filepath.Join(os.TempDir(), name+".lock")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("testutil: lock %s: %w", p, err)
	}
	env := "RIG_TESTLOCK_" + strings.NewReplacer("-", "_", ".", "_").Replace(name)
	start := time.Now()
	deadline := start.Add(wait)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		holder := lockHolder(f)
		mine := holder == os.Getpid() || (holder == os.Getppid() && os.Getenv(env) == strconv.Itoa(holder))
		if !errors.Is(err, unix.EWOULDBLOCK) || mine || time.Now().After(deadline) {
			f.Close()
			if mine {
				return nil, nil // this process (or the parent it runs for) holds it, until its first HostLock's test ends
			}
			return nil, fmt.Errorf("testutil: lock %s (held by pid %d) not free after %v: %v; another test binary holds it, wait for it or end it", p, holder, wait, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if waited := time.Since(start); waited >= 100*time.Millisecond {
		logf(WaitedFormat, waited.Seconds(), name) // internal/cmd/testsummary reads it
	}
	_ = os.Setenv(env, strconv.Itoa(os.Getpid()))
	return func() {
		_ = os.Unsetenv(env)
		_ = f.Truncate(0)
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	}, nil
}

// lockHolder reads the pid the holder wrote (0 when none or unreadable).
func lockHolder(f *os.File) int {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	return pid
}
