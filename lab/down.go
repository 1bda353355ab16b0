package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Proc is one process found in a lab's namespaces.
type Proc struct {
	PID  int    `json:"pid"`
	Comm string `json:"comm"`
	// Where: "lab" (its network or mount namespace) or "wire".
	Where string `json:"where"`
}

// DownReport says what Down removed.
type DownReport struct {
	Name    string   `json:"name"`
	Killed  []Proc   `json:"killed"`
	Removed []string `json:"removed"`
	// Hugepages: what the last lab's down gave back of the host's hugepage
	// pools (see recordPools).
	Hugepages []string `json:"hugepages"`
}

// Down removes lab name: every process in its namespaces (SIGTERM, then
// SIGKILL), its mount namespace, both network namespaces (and so the
// veths), its state dir, and, with the last lab, the mount points Up made
// and what the labs grew of the host's hugepage pools (restorePools).
// A lab whose processes died, or whose Up failed half way, is removed the
// same way.
func (m *Manager) Down(ctx context.Context, name string) (*DownReport, error) {
	l, err := ForName(name)
	if err != nil {
		return nil, err
	}
	unlock, err := lockState()
	if err != nil {
		return nil, err
	}
	defer unlock()
	left := false
	for _, p := range append([]string{l.Dir}, l.netnsPaths()...) {
		if _, err := os.Lstat(p); err == nil {
			left = true
		}
	}
	if !left {
		return nil, errors.Join(notFound(name), cleanupShared()) // lockState made StateRoot
	}
	return m.teardown(ctx, l)
}

// teardown removes whatever of l exists.
func (m *Manager) teardown(ctx context.Context, l Lab) (*DownReport, error) {
	rep := &DownReport{Name: l.Name}
	var errs []error
	_ = l.stopKernel() // by its PID, first; killAll ends whatever is left
	killed, err := l.killAll(ctx, true)
	rep.Killed = killed
	if err != nil {
		errs = append(errs, err)
	}
	for _, mnt := range []string{l.MntPath(), l.HostMntPath()} {
		if !isMounted(mnt) {
			continue
		}
		if err := unix.Unmount(mnt, unix.MNT_DETACH); err != nil {
			errs = append(errs, fmt.Errorf("lab %s: unmount %s: %w", l.Name, mnt, err))
		} else {
			rep.Removed = append(rep.Removed, "mount namespace "+mnt)
		}
	}
	for _, nsPath := range l.netnsPaths() {
		if _, err := os.Lstat(nsPath); err != nil {
			continue
		}
		ns := filepath.Base(nsPath)
		if err := m.run(ctx, "ip", "netns", "del", ns); err != nil {
			errs = append(errs, fmt.Errorf("lab %s: %w", l.Name, err))
		} else {
			rep.Removed = append(rep.Removed, "netns "+ns)
		}
	}
	if _, err := os.Lstat(l.Dir); err == nil {
		if err := l.removeStateDir(); err != nil {
			errs = append(errs, err)
		} else {
			rep.Removed = append(rep.Removed, l.Dir)
		}
	}
	if names, err := Names(); err == nil && len(names) == 0 {
		lines, err := restorePools(HugepagesSysDir, poolRecordPath(), poolSettle)
		rep.Hugepages = lines
		if err != nil {
			errs = append(errs, err)
		}
	}
	if err := cleanupShared(); err != nil {
		errs = append(errs, err)
	}
	return rep, errors.Join(errs...)
}

// removeStateDir unmounts the state dir's self-bind and removes it. It
// refuses if anything below is still a mount point on the host.
func (l Lab) removeStateDir() error {
	if isMounted(l.Dir) {
		if err := unix.Unmount(l.Dir, unix.MNT_DETACH); err != nil {
			return fmt.Errorf("lab %s: unmount %s: %w", l.Name, l.Dir, err)
		}
	}
	if isMounted(l.MntPath()) || isMounted(l.stash()) || isMounted(l.HostMntPath()) || isMounted(l.hostStash()) {
		return fmt.Errorf("lab %s: %s still has mounts; not removing it", l.Name, l.Dir)
	}
	if err := os.RemoveAll(l.Dir); err != nil {
		return fmt.Errorf("lab %s: %w", l.Name, err)
	}
	return nil
}

// nsID is a namespace's identity (device and inode of its nsfs file).
type nsID struct{ dev, ino uint64 }

func statNS(p string) (nsID, bool) {
	var st unix.Stat_t
	if err := unix.Stat(p, &st); err != nil {
		return nsID{}, false
	}
	return nsID{uint64(st.Dev), st.Ino}, true
}

// procs lists the processes (not this one) in the lab's network or mount
// namespace ("lab": the Arm), in the host's ("host") or the peer's network
// namespace ("peer"), or in the wire namespace ("wire").
func (l Lab) procs() []Proc {
	want := map[nsID]string{}
	for _, ns := range []struct{ path, where string }{{l.NetNSPath(), "lab"}, {l.MntPath(), "lab"},
		{l.HostNetNSPath(), machineHost}, {l.HostMntPath(), machineHost}, {l.PeerNetNSPath(), machinePeer}, {l.WireNetNSPath(), "wire"}} {
		if ns.path == l.MntPath() || ns.path == l.HostMntPath() {
			if !isMounted(ns.path) {
				continue
			}
		}
		if id, ok := statNS(ns.path); ok {
			want[id] = ns.where
		}
	}
	if len(want) == 0 {
		return nil
	}
	ents, _ := os.ReadDir("/proc")
	var out []Proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		for _, ns := range []string{"net", "mnt"} {
			if id, ok := statNS(fmt.Sprintf("/proc/%d/ns/%s", pid, ns)); ok && want[id] != "" {
				out = append(out, Proc{PID: pid, Comm: comm(pid), Where: want[id]})
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}

func comm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}

// alive: the process exists and is not a zombie (a zombie has left its
// namespaces already).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+1:])
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// killAll ends every process in the lab's namespaces (and, with wire, in
// the wire, host and peer namespaces too): SIGTERM, up to 5 s, then SIGKILL.
func (l Lab) killAll(ctx context.Context, wire bool) ([]Proc, error) {
	var ps []Proc
	for _, p := range l.procs() {
		if wire || p.Where == "lab" {
			ps = append(ps, p)
		}
	}
	for _, p := range ps {
		_ = syscall.Kill(p.PID, syscall.SIGTERM)
	}
	for _, sig := range []syscall.Signal{0, syscall.SIGKILL} {
		if sig != 0 {
			for _, p := range ps {
				if alive(p.PID) {
					_ = syscall.Kill(p.PID, sig)
				}
			}
		}
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) && ctx.Err() == nil && anyAlive(ps) {
			time.Sleep(20 * time.Millisecond)
		}
	}
	var left []string
	for _, p := range ps {
		if alive(p.PID) {
			left = append(left, fmt.Sprintf("%d (%s)", p.PID, p.Comm))
		}
	}
	if len(left) > 0 {
		return ps, fmt.Errorf("lab %s: processes survived SIGKILL: %s", l.Name, strings.Join(left, ", "))
	}
	return ps, nil
}

func anyAlive(ps []Proc) bool {
	for _, p := range ps {
		if alive(p.PID) {
			return true
		}
	}
	return false
}

// readPath reads a file of the lab's card tree.
func (l Lab) readCard(rel string) string {
	b, _ := os.ReadFile(filepath.Join(l.CardRoot(), rel))
	return strings.TrimSpace(string(b))
}
