package provision

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"rig/internal/testutil"
)

const nobody = 65534 // plays the unprivileged attacker

// The privileged lock tests need root: the attacks are replayed with files
// chown'ed to uid 65534, and the lock's owner check is against root.

// stickyDir is a world-writable sticky directory owned by root, like /run/lock.
func stickyDir(t *testing.T) string {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	return dir
}

// victim is a root file the attacker wants root to overwrite.
func victim(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(p, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func victimUntouched(t *testing.T, p string) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "precious\n" {
		t.Fatalf("victim %s now %q (%v)", p, b, err)
	}
}

// acquireFast runs AcquireLock with a long timeout and fails the test unless it
// is refused at once as untrusted, with every want in the message.
func acquireFast(t *testing.T, path string, want ...string) error {
	t.Helper()
	t0 := time.Now()
	l, err := AcquireLock(context.Background(), path, 60*time.Second)
	if err == nil {
		l.Release()
		t.Fatalf("AcquireLock(%s) took an untrusted lock", path)
	}
	if d := time.Since(t0); d > 2*time.Second {
		t.Fatalf("refusal took %s (waited on an untrusted lock)", d)
	}
	if !errors.Is(err, ErrLockUntrusted) {
		t.Fatalf("error does not wrap ErrLockUntrusted: %v", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q: %v", w, err)
		}
	}
	return err
}

// TestLockSymlinkAttack: in a sticky world-writable directory an attacker
// points rig.lock at a root file; rig must not truncate or write through it.
func TestPrivilegedLockSymlinkAttack(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir, v := stickyDir(t), victim(t)
	lock := filepath.Join(dir, "rig.lock")
	if err := os.Symlink(v, lock); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(lock, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	acquireFast(t, lock, "lock "+lock+": untrusted lock file: it is a symbolic link to "+v, "fix: remove it (rm "+lock+") and run again")
	victimUntouched(t, v)
	if fi, err := os.Lstat(lock); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the symlink was replaced: %v %v", fi, err)
	}
}

// TestLockHardlinkAttack: rig.lock is a hard link to a root file (owner
// root, so only the link count gives it away).
func TestPrivilegedLockHardlinkAttack(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := stickyDir(t)
	v := filepath.Join(dir, "victim") // same filesystem as the link
	if err := os.WriteFile(v, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(dir, "rig.lock")
	if err := os.Link(v, lock); err != nil {
		t.Fatal(err)
	}
	acquireFast(t, lock, "has 2 hard links", "rm "+lock)
	victimUntouched(t, v)
}

// TestLockForeignOwnerRefusedAtOnce: an unprivileged user plants a regular
// rig.lock with a fake pid and holds a flock on it, to block `rig up`. rig
// refuses at once, naming the owner and the fix, instead of waiting 60 s.
func TestPrivilegedLockForeignOwnerRefusedAtOnce(t *testing.T) {
	testutil.RequirePrivileged(t)
	dir := stickyDir(t)
	lock := filepath.Join(dir, "rig.lock")
	if err := os.WriteFile(lock, []byte("1\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(lock, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	// the attacker's flock, on its own open file description
	held, err := os.Open(lock)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := unix.Flock(int(held.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	err = acquireFast(t, lock, "it is owned by uid 65534 (nobody), not by rig's user, uid 0 (root)", "fix: remove it (rm "+lock+") and run again")
	if b, _ := os.ReadFile(lock); string(b) != "1\n" {
		t.Fatalf("rig wrote the foreign lock: %q", b)
	}
	if strings.Contains(err.Error(), "pid 1") {
		t.Fatal("message trusts the planted pid")
	}
}

// TestLockDirectory: the default lock directory is created root-only; a
// directory another user owns, or others may write without the sticky bit,
// is refused.
func TestPrivilegedLockDirectory(t *testing.T) {
	testutil.RequirePrivileged(t)
	base := t.TempDir()
	fresh := filepath.Join(base, "run", "rig")
	l, err := AcquireLock(context.Background(), filepath.Join(fresh, "rig.lock"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("created lock dir: %v %v", fi, err)
	}
	fi, err := os.Stat(filepath.Join(fresh, "rig.lock"))
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("lock file: %v %v", fi, err)
	}
	if b, _ := os.ReadFile(filepath.Join(fresh, "rig.lock")); strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Fatalf("lock file holds %q, want our pid", b)
	}

	foreign := filepath.Join(base, "foreign")
	os.Mkdir(foreign, 0o700)
	if err := os.Chown(foreign, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	acquireFast(t, filepath.Join(foreign, "rig.lock"), "lock directory "+foreign+": untrusted lock file: owned by uid 65534 (nobody), not root")

	open := filepath.Join(base, "open")
	os.Mkdir(open, 0o700)
	os.Chmod(open, 0o777)
	acquireFast(t, filepath.Join(open, "rig.lock"), "writable by group or others (mode 0777) without the sticky bit")
}
