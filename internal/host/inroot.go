package host

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Under a root other than "/" (a fixture tree), every path is resolved
// inside the tree by the kernel: openat2(2) with RESOLVE_IN_ROOT on a
// descriptor of the root, so an absolute symlink or a ".." in the tree
// stays in the tree (as if the tree were "/"), and RESOLVE_NO_MAGICLINKS,
// so /proc/self/fd-style links cannot leave it either. What changes a
// directory entry (mkdir, unlink, symlink, rename) runs as the *at call on
// the descriptor of the parent directory resolved that way, so its last
// component is never followed.
//
// Without openat2 (Linux < 5.6, as on BlueField images with a 5.4 kernel,
// or under qemu-user, which does not emulate it) reads under the tree
// still work: rig resolves the path itself, one component at a time, each
// opened with O_NOFOLLOW from the descriptor of the directory before it; a
// symlink's target is resolved inside the tree (absolute from the root,
// ".." never above it) as RESOLVE_IN_ROOT would. What it cannot promise is
// what only the kernel can: that a directory renamed out of the tree while
// a lookup walks through it takes the lookup along. That is acceptable for
// reading a fixture, not for writing into one: every write under the tree
// (open for writing, create, mkdir, rename, unlink, symlink) needs openat2
// and is refused without it (ErrNoOpenat2), naming the reason.

// resolveInRoot are the openat2 RESOLVE_ flags of every lookup under a tree.
const resolveInRoot = unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS

// Read limits: the most bytes ReadFile takes from one file. A sysfs
// attribute is at most a page (binary ones such as a PCI function's config
// or vpd a few kB). /proc tables grow with the machine: a process's maps
// is about 100 bytes a mapping, up to vm.max_map_count mappings (65530 by
// default, 262144 where databases raise it), so /proc gets 64 MiB; /etc
// and the rest 16 MiB. A file over its limit is an error, never silently
// truncated.
const (
	MaxSysfsRead = 1 << 20
	MaxProcRead  = 64 << 20
	MaxFileRead  = 16 << 20
)

// ErrNoOpenat2 is why a fixture root cannot be used on a kernel without
// openat2(2).
var ErrNoOpenat2 = errors.New("openat2(2) is not available (Linux older than 5.6, qemu-user, or a seccomp filter refuses it)")

// ErrNotRegular marks a file rig refuses to read or write because it is
// not a regular file (a FIFO would block rig, a device would be read for
// ever or written for real).
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge marks a file larger than rig reads (see MaxSysfsRead).
var ErrTooLarge = errors.New("file too large")

// rootDir is an open descriptor of a fixture root; every lookup under the
// root starts from it.
type rootDir struct {
	h  *Host
	fd int
	// read: only reads go through this descriptor, so a lookup may fall
	// back to rig's own resolution where openat2 is missing
	read bool
}

// openRoot opens the fixture root for reads and writes. The caller closes it.
func (h *Host) openRoot() (*rootDir, error) {
	fd, err := unix.Open(h.Root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("host root %s: %w", h.Root, &fs.PathError{Op: "open", Path: h.Root, Err: err})
	}
	return &rootDir{h: h, fd: fd}, nil
}

// openRootRead opens the fixture root for reads only (see the fallback
// above). The caller closes it.
func (h *Host) openRootRead() (*rootDir, error) {
	r, err := h.openRoot()
	if err == nil {
		r.read = true
	}
	return r, err
}

func (r *rootDir) close() { unix.Close(r.fd) }

// rel is host path p relative to the root ("." for "/").
func rel(p string) string {
	c := filepath.Clean("/" + p)
	if c == "/" {
		return "."
	}
	return c[1:]
}

// open resolves p inside the root and opens it with flags (O_CLOEXEC is
// added; mode only with O_CREAT).
func (r *rootDir) open(op, p string, flags int, mode uint32) (int, error) {
	how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: resolveInRoot}
	if flags&(unix.O_CREAT|unix.O_TMPFILE) != 0 {
		how.Mode = uint64(mode)
	}
	for i := 0; ; i++ {
		fd, err := unix.Openat2(r.fd, rel(p), &how)
		switch {
		case err == nil:
			return fd, nil
		case err == unix.EINTR || err == unix.EAGAIN && i < 16:
			// EAGAIN: a rename or mount raced the lookup; the kernel asks to retry
			continue
		case err == unix.ENOSYS && r.read && !isWrite(flags):
			return r.openWalk(op, p, flags)
		case err == unix.ENOSYS:
			return -1, fmt.Errorf("%s: %w: rig writes inside --root %s only where the kernel keeps the write in the tree (reads work without it); run rig on Linux 5.6 or newer, or without --root", r.h.Path(p), ErrNoOpenat2, r.h.Root)
		}
		return -1, r.pathError(op, p, err)
	}
}

// writeFlags are the open flags that make an open a write (O_TMPFILE
// too, whose bits include O_DIRECTORY's: see isWrite).
const writeFlags = unix.O_WRONLY | unix.O_RDWR | unix.O_CREAT | unix.O_TRUNC | unix.O_APPEND

// isWrite reports whether open flags write.
func isWrite(flags int) bool {
	return flags&writeFlags != 0 || flags&unix.O_TMPFILE == unix.O_TMPFILE
}

// maxLinks is how many symlinks one lookup follows before ELOOP (the
// kernel's limit, 40).
const maxLinks = 40

// openWalk is open for reading where openat2 is missing: p resolved inside
// the root by rig, one component at a time (see the comment at the top).
// Each component is opened O_PATH|O_NOFOLLOW from its parent's descriptor;
// a symlink is read and its target walked instead (from the root when
// absolute), ".." goes back to the directory before (never above the
// root); the last component is opened with flags and O_NOFOLLOW (so a
// symlink swapped in after the check fails with ELOOP, not followed), or,
// with O_NOFOLLOW in flags, a final symlink is opened itself.
func (r *rootDir) openWalk(op, p string, flags int) (int, error) {
	root, err := unix.Dup(r.fd)
	if err != nil {
		return -1, r.pathError(op, p, err)
	}
	stack := []int{root} // the directories walked, the root first
	defer func() {
		for _, fd := range stack {
			unix.Close(fd)
		}
	}()
	todo := strings.Split(rel(p), "/")
	links := 0
	for len(todo) > 0 {
		name := todo[0]
		todo = todo[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			if len(stack) > 1 {
				unix.Close(stack[len(stack)-1])
				stack = stack[:len(stack)-1]
			}
			continue
		}
		dir := stack[len(stack)-1]
		last := len(todo) == 0
		fd, err := unix.Openat(dir, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, r.pathError(op, p, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, r.pathError(op, p, err)
		}
		switch {
		case st.Mode&unix.S_IFMT == unix.S_IFLNK && !(last && flags&unix.O_NOFOLLOW != 0):
			unix.Close(fd)
			if links++; links > maxLinks {
				return -1, r.pathError(op, p, unix.ELOOP)
			}
			target, err := readlinkat(dir, name)
			if err != nil {
				return -1, r.pathError(op, p, err)
			}
			if filepath.IsAbs(target) {
				for _, d := range stack[1:] {
					unix.Close(d)
				}
				stack = stack[:1]
			}
			todo = append(strings.Split(target, "/"), todo...)
		case last:
			unix.Close(fd)
			nfd, err := unix.Openat(dir, name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				return -1, r.pathError(op, p, err)
			}
			return nfd, nil
		case st.Mode&unix.S_IFMT != unix.S_IFDIR:
			unix.Close(fd)
			return -1, r.pathError(op, p, unix.ENOTDIR)
		default:
			stack = append(stack, fd)
		}
	}
	// p names a directory already walked (the root, or a path ending in
	// "." or ".."): open it again with flags
	nfd, err := unix.Openat(stack[len(stack)-1], ".", flags|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, r.pathError(op, p, err)
	}
	return nfd, nil
}

// parent opens the directory holding p (resolved inside the root) and
// returns it with p's last component.
func (r *rootDir) parent(op, p string) (int, string, error) {
	c := filepath.Clean("/" + p)
	if c == "/" {
		return -1, "", &fs.PathError{Op: op, Path: r.h.Path(p), Err: unix.EINVAL}
	}
	fd, err := r.open(op, filepath.Dir(c), unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return -1, "", err
	}
	return fd, filepath.Base(c), nil
}

// mkdirAll makes directory dir and its parents inside the root: each one
// with mkdirat in its parent resolved inside the root. A component that
// exists as a symlink is followed inside the root, never out of it.
func (r *rootDir) mkdirAll(dir string, perm uint32) error {
	if fd, err := r.open("mkdir", dir, unix.O_PATH|unix.O_DIRECTORY, 0); err == nil {
		unix.Close(fd)
		return nil
	}
	cur := "/"
	for _, name := range strings.Split(rel(dir), "/") {
		if name == "." {
			continue
		}
		pfd, err := r.open("mkdir", cur, unix.O_PATH|unix.O_DIRECTORY, 0)
		if err != nil {
			return err
		}
		next := filepath.Join(cur, name)
		err = unix.Mkdirat(pfd, name, perm)
		unix.Close(pfd)
		if err != nil && err != unix.EEXIST {
			return r.pathError("mkdir", next, err)
		}
		cur = next
	}
	fd, err := r.open("mkdir", dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	unix.Close(fd)
	return nil
}

// pathError is err on host path p as an *fs.PathError naming the path
// under the root, with a note when a symlink in the tree points out of it
// (what makes a lookup inside the tree fail where the same path on this
// machine would not).
func (r *rootDir) pathError(op, p string, err error) error {
	pe := &fs.PathError{Op: op, Path: r.h.Path(p), Err: err}
	if err != unix.ENOENT && err != unix.ENOTDIR && err != unix.ELOOP && err != unix.EXDEV {
		return pe
	}
	if note := r.escapeNote(p); note != "" {
		return &noteError{err: pe, note: note}
	}
	return pe
}

// escapeNote names the first symlink on the way to p whose target is
// absolute or climbs above the root: under --root it resolves inside the
// tree, which is what the caller should know when the lookup failed.
func (r *rootDir) escapeNote(p string) string {
	cur := "/"
	for _, name := range strings.Split(rel(p), "/") {
		if name == "." {
			continue
		}
		next := filepath.Join(cur, name)
		pfd, err := r.open("readlink", cur, unix.O_PATH|unix.O_DIRECTORY, 0)
		if err != nil {
			return ""
		}
		target, err := readlinkat(pfd, name)
		unix.Close(pfd)
		if err == nil {
			if filepath.IsAbs(target) || climbsOut(cur, target) {
				inTree := target
				if !filepath.IsAbs(target) {
					inTree = filepath.Join(cur, target)
				}
				return fmt.Sprintf("%s is a symlink to %s, which under --root rig resolves inside the tree, to %s: "+
					"a tree's links never lead out of it; put what it should point to in the tree",
					r.h.Path(next), target, r.h.Path(inTree))
			}
		}
		cur = next
	}
	return ""
}

// climbsOut reports whether a relative symlink target climbs above the
// root from directory dir.
func climbsOut(dir, target string) bool {
	depth := len(strings.Split(rel(dir), "/"))
	if dir == "/" {
		depth = 0
	}
	for _, c := range strings.Split(target, "/") {
		switch c {
		case "", ".":
		case "..":
			if depth--; depth < 0 {
				return true
			}
		default:
			depth++
		}
	}
	return false
}

func readlinkat(dirfd int, name string) (string, error) {
	for n := 256; ; n *= 2 {
		buf := make([]byte, n)
		m, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return "", err
		}
		if m < n {
			return string(buf[:m]), nil
		}
	}
}

// noteError is an error with a note after it; errors.Is/As see the error.
type noteError struct {
	err  error
	note string
}

func (e *noteError) Error() string { return e.err.Error() + " (" + e.note + ")" }
func (e *noteError) Unwrap() error { return e.err }

// StatKind names a file's type from its st_mode (unix.Stat_t.Mode) for
// messages: "a named pipe", "a character device", ...
func StatKind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG:
		return "a regular file"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	case unix.S_IFIFO:
		return "a named pipe"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFLNK:
		return "a symbolic link"
	}
	return fmt.Sprintf("file type %#o", mode&unix.S_IFMT)
}

// FileKind is StatKind for an fs.FileMode (os.Stat's).
func FileKind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return StatKind(unix.S_IFREG)
	case m.IsDir():
		return StatKind(unix.S_IFDIR)
	case m&fs.ModeSymlink != 0:
		return StatKind(unix.S_IFLNK)
	case m&fs.ModeNamedPipe != 0:
		return StatKind(unix.S_IFIFO)
	case m&fs.ModeSocket != 0:
		return StatKind(unix.S_IFSOCK)
	case m&fs.ModeCharDevice != 0:
		return StatKind(unix.S_IFCHR)
	case m&fs.ModeDevice != 0:
		return StatKind(unix.S_IFBLK)
	}
	return "file type " + m.Type().String()
}

// regularFD checks that fd, just opened non-blocking as name, is a regular
// file and makes it blocking again; it returns fd as an *os.File, or
// closes it and says what it is. fix ends the not-regular message.
func regularFD(fd int, name, fix string) (*os.File, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		msg := fmt.Errorf("%s: %w (%s)", name, ErrNotRegular, StatKind(st.Mode))
		if fix != "" {
			msg = fmt.Errorf("%w: %s", msg, fix)
		}
		return nil, msg
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "fcntl", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}

// regularFile is regularFD for host path p, with the fix for this root.
func (h *Host) regularFile(fd int, p string) (*os.File, error) {
	fix := "rig reads and writes regular files there (sysfs, procfs and /etc files are)"
	if !h.IsRealRoot() {
		fix = "a fixture tree holds regular files; replace it with one"
	}
	return regularFD(fd, h.Path(p), fix)
}

// readLimit is the most ReadFile takes from host path p, and what p is.
func readLimit(p string) (int64, string) {
	c := filepath.Clean("/" + p)
	switch {
	case c == "/sys" || strings.HasPrefix(c, "/sys/"):
		return MaxSysfsRead, "sysfs"
	case c == "/proc" || strings.HasPrefix(c, "/proc/"):
		return MaxProcRead, "/proc"
	}
	return MaxFileRead, "host"
}

// readBounded reads f (host path p) to its end, at most p's read limit.
func (h *Host) readBounded(f *os.File, p string) ([]byte, error) {
	limit, kind := readLimit(p)
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: h.Path(p), Err: err}
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: %w: more than %d bytes, the most rig reads from a %s file; is this the right file? (a fixture tree's files hold what the kernel shows)",
			h.Path(p), ErrTooLarge, limit, kind)
	}
	return b, nil
}

// openRead opens host path p for reading: non-blocking (a FIFO cannot hold
// the open), then refused unless it is a regular file. Under a fixture
// root it resolves inside the root.
func (h *Host) openRead(p string) (*os.File, error) {
	flags := unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY
	var fd int
	if h.IsRealRoot() {
		var err error
		if fd, err = unix.Open(h.Path(p), flags|unix.O_CLOEXEC, 0); err != nil {
			return nil, &fs.PathError{Op: "open", Path: h.Path(p), Err: err}
		}
	} else {
		r, err := h.openRootRead()
		if err != nil {
			return nil, err
		}
		defer r.close()
		if fd, err = r.open("open", p, flags, 0); err != nil {
			return nil, err
		}
	}
	return h.regularFile(fd, p)
}

// writeIn writes data to p inside the fixture root: opened as OpenFile
// opens it there (created with perm when create; refused unless a regular
// file), then truncated and written.
func (h *Host) writeIn(p string, data []byte, create bool, perm fs.FileMode) error {
	flags := os.O_WRONLY
	if create {
		flags |= os.O_CREATE
	}
	f, err := h.OpenFile(p, flags, perm)
	if err != nil {
		return err
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// replaceIn is ReplaceFile inside the fixture root: a temporary file made
// in p's directory (resolved inside the root) and renamed over p there.
func (h *Host) replaceIn(p string, data []byte, perm fs.FileMode) error {
	return h.inMadeDir("open", p, func(r *rootDir, dfd int, base string) error { return h.replaceAt(r, dfd, base, p, data, perm) })
}

// inMadeDir is inDir with p's directory made inside the fixture root
// when missing.
func (h *Host) inMadeDir(op, p string, fn func(r *rootDir, dfd int, base string) error) error {
	return h.inDir(op, p, true, fn)
}

// inDir runs fn on p's directory (dfd, resolved inside the fixture root;
// made there first when mkdir) and p's last name there.
func (h *Host) inDir(op, p string, mkdir bool, fn func(r *rootDir, dfd int, base string) error) error {
	r, err := h.openRoot()
	if err != nil {
		return err
	}
	defer r.close()
	if mkdir {
		if err := r.mkdirAll(filepath.Dir(filepath.Clean("/"+p)), 0o755); err != nil {
			return err
		}
	}
	dfd, base, err := r.parent(op, p)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	return fn(r, dfd, base)
}

// replaceAt writes data to a new temporary file in dfd and renames it over
// base there.
func (h *Host) replaceAt(r *rootDir, dfd int, base, p string, data []byte, perm fs.FileMode) error {
	var err error
	var tmp string
	var fd int
	for i := 0; ; i++ {
		tmp = "." + base + "." + strconv.FormatUint(rand.Uint64()%1e10, 10)
		fd, err = unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err == unix.EEXIST && i < 100 {
			continue
		}
		if err != nil {
			return r.pathError("open", filepath.Join(filepath.Dir(filepath.Clean("/"+p)), tmp), err)
		}
		break
	}
	f := os.NewFile(uintptr(fd), h.Path(filepath.Join(filepath.Dir(filepath.Clean("/"+p)), tmp)))
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
		if rerr := unix.Renameat(dfd, tmp, dfd, base); rerr != nil {
			err = r.pathError("rename", p, rerr)
		}
	}
	if err != nil {
		unix.Unlinkat(dfd, tmp, 0)
		return err
	}
	// dfd may be an O_PATH descriptor, which fsync refuses: sync the
	// directory through a read-only open of it
	if serr := syncDirAt(dfd); serr != nil {
		return r.pathError("fsync", filepath.Dir(filepath.Clean("/"+p)), serr)
	}
	return nil
}

// syncDirAt fsyncs the directory dfd names.
func syncDirAt(dfd int) error {
	fd, err := unix.Openat(dfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Fsync(fd)
}

// removeIn is Remove inside the fixture root: unlinkat in p's directory
// (a symlink is removed, not followed; an empty directory is removed too).
func (h *Host) removeIn(p string) error {
	return h.inDir("remove", p, false, func(r *rootDir, dfd int, base string) error {
		err := unix.Unlinkat(dfd, base, 0)
		if err == unix.EISDIR {
			err = unix.Unlinkat(dfd, base, unix.AT_REMOVEDIR)
		}
		if err != nil {
			return r.pathError("remove", p, err)
		}
		return nil
	})
}

// symlinkIn is Symlink inside the fixture root: symlinkat in p's directory
// (made inside the root). target is written verbatim; reads through it
// resolve inside the root.
func (h *Host) symlinkIn(target, p string) error {
	return h.inMadeDir("symlink", p, func(r *rootDir, dfd int, base string) error {
		if err := unix.Symlinkat(target, dfd, base); err != nil {
			return r.pathError("symlink", p, err)
		}
		return nil
	})
}

// statIn stats p inside the fixture root; follow=false stats a final
// symlink itself.
func (h *Host) statIn(p string, follow bool) (os.FileInfo, error) {
	r, err := h.openRootRead()
	if err != nil {
		return nil, err
	}
	defer r.close()
	flags := unix.O_PATH
	op := "stat"
	if !follow {
		flags |= unix.O_NOFOLLOW
		op = "lstat"
	}
	fd, err := r.open(op, p, flags, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), h.Path(p))
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, &fs.PathError{Op: op, Path: h.Path(p), Err: err}
	}
	return fi, nil
}

// readlinkIn reads the symlink p inside the fixture root.
func (h *Host) readlinkIn(p string) (string, error) {
	r, err := h.openRootRead()
	if err != nil {
		return "", err
	}
	defer r.close()
	dfd, base, err := r.parent("readlink", p)
	if err != nil {
		return "", err
	}
	defer unix.Close(dfd)
	t, err := readlinkat(dfd, base)
	if err != nil {
		return "", r.pathError("readlink", p, err)
	}
	return t, nil
}

// readDirIn lists directory p inside the fixture root, sorted by name.
// The entries' Info stats inside the root too.
func (h *Host) readDirIn(p string) ([]os.DirEntry, error) {
	r, err := h.openRootRead()
	if err != nil {
		return nil, err
	}
	defer r.close()
	fd, err := r.open("open", p, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), h.Path(p))
	defer f.Close()
	ents, err := f.ReadDir(-1)
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	out := make([]os.DirEntry, len(ents))
	for i, e := range ents {
		out[i] = inRootEntry{DirEntry: e, h: h, p: filepath.Join(filepath.Clean("/"+p), e.Name())}
	}
	return out, err
}

// inRootEntry is a directory entry under a fixture root: Info lstats it
// inside the root (os's entries lstat the path on this machine).
type inRootEntry struct {
	os.DirEntry
	h *Host
	p string
}

func (e inRootEntry) Info() (fs.FileInfo, error) { return e.h.statIn(e.p, false) }

func (e inRootEntry) String() string { return fs.FormatDirEntry(e) }

// globIn is Glob inside the fixture root: each pattern component matched
// against a directory listed inside the root.
func (h *Host) globIn(pattern string) ([]string, error) {
	if _, err := filepath.Match(pattern, ""); err != nil {
		return nil, err
	}
	cands := []string{"/"}
	for _, comp := range strings.Split(rel(pattern), "/") {
		if comp == "." {
			continue
		}
		var next []string
		for _, dir := range cands {
			if !hasMeta(comp) {
				next = append(next, filepath.Join(dir, comp))
				continue
			}
			ents, err := h.readDirIn(dir)
			if err != nil {
				continue
			}
			for _, e := range ents {
				if ok, _ := filepath.Match(comp, e.Name()); ok {
					next = append(next, filepath.Join(dir, e.Name()))
				}
			}
		}
		cands = next
	}
	var out []string
	for _, c := range cands {
		if _, err := h.statIn(c, false); err == nil {
			out = append(out, c)
		}
	}
	return out, nil
}

func hasMeta(s string) bool { return strings.ContainsAny(s, `*?[\`) }
