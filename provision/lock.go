package provision

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultLockPath is where `rig up` takes its host-wide lock.
const DefaultLockPath = "/run/lock/rig.lock"

// Lock is an exclusive flock held for the duration of an apply.
type Lock struct {
	f    *os.File
	path string
}

// ErrLockTimeout is wrapped by AcquireLock when another holder outlasts the wait.
var ErrLockTimeout = errors.New("lock held by another rig")

// AcquireLock takes an exclusive lock on path, polling until timeout.
// The holder's pid is written into the file so a waiter can name it.
func AcquireLock(ctx context.Context, path string, timeout time.Duration) (*Lock, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	deadline := time.Now().Add(timeout)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			holder := readHolder(path)
			f.Close()
			return nil, fmt.Errorf("lock %s: %w (pid %s) for %s; wait for it to finish or raise --lock-timeout: %w",
				path, ErrLockTimeout, holder, timeout, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f, path: path}, nil
}

func readHolder(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(strings.TrimSpace(string(b))) == 0 {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}

// Release drops the lock.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing releases the flock
	l.f = nil
	return err
}
