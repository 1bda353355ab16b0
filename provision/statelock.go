package provision

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"rig/internal/host"
)

// stateLockWait bounds how long an update of the state file waits for
// another rig's (each holds it for one read-modify-write, milliseconds).
const stateLockWait = 30 * time.Second

// lockState takes the state file's own lock, PATH.lock: two rig runs on
// one state file hold different host locks when their --lock-file
// differs, and each would save what it read, the later dropping the
// other's record. The lock file is opened as the host lock is (never
// through a symbolic link, created 0600 by rig, one link, rig's user's,
// in a directory others cannot change) and held with flock until release:
// how is unix.LOCK_EX for an update, unix.LOCK_SH for a read (a read
// never sees the file between two writers' renames; it creates nothing).
func lockState(sf StateStore, how int) (release func(), err error) {
	p, dir := sf.Path+".lock", filepath.Dir(sf.Path)
	obj := "rig state lock " + p
	trust := host.Trust{Flags: unix.O_RDWR, Forbidden: 0o077, OneLink: true, CheckDir: true, EUID: os.Geteuid()}
	if how == unix.LOCK_EX {
		trust.Create = 0o600
		if err := os.MkdirAll(dir, 0o755); err != nil { // as SaveState makes it
			return nil, &Problem{Object: obj, Err: fmt.Errorf("%w; nothing was written", err), FixText: "give another place with --state-file FILE"}
		}
	}
	f, err := host.OpenTrusted(p, trust)
	var u *host.Untrusted
	switch {
	case how == unix.LOCK_SH && errors.Is(err, fs.ErrNotExist):
		return func() {}, nil // no update yet made it: a read creates nothing
	case errors.As(err, &u) && u.Path == dir:
		// the state file's directory: worded as the state file's own refusal
		return nil, untrustedStateFile("rig state "+sf.Path, sf.Path, dir, os.Geteuid(), u)
	case how == unix.LOCK_SH && (errors.Is(err, fs.ErrPermission) || errors.Is(err, unix.EROFS)):
		return func() {}, nil // a reader that may not create the lock reads without it
	case errors.As(err, &u):
		return nil, &Problem{Object: obj, Err: fmt.Errorf("%w: %v; nothing was written", ErrStateUntrusted, u),
			CauseText: "rig creates the state file's lock itself (a regular file, mode 0600, owned by the user rig runs as); this one could have been planted by another user",
			FixText:   "remove it (rm " + p + ") and run again"}
	case err != nil:
		return nil, &Problem{Object: obj, Err: fmt.Errorf("%w; nothing was written", err), FixText: "give another place with --state-file FILE"}
	}
	deadline := time.Now().Add(stateLockWait)
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			return nil, &Problem{Object: obj, Err: fmt.Errorf("flock: %w (waited up to %v); nothing was written", err, stateLockWait),
				FixText: "another rig is updating this state file: let it finish, then run again"}
		}
		time.Sleep(5 * time.Millisecond)
	}
}
