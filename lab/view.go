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

	"rig/internal/labinfo"
	"rig/lab/card"
)

// PrivateDirs get a fresh tmpfs in the lab's mount namespace: the lab's
// own /run/rig (lab.json, rig's host lock), OvS's run and config dirs
// (so the lab's OvS is the one at the default paths), and DPDK's run dir.
func PrivateDirs() []string {
	return []string{"/run/rig", "/run/openvswitch", "/run/dpdk", "/etc/openvswitch"}
}

// InitView builds the lab's mount namespace. It runs as the lab's init
// (`rig lab __init NAME`), started by Up in the lab's network namespace and
// a new mount namespace: it makes every mount a slave (host mounts still
// propagate in, none leaks out), mounts a sysfs of the lab's network
// namespace, merges the card's tree into it, overlays the card's netdevs,
// mounts the private dirs, drops the hugetlbfs mounts inherited from the
// host, puts the lab's OS boot files in place (isolateBoot: /proc/cmdline,
// /etc/default/grub{,.d}, /boot/grub, /etc/sysctl.d), writes /run/rig/lab.json, prints "ready" and waits for stdin to
// close (Up binds the namespace meanwhile). With machine "host" (`rig lab
// __init NAME host`, in the host's network namespace) it builds the x86
// host's view instead (initHostView).
func InitView(name, machine string, stdin io.Reader, stdout io.Writer) error {
	l, c, err := recorded(name)
	if err != nil {
		return err
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("make / a slave: %w", err)
	}
	switch machine {
	case machineArm:
		err = l.initArmView(c)
	case machineHost:
		err = l.initHostView(c)
	default:
		err = fmt.Errorf("lab %s: no machine %q with a view of its own (arm, host)", name, machine)
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, "ready")
	_, _ = io.Copy(io.Discard, stdin)
	return nil
}

func (l Lab) initArmView(c card.Card) error {
	rec, err := l.readRecord()
	if err != nil {
		return err
	}
	if err := mountSysfs(l.stash()); err != nil {
		return err
	}
	if err := mergeDir(filepath.Join(l.CardRoot(), "sys"), "/sys", filepath.Join(l.stash(), "sys")); err != nil {
		return fmt.Errorf("card sysfs view: %w", err)
	}
	for _, n := range c.Netdevs {
		if err := l.overlayNetdev(c, n); err != nil {
			return err
		}
	}
	for _, d := range PrivateDirs() {
		if err := unix.Mount("tmpfs", d, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
			return fmt.Errorf("tmpfs on %s: %w", d, err)
		}
	}
	if err := dropHugetlbfs(); err != nil {
		return err
	}
	if err := l.isolateBoot(); err != nil {
		return err
	}
	return labinfo.Write("/run/rig", l.info(c.Kind, rec))
}

// HostPrivateDirs get a fresh tmpfs in the host's view: its own /run/rig
// (lab.json, rig's lock and state) and OvS dirs, so that rig on the lab's
// host never reaches the real host's. Its hugetlbfs mounts and
// /run/dpdk are the real host's (the host's hugepages are its own).
func HostPrivateDirs() []string {
	return []string{"/run/rig", "/run/openvswitch", "/etc/openvswitch"}
}

// initHostView builds the x86 host's view: a sysfs of the host's network
// namespace with the host's tree of the card merged in (the PFs, their
// RDMA devices, the RShim function), the host netdevs overlaid (the PF
// netdevs are the veths joined to pf0hpf/pf1hpf), the private dirs, and
// the host's /run/rig/lab.json.
func (l Lab) initHostView(arm card.Card) error {
	m, ok := card.MachinesOf(arm.Kind)
	if !ok {
		return fmt.Errorf("lab %s: a %s has no host", l.Name, arm.Kind)
	}
	h := m.Host.Linked()
	if err := mountSysfs(l.hostStash()); err != nil {
		return err
	}
	if err := mergeDir(filepath.Join(l.HostCardRoot(), "sys"), "/sys", filepath.Join(l.hostStash(), "sys")); err != nil {
		return fmt.Errorf("the host's sysfs view: %w", err)
	}
	for _, n := range h.Netdevs {
		if err := overlayNetdevAt(l.HostCardRoot(), l.hostStash(), h, n); err != nil {
			return err
		}
	}
	for _, d := range HostPrivateDirs() {
		if err := unix.Mount("tmpfs", d, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
			return fmt.Errorf("tmpfs on %s: %w", d, err)
		}
	}
	return labinfo.Write("/run/rig", l.hostInfo(h.Kind))
}

// remountSysfs replaces /sys with a sysfs of the calling thread's network
// namespace (what `ip netns exec` does).
func remountSysfs() error {
	if err := unix.Unmount("/sys", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("unmount /sys: %w", err)
	}
	if err := unix.Mount("sysfs", "/sys", "sysfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount sysfs: %w", err)
	}
	return nil
}

// mountSysfs replaces /sys with a sysfs of the machine's network namespace
// (remountSysfs) and mounts a second, pristine one in the view-only
// stash, from which the view's real entries are bound.
func mountSysfs(stash string) error {
	if err := remountSysfs(); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", stash, "tmpfs", 0, "mode=0700"); err != nil {
		return fmt.Errorf("tmpfs on %s: %w", stash, err)
	}
	p := filepath.Join(stash, "sys")
	if err := os.Mkdir(p, 0o755); err != nil {
		return err
	}
	if err := unix.Mount("sysfs", p, "sysfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount sysfs on %s: %w", p, err)
	}
	return nil
}

// mergeDir makes dst (showing real's content) show src's entries too. If
// every src entry is a directory real also has, it descends; otherwise it
// puts a tmpfs on dst, recreates real's entries there (directories and
// files bound from real, so they stay live; symlinks copied) and adds
// src's (bound from the card tree, so the host's edits show). A lab card
// tree has no class/net: /sys/class/net stays the live one.
func mergeDir(src, dst, real string) error {
	srcEnts, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	realEnts := map[string]fs.DirEntry{}
	if ents, err := os.ReadDir(real); err == nil {
		for _, e := range ents {
			realEnts[e.Name()] = e
		}
	}
	both := func(e fs.DirEntry) bool { r, ok := realEnts[e.Name()]; return ok && e.IsDir() && r.IsDir() }
	needTmpfs := false
	for _, e := range srcEnts {
		needTmpfs = needTmpfs || !both(e)
	}
	if needTmpfs {
		if err := unix.Mount("tmpfs", dst, "tmpfs", 0, "mode=0755"); err != nil {
			return fmt.Errorf("tmpfs on %s: %w", dst, err)
		}
		srcByName := map[string]fs.DirEntry{}
		for _, e := range srcEnts {
			srcByName[e.Name()] = e
		}
		for n, r := range realEnts {
			if s, inSrc := srcByName[n]; !inSrc || both(s) {
				if err := place(filepath.Join(real, n), filepath.Join(dst, n), r); err != nil {
					return err
				}
			}
		}
	}
	for _, e := range srcEnts {
		s, d := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		if both(e) {
			err = mergeDir(s, d, filepath.Join(real, e.Name()))
		} else {
			err = place(s, d, e)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// place recreates one entry at dst: a directory or regular file is bound
// from src (live), a symlink is copied.
func place(src, dst string, e fs.DirEntry) error {
	t := e.Type()
	if t&fs.ModeSymlink != 0 {
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	}
	if e.IsDir() {
		return bindDir(src, dst)
	}
	if t.IsRegular() {
		if err := os.WriteFile(dst, nil, 0o644); err != nil {
			return err
		}
		if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s on %s: %w", src, dst, err)
		}
	}
	return nil
}

func bindDir(src, dst string) error {
	if err := os.Mkdir(dst, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s on %s: %w", src, dst, err)
	}
	return nil
}

// cardAttr: attributes the card decides for a netdev (a veth has none of
// them, or, like speed, not the card's value).
func cardAttr(name string) bool {
	switch name {
	case "speed", "phys_port_name", "phys_switch_id", "device", "compat":
		return true
	}
	return false
}

// overlayNetdev makes the veth's sysfs dir the card's netdev dir: the
// card's dir gets a symlink to each of the veth's own attributes (from the
// pristine sysfs, so reads and writes reach the kernel) and is bound over
// /sys/devices/virtual/net/NAME, where /sys/class/net/NAME points.
func (l Lab) overlayNetdev(c card.Card, n card.Netdev) error {
	return overlayNetdevAt(l.CardRoot(), l.stash(), c, n)
}

// overlayNetdevAt is overlayNetdev for the view whose card tree is
// cardRoot and pristine sysfs is under stash.
func overlayNetdevAt(cardRoot, stash string, c card.Card, n card.Netdev) error {
	cardDir := c.NetdevDir(cardRoot, n)
	if err := os.MkdirAll(cardDir, 0o755); err != nil {
		return err
	}
	realDir := filepath.Join(stash, "sys/devices/virtual/net", n.Name)
	ents, err := os.ReadDir(realDir)
	if err != nil {
		return fmt.Errorf("netdev %s: %w (is the veth in the lab's netns?)", n.Name, err)
	}
	for _, e := range ents {
		if cardAttr(e.Name()) {
			continue
		}
		dst := filepath.Join(cardDir, e.Name())
		if _, err := os.Lstat(dst); err == nil {
			continue
		}
		if err := os.Symlink(filepath.Join(realDir, e.Name()), dst); err != nil {
			return err
		}
	}
	return bindDir(cardDir, filepath.Join("/sys/devices/virtual/net", n.Name))
}

// dropHugetlbfs unmounts, in the lab only, every hugetlbfs inherited from
// the host: the lab's hugetlbfs mounts are its own (made by rig inside),
// so DPDK files inside never land in the host's mounts, and they go with
// the namespace.
func dropHugetlbfs() error {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	var points []string
	for _, line := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if ok && len(f) >= 5 && len(g) >= 1 && g[0] == "hugetlbfs" {
			points = append(points, unescapeMount(f[4]))
		}
	}
	for i := len(points) - 1; i >= 0; i-- {
		if err := unix.Unmount(points[i], unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("unmount hugetlbfs %s in the lab: %w", points[i], err)
		}
	}
	return nil
}

// unescapeMount undoes mountinfo's octal escapes (\040 for space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%3o", &v); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
