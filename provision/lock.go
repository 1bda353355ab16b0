package provision

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"rig/internal/host"
)

// DefaultLockPath is where `rig up` takes its host-wide lock. Its directory
// is created root-only (0700): a lock in a world-writable directory such as
// /run/lock can be pre-planted by any user (a symlink or a fake lock).
const DefaultLockPath = "/run/rig/rig.lock"

// Lock is an exclusive flock held for the duration of an apply.
type Lock struct {
	f    *os.File
	path string
}

// ErrLockTimeout is wrapped by AcquireLock when another holder outlasts the wait.
var ErrLockTimeout = errors.New("lock held by another rig")

// ErrLockUntrusted is wrapped by AcquireLock when the lock file or its
// directory could have been planted or replaced by another user.
var ErrLockUntrusted = errors.New("untrusted lock file")

// AcquireLock takes an exclusive lock on path, polling until timeout.
//
// The lock file is never followed through a symlink and is written (the
// holder's pid, for a waiter's message) only after the open file is proven
// to be a regular file with one link, owned by rig's effective user, in a
// directory only that user (or root) can change. Anything else is refused
// at once with what was found and how to fix it.
func AcquireLock(ctx context.Context, path string, timeout time.Duration) (*Lock, error) {
	euid := os.Geteuid()
	if err := prepareLockDir(filepath.Dir(path), euid); err != nil {
		return nil, err
	}
	f, err := openLockFile(path, euid)
	if err != nil {
		return nil, err
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
			holder := readHolder(f)
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
	// f is the verified inode (checked on the open descriptor, not the path).
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f, path: path}, nil
}

// prepareLockDir creates dir (0700) when missing and refuses one that another
// user owns or that others may write without the sticky bit (they could
// replace the lock file under rig). A root-owned sticky directory (/run/lock,
// /tmp) is accepted: the checks on the file itself cover what its other
// users can plant there.
func prepareLockDir(dir string, euid int) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return &Problem{Object: "lock directory " + dir, Err: err,
			FixText: "create it (mkdir -m 0700 " + dir + ") or choose another --lock-file"}
	}
	err := host.CheckTrustedDir(dir, host.Trust{EUID: euid})
	var u *host.Untrusted
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &u):
		return &Problem{Object: "lock directory " + dir, Err: err}
	}
	switch u.Why {
	case host.WhyDirKind:
		return &Problem{Object: "lock directory " + dir, Err: fmt.Errorf("%w: it is %s, not a directory", ErrLockUntrusted, u.Kind),
			FixText: "choose another --lock-file"}
	case host.WhyDirOwner:
		return &Problem{Object: "lock directory " + dir,
			Err:       fmt.Errorf("%w: owned by %s, not root", ErrLockUntrusted, userName(u.UID)),
			CauseText: "another user made the directory, so it can replace the lock file in it",
			FixText:   "remove it (rm -r " + dir + ") so rig recreates it root-only, or choose a root-owned --lock-file directory"}
	}
	return &Problem{Object: "lock directory " + dir,
		Err:       fmt.Errorf("%w: writable by group or others (mode %#o) without the sticky bit", ErrLockUntrusted, u.Mode),
		CauseText: "any user who can write it can replace the lock file",
		FixText:   "chmod go-w " + dir + ", or use the default --lock-file " + DefaultLockPath}
}

// openLockFile opens path for the lock without following a symlink, creating
// it (exclusively, so it is rig's own) when missing, and verifies the open
// file: regular, owned by euid, exactly one link. It never writes.
func openLockFile(path string, euid int) (*os.File, error) {
	f, err := host.OpenTrusted(path, host.Trust{Flags: unix.O_RDWR, Create: 0o600, OneLink: true, EUID: euid})
	var u *host.Untrusted
	var pe *fs.PathError
	switch {
	case err == nil:
		return f, nil
	case !errors.As(err, &u):
		if errors.As(err, &pe) && pe.Op == "open" {
			err = pe.Err
		}
		return nil, &Problem{Object: "lock " + path, Err: err,
			FixText: "check the path, or remove it (rm " + path + ") if another user created it"}
	}
	switch u.Why {
	case host.WhySymlink:
		return nil, untrustedLock(path, "is a symbolic link"+linkTarget(path)+"; rig does not follow it")
	case host.WhyKind:
		return nil, untrustedLock(path, "is "+u.Kind+", not a regular file")
	case host.WhyOwner:
		return nil, untrustedLock(path, fmt.Sprintf("is owned by %s, not by rig's user, %s", userName(u.UID), userName(uint32(euid))))
	}
	return nil, untrustedLock(path, fmt.Sprintf("has %d hard links; it may be a link to another file", u.N))
}

func untrustedLock(path, what string) error {
	return &Problem{Object: "lock " + path,
		Err:       fmt.Errorf("%w: it %s", ErrLockUntrusted, what),
		CauseText: "another user may have planted it; rig neither writes it nor waits for it",
		FixText:   "remove it (rm " + path + ") and run again"}
}

func linkTarget(path string) string {
	if t, err := os.Readlink(path); err == nil {
		return " to " + t
	}
	return ""
}

// userName names a uid for a message: "uid 65534 (nobody)".
func userName(uid uint32) string {
	s := "uid " + strconv.FormatUint(uint64(uid), 10)
	if u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10)); err == nil && u.Username != "" {
		s += " (" + u.Username + ")"
	}
	return s
}

// readHolder reads the holder's pid from the locked file, for the message
// only: its text is never used for anything else.
func readHolder(f *os.File) string {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	s := strings.TrimSpace(string(b[:n]))
	if _, err := strconv.Atoi(s); err != nil {
		return "unknown"
	}
	return s
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
