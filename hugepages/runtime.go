package hugepages

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"rig/internal/host"
)

// DPDKRunDir is where a DPDK process running as root keeps its runtime
// directory, one per --file-prefix: /var/run/dpdk/<prefix>/ (config,
// fbarray_*, mp_socket, telemetry sockets). rig's own bench runs use prefix
// rig<pid>, OvS uses "ovs..." or the default "rte"; all are handled alike.
const DPDKRunDir = "/var/run/dpdk"

// Runtime directory states.
const (
	RuntimeAlive   = "alive"
	RuntimeDead    = "dead"
	RuntimeUnknown = "unknown"
)

// RuntimeDir is one DPDK runtime directory and whether its process lives.
type RuntimeDir struct {
	Prefix string `json:"prefix"`
	Path   string `json:"path"` // host path
	State  string `json:"state"`
	Why    string `json:"why"`
	Files  int    `json:"files"`
}

// configLockHolder reports the pid holding a POSIX (fcntl) lock on a DPDK
// config file, 0 when none. A DPDK primary takes a write lock on part of
// <runtime dir>/config in rte_eal_init and holds it until it exits (the
// kernel drops it when the process dies, even on SIGKILL); lslocks shows
// e.g. "POSIX WRITE 136 17543 /run/dpdk/<prefix>/config". F_GETLK over the
// whole file finds it without taking anything. It cannot see the caller's
// own locks, so never ask about a runtime dir of this process.
func configLockHolder(fs RuntimeFS, p string) (int, error) {
	f, err := fs.OpenFile(p, os.O_RDONLY, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0}
	if err := unix.FcntlFlock(f.Fd(), unix.F_GETLK, &lk); err != nil {
		return 0, fmt.Errorf("F_GETLK %s: %w", f.Name(), err)
	}
	if lk.Type == unix.F_UNLCK {
		return 0, nil
	}
	return int(lk.Pid), nil
}

// lockedInodes reads /proc/locks (under the root) into the set of
// "MAJ:MIN:INODE" strings with any lock: DPDK secondaries hold flock()s
// on the primary's fbarray_* files, so a dir whose primary died but whose
// secondary still runs is in use.
func lockedInodes(fs FS) map[string]int {
	out := map[string]int{}
	b, err := fs.ReadFile("/proc/locks")
	if err != nil {
		return out
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		// "1: POSIX  ADVISORY  WRITE 22094 fe:00:778259 136 17543"
		// "2: -> FLOCK ..." (a waiter) has one more field
		if len(f) >= 2 && f[1] == "->" {
			continue
		}
		if len(f) < 6 {
			continue
		}
		var pid int
		fmt.Sscanf(f[4], "%d", &pid)
		out[f[5]] = pid
	}
	return out
}

func inodeKey(fi os.FileInfo) (string, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", false
	}
	// the kernel prints "%02x:%02x:%lu" (MAJOR, MINOR, i_ino)
	return fmt.Sprintf("%02x:%02x:%d", unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)), st.Ino), true
}

// RuntimeFS is what finding and cleaning runtime directories needs of the
// host (internal/host.Host): its files opened, stated and removed under
// the root (inside it, under a fixture root).
type RuntimeFS interface {
	FS
	OpenFile(p string, flag int, perm os.FileMode) (*os.File, error)
	Stat(p string) (os.FileInfo, error)
	Remove(p string) error
}

// FindRuntimeDirs lists DPDK runtime directories under /var/run/dpdk (a
// host path under the root) and classifies each: alive
// when a process holds the config file's lock, holds any lock on a file in
// it (/proc/locks), or maps/holds a hugepage file with its prefix (users,
// from Users); dead when none of that and the config file exists; unknown
// otherwise (no config file: an --in-memory/--no-shconf run or not DPDK's).
func FindRuntimeDirs(fs RuntimeFS, users map[string]bool) ([]RuntimeDir, error) {
	ents, err := fs.ReadDir(DPDKRunDir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("hugepages: %s: %w", DPDKRunDir, err)
	}
	locks := lockedInodes(fs)
	var out []RuntimeDir
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		rd := RuntimeDir{Prefix: e.Name(), Path: path.Join(DPDKRunDir, e.Name())}
		rd.State, rd.Why = classifyRuntimeDir(fs, rd, locks, users)
		if files, err := fs.ReadDir(rd.Path); err == nil {
			rd.Files = len(files)
		}
		out = append(out, rd)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Prefix < out[j].Prefix })
	return out, nil
}

func classifyRuntimeDir(fs RuntimeFS, rd RuntimeDir, locks map[string]int, users map[string]bool) (state, why string) {
	pid, err := configLockHolder(fs, rd.Path+"/config")
	switch {
	case err == nil && pid > 0:
		return RuntimeAlive, fmt.Sprintf("pid %d holds the lock on config (DPDK primary running)", pid)
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return RuntimeUnknown, fmt.Sprintf("cannot test the config lock: %v", err)
	}
	files, ferr := fs.ReadDir(rd.Path)
	if ferr != nil {
		return RuntimeUnknown, fmt.Sprintf("cannot read the directory: %v", ferr)
	}
	for _, f := range files {
		fi, err := fs.Stat(path.Join(rd.Path, f.Name()))
		if err != nil {
			continue
		}
		if k, ok := inodeKey(fi); ok {
			if pid, held := locks[k]; held {
				return RuntimeAlive, fmt.Sprintf("pid %d holds a lock on %s (a DPDK process is attached)", pid, f.Name())
			}
		}
		if p := path.Join(rd.Path, f.Name()); users[p] {
			return RuntimeAlive, "a live process holds " + p
		}
	}
	for p := range users {
		if b := path.Base(p); strings.HasPrefix(b, rd.Prefix+"map_") && isDPDKHugeFile(b) {
			return RuntimeAlive, fmt.Sprintf("a live process maps %s", p)
		}
	}
	if len(files) == 0 {
		return RuntimeDead, "empty: nothing of its process is left"
	}
	if errors.Is(err, os.ErrNotExist) {
		if pid, ok := rigPrefixPID(rd.Prefix); ok {
			// rig's dataplane runs --in-memory: no config file to lock
			if fs.Exists(fmt.Sprintf("/proc/%d", pid)) {
				return RuntimeAlive, fmt.Sprintf("rig's own prefix (rig<pid>) and pid %d runs", pid)
			}
			return RuntimeDead, fmt.Sprintf("rig's own prefix (rig<pid>) and pid %d is gone (killed or crashed); no process holds or maps its files", pid)
		}
		return RuntimeUnknown, "no config file (an --in-memory run, or not a DPDK runtime dir); left alone"
	}
	return RuntimeDead, "no process holds the config lock: its DPDK process is gone"
}

// CleanReport is what Clean removed.
type CleanReport struct {
	RuntimeDirs []string `json:"runtimeDirs"`
	HugeFiles   []string `json:"hugeFiles"`
	Pages       int64    `json:"pages"` // hugepages the removed files held
	Skipped     []string `json:"skipped,omitempty"`
}

// Clean removes dead DPDK runtime directories and stale hugepage files,
// re-checking each right before removing it. A dead runtime dir's config
// is write-locked (as a DPDK primary would) while its files go, so a DPDK
// process starting with that prefix meanwhile fails cleanly instead of
// losing its files. Every path is a host path under fs's root.
func Clean(fs RuntimeFS, dirs []RuntimeDir, stale []StaleFile) (CleanReport, error) {
	var rep CleanReport
	var errs []error
	users := Users(fs)
	locks := lockedInodes(fs)
	for _, d := range dirs {
		if d.State != RuntimeDead {
			continue
		}
		if st, why := classifyRuntimeDir(fs, d, locks, users); st != RuntimeDead {
			rep.Skipped = append(rep.Skipped, fmt.Sprintf("%s: %s now (%s)", d.Path, st, why))
			continue
		}
		if err := removeRuntimeDir(fs, d.Path); err != nil {
			errs = append(errs, fmt.Errorf("hugepages: clean %s: %w", d.Path, err))
			continue
		}
		rep.RuntimeDirs = append(rep.RuntimeDirs, d.Path)
	}
	for _, f := range stale {
		if users[f.Path] {
			rep.Skipped = append(rep.Skipped, fmt.Sprintf("%s: in use now", f.Path))
			continue
		}
		if err := fs.Remove(f.Path); err != nil {
			errs = append(errs, fmt.Errorf("hugepages: clean %s: %w", f.Path, err))
			continue
		}
		rep.HugeFiles = append(rep.HugeFiles, f.Path)
		rep.Pages += f.Pages
	}
	return rep, errors.Join(errs...)
}

// RemoveDeadRuntimeDir removes a DPDK primary's runtime directory (what
// EAL leaves in /var/run/dpdk/<prefix>) when no process holds its config
// lock: what a parent does for a dataplane child that ended without its
// own cleanup (SIGKILL, a PMD's abort). An absent directory is no error.
func RemoveDeadRuntimeDir(full string) error {
	if _, err := os.Stat(full); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return removeRuntimeDir(host.New("/"), full)
}

// removeRuntimeDir removes runtime dir dir (a host path under fs's root).
func removeRuntimeDir(fs RuntimeFS, dir string) error {
	f, err := fs.OpenFile(dir+"/config", os.O_RDWR, 0)
	if _, rig := rigPrefixPID(path.Base(dir)); errors.Is(err, os.ErrNotExist) && rig {
		return removeRigRuntimeDir(fs, dir)
	}
	if errors.Is(err, os.ErrNotExist) {
		return fs.Remove(dir) // an empty dir (rmdir fails if a process filled it meanwhile)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0}
	if err := unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk); err != nil {
		return fmt.Errorf("config is locked now (a DPDK process started with this prefix): %w", err)
	}
	ents, err := fs.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.IsDir() {
			return fmt.Errorf("holds a subdirectory %s, not what DPDK leaves; remove it by hand if it is yours", e.Name())
		}
	}
	for _, e := range ents {
		if e.Name() == "config" {
			continue
		}
		if err := fs.Remove(dir + "/" + e.Name()); err != nil {
			return err
		}
	}
	if err := fs.Remove(dir + "/config"); err != nil {
		return err
	}
	return fs.Remove(dir)
}

// rigPrefixPID reads the pid out of rig's own --file-prefix, rig<pid>
// (bench.DefaultFilePrefix; this package cannot import bench).
func rigPrefixPID(prefix string) (int, bool) {
	n, ok := strings.CutPrefix(prefix, "rig")
	if !ok || n == "" || n[0] == '0' || len(n) > 9 {
		return 0, false
	}
	pid, err := strconv.Atoi(n)
	return pid, err == nil && pid > 0
}

// removeRigRuntimeDir removes the runtime dir of a dead rig process (no
// config file: --in-memory): its files, then the dir. A subdirectory is
// not what DPDK leaves: then nothing is removed.
func removeRigRuntimeDir(fs RuntimeFS, dir string) error {
	ents, err := fs.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.IsDir() {
			return fmt.Errorf("holds a subdirectory %s, not what DPDK leaves; remove it by hand if it is yours", e.Name())
		}
	}
	for _, e := range ents {
		if err := fs.Remove(dir + "/" + e.Name()); err != nil {
			return err
		}
	}
	return fs.Remove(dir)
}
