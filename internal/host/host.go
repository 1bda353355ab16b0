// Package host is rig's seam to the machine: every sysfs/procfs/etc path is
// resolved under a root directory, every external tool goes through one exec
// function, and netlink goes through a handle opened per network namespace.
//
// Under the root "/" paths are the live machine's. Under any other root (a
// fixture tree, --root) every read and write resolves inside the tree, its
// symlinks included (openat2 RESOLVE_IN_ROOT, see inroot.go): nothing in
// the tree can make rig read or write outside it. Whatever the root, a file
// rig reads is opened non-blocking and refused unless it is a regular file,
// and read up to a limit (MaxSysfsRead, MaxProcRead, MaxFileRead).
package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// ExecFunc is the one exec seam. It returns the tool's stdout; on failure
// the error is a *ToolError carrying argv and output.
type ExecFunc func(ctx context.Context, name string, args ...string) ([]byte, error)

// ToolError is returned by RealExec when a tool fails to start or exits non-zero.
type ToolError struct {
	Argv   []string
	Stdout string
	Stderr string
	Err    error
}

func (e *ToolError) Error() string {
	out := strings.TrimSpace(e.Stderr)
	if out == "" {
		out = strings.TrimSpace(e.Stdout)
	}
	if out == "" {
		return fmt.Sprintf("%s: %v", strings.Join(e.Argv, " "), e.Err)
	}
	return fmt.Sprintf("%s: %v: %s", strings.Join(e.Argv, " "), e.Err, out)
}

func (e *ToolError) Unwrap() error { return e.Err }

// NotFound reports whether the tool itself could not be found.
func (e *ToolError) NotFound() bool { return errors.Is(e.Err, exec.ErrNotFound) }

// RealExec runs the tool with no shell in between.
func RealExec(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	// a tool killed at ctx's end may leave a child holding its output
	// (a --detach daemon's half-started child): stop waiting for it
	cmd.WaitDelay = 2 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.Bytes(), &ToolError{Argv: append([]string{name}, args...), Stdout: stdout.String(), Stderr: stderr.String(), Err: err}
	}
	return stdout.Bytes(), nil
}

// Host bundles the seams. The zero Root means "/".
type Host struct {
	Root string
	Exec ExecFunc
}

// New returns a Host rooted at root (empty means "/") that runs real tools.
func New(root string) *Host {
	if root == "" {
		root = "/"
	}
	return &Host{Root: root, Exec: RealExec}
}

// Path maps an absolute host path (e.g. /sys/kernel/mm) under the root.
func (h *Host) Path(p string) string {
	root := h.Root
	if root == "" || root == "/" {
		return filepath.Clean("/" + p)
	}
	return filepath.Join(root, filepath.Clean("/"+p))
}

// IsRealRoot reports whether paths resolve to the live system.
func (h *Host) IsRealRoot() bool { return h.Root == "" || filepath.Clean(h.Root) == "/" }

// CheckRoot says whether rig can read under the root: for a root other
// than "/" it opens the root and resolves "." inside it the way every read
// will. A kernel without openat2(2) passes (reads fall back to rig's own
// resolution, inroot.go); RootNote says so, and each write under the root
// is refused there (errors.Is ErrNoOpenat2).
func (h *Host) CheckRoot() error {
	if h.IsRealRoot() {
		return nil
	}
	r, err := h.openRootRead()
	if err != nil {
		return err
	}
	defer r.close()
	fd, err := r.open("open", "/", unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	unix.Close(fd)
	return nil
}

// RootNote is "" where the kernel resolves lookups under the root
// (openat2(2)) or the root is "/"; without openat2 it says what works
// (reads) and what is refused (writes under the root), for the user.
func (h *Host) RootNote() string {
	if h.IsRealRoot() {
		return ""
	}
	r, err := h.openRoot()
	if err != nil {
		return ""
	}
	defer r.close()
	fd, err := r.open("open", "/", unix.O_PATH|unix.O_DIRECTORY, 0)
	if err == nil {
		unix.Close(fd)
		return ""
	}
	if !errors.Is(err, ErrNoOpenat2) {
		return ""
	}
	return fmt.Sprintf("--root %s: %v; rig resolves reads inside the tree itself and refuses every write under it (Linux 5.6 or newer writes there)", h.Root, ErrNoOpenat2)
}

// ReadFile reads a host path under the root: a regular file (a FIFO or a
// device is refused at once, never read) of at most the path's read limit.
func (h *Host) ReadFile(p string) ([]byte, error) {
	f, err := h.openRead(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return h.readBounded(f, p)
}

// ReadString reads a host path and trims surrounding whitespace.
func (h *Host) ReadString(p string) (string, error) {
	b, err := h.ReadFile(p)
	return strings.TrimSpace(string(b)), err
}

// WriteFile writes a sysfs-style attribute (no create, no truncate semantics
// beyond what the kernel does) or a regular file under the root. Under a
// fixture root only a regular file inside the tree is written.
func (h *Host) WriteFile(p string, data []byte) error {
	if !h.IsRealRoot() {
		return h.writeIn(p, data, false, 0)
	}
	f, err := os.OpenFile(h.Path(p), os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// CreateFile writes a regular file under the root, creating parent dirs.
func (h *Host) CreateFile(p string, data []byte, perm fs.FileMode) error {
	if !h.IsRealRoot() {
		return h.writeIn(p, data, true, perm)
	}
	full := h.Path(p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return err
	}
	return os.WriteFile(full, data, perm)
}

// ReplaceFile writes a regular file under the root atomically: a
// temporary file in the same directory, synced, then renamed over p and
// the directory synced, so a crash leaves the old content or the new,
// never half of it (nor an empty file).
func (h *Host) ReplaceFile(p string, data []byte, perm fs.FileMode) error {
	if !h.IsRealRoot() {
		return h.replaceIn(p, data, perm)
	}
	full := h.Path(p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(full), "."+filepath.Base(full)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, full)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(full))
}

// syncDir makes a rename in dir durable (fsync of the directory): without
// it a crash after the rename can still show the old entry.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Remove deletes a file (or an empty directory) under the root; a symlink
// is removed, not followed.
func (h *Host) Remove(p string) error {
	if !h.IsRealRoot() {
		return h.removeIn(p)
	}
	return os.Remove(h.Path(p))
}

// Glob expands a host pattern under the root and returns host paths (root stripped).
func (h *Host) Glob(pattern string) ([]string, error) {
	if !h.IsRealRoot() {
		return h.globIn(pattern)
	}
	m, err := filepath.Glob(h.Path(pattern))
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(m))
	for _, p := range m {
		out = append(out, h.Unroot(p))
	}
	return out, nil
}

// Unroot turns a path under the root back into the host path it stands for.
func (h *Host) Unroot(p string) string {
	if h.IsRealRoot() {
		return p
	}
	rel, err := filepath.Rel(filepath.Clean(h.Root), p)
	if err != nil || strings.HasPrefix(rel, "..") {
		return p
	}
	return "/" + rel
}

// ReadDir lists a host directory under the root, sorted by name.
func (h *Host) ReadDir(p string) ([]os.DirEntry, error) {
	if !h.IsRealRoot() {
		return h.readDirIn(p)
	}
	return os.ReadDir(h.Path(p))
}

// Stat stats a host path under the root.
func (h *Host) Stat(p string) (os.FileInfo, error) {
	if !h.IsRealRoot() {
		return h.statIn(p, true)
	}
	return os.Stat(h.Path(p))
}

// Lstat lstats a host path under the root.
func (h *Host) Lstat(p string) (os.FileInfo, error) {
	if !h.IsRealRoot() {
		return h.statIn(p, false)
	}
	return os.Lstat(h.Path(p))
}

// Readlink reads a symlink under the root.
func (h *Host) Readlink(p string) (string, error) {
	if !h.IsRealRoot() {
		return h.readlinkIn(p)
	}
	return os.Readlink(h.Path(p))
}

// Exists reports whether a host path exists under the root.
func (h *Host) Exists(p string) bool {
	_, err := h.Stat(p)
	return err == nil
}

// Run calls the exec seam.
func (h *Host) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	ex := h.Exec
	if ex == nil {
		ex = RealExec
	}
	return ex(ctx, name, args...)
}

// Symlink creates a symlink at host path p (under the root) pointing to target (verbatim).
func (h *Host) Symlink(target, p string) error {
	if !h.IsRealRoot() {
		return h.symlinkIn(target, p)
	}
	full := h.Path(p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return err
	}
	return os.Symlink(target, full)
}

// Open opens a host path under the root for reading: a regular file (a
// FIFO or a device is refused at once).
func (h *Host) Open(p string) (*os.File, error) { return h.openRead(p) }

// OpenFile opens a host path under the root with flag (os.O_RDWR, ...) and
// perm when it creates. Under a fixture root it resolves inside the tree
// and opens only a regular file.
func (h *Host) OpenFile(p string, flag int, perm fs.FileMode) (*os.File, error) {
	if h.IsRealRoot() {
		return os.OpenFile(h.Path(p), flag, perm)
	}
	open := h.openRoot
	if !isWrite(flag) {
		open = h.openRootRead
	}
	r, err := open()
	if err != nil {
		return nil, err
	}
	defer r.close()
	if flag&os.O_CREATE != 0 {
		if err := r.mkdirAll(filepath.Dir(filepath.Clean("/"+p)), 0o755); err != nil {
			return nil, err
		}
	}
	fd, err := r.open("open", p, flag|unix.O_NONBLOCK|unix.O_NOCTTY, uint32(perm.Perm()))
	if err != nil {
		return nil, err
	}
	return h.regularFile(fd, p)
}

// OpenLive opens a path on the live machine for reading, whatever the root:
// for files rig made itself at real paths (a private OvS instance's run dir).
func (h *Host) OpenLive(p string) (*os.File, error) { return os.Open(p) }

// ReadLiveFile reads a file on the live machine named by the user (a flag's
// value; relative to the working directory), whatever the root: opened
// non-blocking (a FIFO cannot hold the open), refused unless a regular
// file (errors.Is ErrNotRegular), and an error (ErrTooLarge) when longer
// than limit bytes. The errors name the file; the caller adds the fix.
func ReadLiveFile(name string, limit int64) ([]byte, error) {
	f, err := OpenLiveRegular(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: %w: more than %d bytes", name, ErrTooLarge, limit)
	}
	return b, nil
}

// OpenLiveRegular opens a file on the live machine named by the user for
// reading, as ReadLiveFile does (non-blocking open, refused unless a
// regular file), for a caller that streams it.
func OpenLiveRegular(name string) (*os.File, error) {
	fd, err := unix.Open(name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return regularFD(fd, name, "")
}

// LiveExists reports whether a path exists on the live machine, whatever the root.
func (h *Host) LiveExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Netlink opens a netlink handle in network namespace nsName ("" is the
// current one); see NetlinkHandle.
func (h *Host) Netlink(nsName string) (*netlink.Handle, error) { return NetlinkHandle(nsName) }
