package lab

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"rig/lab/grub"
)

// The lab's OS keeps its boot configuration and running command line to
// itself: rig's kernel step inside a lab writes a GRUB drop-in, runs
// update-grub and writes /etc/sysctl.d, and none of it may reach the host.
// Up copies the host's files into the lab's state dir, and the lab's init
// puts them in place in the lab's mount namespace:
//
//	/run/rig-lab/N/os/cmdline            bound on /proc/cmdline (the host's, at up)
//	/run/rig-lab/N/os/etc/default/grub   the lab's /etc/default/grub (a copy of the host's, if any)
//	/run/rig-lab/N/os/etc/default/grub.d the lab's /etc/default/grub.d (copies of the host's)
//	/run/rig-lab/N/os/boot/grub          the lab's /boot/grub (grub.cfg made by the lab's update-grub)
//	/run/rig-lab/N/os/etc/sysctl.d       the lab's /etc/sysctl.d (copies of the host's)
//
// /etc/default itself becomes a tmpfs in the lab showing the host's other
// files (bound, live), so a file created there stays in the lab too.
// update-grub in the lab is the rig binary (lab/bin/update-grub, see
// UpdateGrub). Reboot (and PowerCycle) boot the lab's OS: /proc/cmdline
// becomes what grub.cfg's default entry passes the kernel.

// OSDir holds the lab's private OS files (see above).
func (l Lab) OSDir() string { return l.path("os") }

// osPath is a lab path's file on the host side: the private ones live in
// OSDir, the rest are the host's own.
func (l Lab) osPath(p string) string {
	p = filepath.Clean(p)
	for _, d := range []string{grub.Defaults, grub.DropIns, filepath.Dir(grub.Cfg), sysctlDir} {
		if p == d || strings.HasPrefix(p, d+"/") {
			return filepath.Join(l.OSDir(), p)
		}
	}
	return p
}

const sysctlDir = "/etc/sysctl.d"

// BootPaths are the lab's private OS paths (for people and tests).
func BootPaths() []string {
	return []string{"/proc/cmdline", grub.Defaults, grub.DropIns, filepath.Dir(grub.Cfg), sysctlDir}
}

// prepareOS makes OSDir from the host's files (Up, before the init). A
// host configuration the lab's update-grub cannot read leaves the lab
// without grub.cfg: `rig lab reboot` then says so, and update-grub inside
// the lab names the line.
func (l Lab) prepareOS() error {
	osd := l.OSDir()
	for _, d := range []string{grub.DropIns, filepath.Dir(grub.Cfg), sysctlDir} {
		if err := os.MkdirAll(filepath.Join(osd, d), 0o755); err != nil {
			return fmt.Errorf("lab %s: %w", l.Name, err)
		}
	}
	if err := copyEntry(grub.Defaults, filepath.Join(osd, grub.Defaults)); err != nil {
		return fmt.Errorf("lab %s: %w", l.Name, err)
	}
	for _, d := range []string{grub.DropIns, sysctlDir} {
		ents, err := os.ReadDir(d)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("lab %s: %w", l.Name, err)
		}
		for _, e := range ents {
			if err := copyEntry(filepath.Join(d, e.Name()), filepath.Join(osd, d, e.Name())); err != nil {
				return fmt.Errorf("lab %s: %w", l.Name, err)
			}
		}
	}
	cl, err := os.ReadFile("/proc/cmdline")
	if err != nil {
		return fmt.Errorf("lab %s: %w", l.Name, err)
	}
	if err := os.WriteFile(filepath.Join(osd, "cmdline"), cl, 0o444); err != nil {
		return fmt.Errorf("lab %s: %w", l.Name, err)
	}
	if k, err := grub.RunningKernel("/"); err == nil {
		_ = grub.Update(osd, k, io.Discard)
	}
	return nil
}

// copyEntry copies a regular file (content and mode) or a symlink (as a
// symlink); anything else, or nothing at src, is left out.
func copyEntry(src, dst string) error {
	fi, err := os.Lstat(src)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		t, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(t, dst)
	case fi.Mode().IsRegular():
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, fi.Mode().Perm())
	}
	return nil
}

// isolateBoot puts the lab's OS files in place (the lab's init, in its
// mount namespace, after the stash is mounted).
func (l Lab) isolateBoot() error {
	if err := unix.Mount(filepath.Join(l.OSDir(), "cmdline"), "/proc/cmdline", "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("lab %s: bind the lab's command line on /proc/cmdline: %w", l.Name, err)
	}
	if err := l.overlay(filepath.Dir(grub.Defaults), []string{filepath.Base(grub.Defaults), filepath.Base(grub.DropIns)}); err != nil {
		return err
	}
	for _, d := range []string{filepath.Dir(grub.Cfg), sysctlDir} {
		if err := l.privateDir(d); err != nil {
			return err
		}
	}
	return nil
}

// privateDir binds the lab's copy of directory d over it; where the host
// has no d, its parent becomes an overlay (so the host gets no new
// directory).
func (l Lab) privateDir(d string) error {
	if st, err := os.Stat(d); err == nil && st.IsDir() {
		if err := bindDir(l.osPath(d), d); err != nil {
			return fmt.Errorf("lab %s: %w", l.Name, err)
		}
		return nil
	}
	return l.overlay(filepath.Dir(d), []string{filepath.Base(d)})
}

// overlay puts a tmpfs on dir showing the host's entries of dir (bound
// from a pristine bind in the stash, so they stay live) except private,
// which come from OSDir (those OSDir lacks are absent).
func (l Lab) overlay(dir string, private []string) error {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("lab %s: the host has no directory %s (%v): the lab cannot keep %v there to itself", l.Name, dir, err, private)
	}
	pristine := filepath.Join(l.stash(), "os"+strings.ReplaceAll(dir, "/", "-"))
	if err := os.MkdirAll(pristine, 0o700); err != nil {
		return err
	}
	if err := unix.Mount(dir, pristine, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("lab %s: bind %s on %s: %w", l.Name, dir, pristine, err)
	}
	ents, err := os.ReadDir(pristine)
	if err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
		return fmt.Errorf("lab %s: tmpfs on %s: %w", l.Name, dir, err)
	}
	skip := map[string]bool{}
	for _, p := range private {
		skip[p] = true
	}
	for _, e := range ents {
		if !skip[e.Name()] {
			if err := place(filepath.Join(pristine, e.Name()), filepath.Join(dir, e.Name()), e); err != nil {
				return fmt.Errorf("lab %s: %w", l.Name, err)
			}
		}
	}
	for _, p := range private {
		src := filepath.Join(l.OSDir(), dir, p)
		fi, err := os.Lstat(src)
		if err != nil {
			continue
		}
		if err := place(src, filepath.Join(dir, p), fs.FileInfoToDirEntry(fi)); err != nil {
			return fmt.Errorf("lab %s: %w", l.Name, err)
		}
	}
	return nil
}
