package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// lockState takes StateRoot/.lock: one lab up or down at a time.
func lockState() (func(), error) {
	if err := os.MkdirAll(StateRoot, 0o700); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(StateRoot, ".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lab: lock %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil
}

// HugepagesDir is made, when missing, as a mount point for the lab's own
// hugetlbfs (rig's hugepages step mounts there inside the lab): /dev is
// the host's devtmpfs, so a mkdir inside the lab would stay on the host.
const HugepagesDir = "/dev/hugepages"

func createdPath() string { return filepath.Join(StateRoot, ".created") }

// ensureMountpoints makes the PrivateDirs that do not exist on the host
// (the lab mounts its tmpfs on them) and notes them in StateRoot/.created;
// the last lab down removes them again.
func ensureMountpoints() error {
	var made []string
	for _, d := range append(PrivateDirs(), HugepagesDir) {
		if _, err := os.Lstat(d); err == nil {
			continue
		}
		if err := os.Mkdir(d, 0o755); err != nil {
			return fmt.Errorf("lab: mount point %s: %w", d, err)
		}
		made = append(made, d)
	}
	if len(made) == 0 {
		return nil
	}
	f, err := os.OpenFile(createdPath(), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString(strings.Join(made, "\n") + "\n")
	return err
}

// cleanupShared, when no lab is left, removes the mount points Up made
// (only if still empty: rmdir) and StateRoot itself. With a lab left it
// does nothing: removing a directory that is a mount point in a lab's
// namespace would unmount it there.
func cleanupShared() error {
	names, err := Names()
	if err != nil || len(names) > 0 {
		return err
	}
	var errs []error
	if b, err := os.ReadFile(createdPath()); err == nil {
		for _, d := range strings.Fields(string(b)) {
			// busy or not empty: someone on the host uses it now; leave it
			if err := os.Remove(d); err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, unix.EBUSY) && !errors.Is(err, unix.ENOTEMPTY) {
				errs = append(errs, fmt.Errorf("lab: remove mount point %s made by rig lab up: %w", d, err))
			}
		}
	}
	_ = os.Remove(createdPath())
	_ = os.Remove(filepath.Join(StateRoot, ".lock"))
	_ = os.Remove(StateRoot)
	return errors.Join(errs...)
}
