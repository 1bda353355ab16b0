package hugetest

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// lockWait bounds how long a test waits for another test binary's hold on
// the host's hugepage pool.
const lockWait = 5 * time.Minute

// Lock gives the test the host's 2 MiB hugepage pool to itself until it
// ends: test binaries run in parallel (go test -p) and one's restore of
// nr_hugepages would take the pages another just reserved. It is an flock
// on a file in the temp dir that holds the holder's pid; a second Lock in
// the same process while the first is held (a test that reserves twice)
// passes through. A test holding it must not wait on a child process that
// calls Lock or Reserve.
func Lock(t testing.TB) {
	t.Helper()
	p := filepath.Join(os.TempDir(), "rig-hugetest.lock")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatalf("hugetest: lock %s: %v", p, err)
	}
	deadline := time.Now().Add(lockWait)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		holder := lockHolder(f)
		if !errors.Is(err, unix.EWOULDBLOCK) || holder == os.Getpid() || time.Now().After(deadline) {
			f.Close()
			if holder == os.Getpid() {
				return // this process holds it already, until its first Lock's test ends
			}
			t.Fatalf("hugetest: lock %s (held by pid %d): %v; another test binary keeps the hugepage pool, wait for it or end it", p, holder, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	t.Cleanup(func() {
		_ = f.Truncate(0)
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		f.Close()
	})
}

// lockHolder reads the pid the holder wrote (0 when none or unreadable).
func lockHolder(f *os.File) int {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	return pid
}
