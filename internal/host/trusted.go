package host

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Trust is what a file rig must trust (its lock, its state file, a token
// file, the firmware simulator's lock) has to be, each rule a value of the
// policy. The file is opened without following a symbolic link (unless
// FollowLink), non-blocking (a FIFO cannot hold the open), and every rule
// is checked on the open file (fstat), so nothing can be swapped in between.
type Trust struct {
	Flags      int         // unix.O_RDONLY or unix.O_RDWR
	Create     fs.FileMode // non-zero: create the file exclusively with this mode when it is missing
	FollowLink bool        // open through a symbolic link (a token file a user keeps elsewhere)
	RootOwner  bool        // root may own it too, besides the user rig runs as
	Forbidden  fs.FileMode // mode bits that must be clear (0o022: no write by group or others; 0o077: private)
	OneLink    bool        // exactly one hard link (not a link to another file)
	MaxSize    int64       // non-zero: at most this many bytes
	CheckDir   bool        // its directory must be a directory owned by root or rig's user, not writable by group or others without the sticky bit
	EUID       int         // the user rig runs as
}

// Why names the rule an untrusted file broke.
type Why int

const (
	WhyDirKind  Why = iota + 1 // the directory is not a directory
	WhyDirOwner                // the directory is owned by another user
	WhyDirMode                 // the directory is writable by group or others without the sticky bit
	WhySymlink                 // the file is a symbolic link
	WhyKind                    // the file is not a regular file
	WhyOwner                   // the file is owned by another user
	WhyMode                    // the file has a forbidden mode bit
	WhyLinks                   // the file has more than one hard link
	WhySize                    // the file is larger than MaxSize (or grew past it while read)
)

// ErrUntrusted is what every *Untrusted matches with errors.Is.
var ErrUntrusted = errors.New("untrusted file")

// Untrusted says which rule a file (or its directory) broke, with what
// was found, so that each caller words its own message and fix.
type Untrusted struct {
	Path string // the file, or its directory for the WhyDir… reasons
	Why  Why
	Kind string // what it is (WhyDirKind, WhyKind): "a directory", "a named pipe"
	UID  uint32 // the owner found (WhyOwner, WhyDirOwner)
	Mode uint32 // the permission bits found (WhyMode, WhyDirMode)
	N    int64  // the links (WhyLinks) or bytes (WhySize) found
	Grew bool   // WhySize: it grew past MaxSize while being read
}

func (e *Untrusted) Error() string {
	switch e.Why {
	case WhyDirKind, WhyKind:
		return fmt.Sprintf("%s is %s, not a %s", e.Path, e.Kind, map[bool]string{true: "directory", false: "regular file"}[e.Why == WhyDirKind])
	case WhyDirOwner, WhyOwner:
		return fmt.Sprintf("%s is owned by uid %d", e.Path, e.UID)
	case WhyDirMode, WhyMode:
		return fmt.Sprintf("%s has mode %#o", e.Path, e.Mode)
	case WhySymlink:
		return e.Path + " is a symbolic link"
	case WhyLinks:
		return fmt.Sprintf("%s has %d hard links", e.Path, e.N)
	case WhySize:
		return fmt.Sprintf("%s is %d bytes, over the limit", e.Path, e.N)
	}
	return e.Path + " is not trusted"
}

// Is makes errors.Is(err, ErrUntrusted) true for every *Untrusted.
func (e *Untrusted) Is(target error) bool { return target == ErrUntrusted }

// CheckTrustedDir applies t's directory rule to dir (stat follows a link:
// /var/run is one). A missing directory is fs.ErrNotExist (wrapped).
func CheckTrustedDir(dir string, t Trust) error {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return &fs.PathError{Op: "stat", Path: dir, Err: err}
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return &Untrusted{Path: dir, Why: WhyDirKind, Kind: StatKind(st.Mode)}
	case st.Uid != 0 && int(st.Uid) != t.EUID:
		return &Untrusted{Path: dir, Why: WhyDirOwner, UID: st.Uid}
	case st.Mode&0o022 != 0 && st.Mode&unix.S_ISVTX == 0:
		return &Untrusted{Path: dir, Why: WhyDirMode, Mode: st.Mode & 0o7777}
	}
	return nil
}

// OpenTrusted opens path under policy t: the directory first (CheckDir),
// then the file, created exclusively when t.Create and missing (if another
// process made it meanwhile, that one is checked), then every rule on the
// open file. A broken rule is an *Untrusted; a missing file (no Create)
// is fs.ErrNotExist (wrapped). The file comes back blocking.
func OpenTrusted(path string, t Trust) (*os.File, error) {
	if t.CheckDir {
		if err := CheckTrustedDir(filepath.Dir(path), t); err != nil {
			return nil, err
		}
	}
	flags := t.Flags | unix.O_NONBLOCK | unix.O_CLOEXEC | unix.O_NOCTTY
	if !t.FollowLink {
		flags |= unix.O_NOFOLLOW
	}
	fd, err := openOrCreate(path, flags, t.Create)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.EMLINK) {
		return nil, &Untrusted{Path: path, Why: WhySymlink}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	if err := checkTrustedFD(fd, path, t); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "fcntl", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// openOrCreate opens path, creating it exclusively (mode create) when it
// is missing and create is non-zero; a file another process created
// between the two opens is opened as found.
func openOrCreate(path string, flags int, create fs.FileMode) (int, error) {
	for attempt := 0; ; attempt++ {
		fd, err := unix.Open(path, flags, 0)
		if err == nil || create == 0 || !errors.Is(err, unix.ENOENT) || attempt >= 3 {
			return fd, err
		}
		fd, err = unix.Open(path, flags|unix.O_CREAT|unix.O_EXCL, uint32(create.Perm()))
		if !errors.Is(err, unix.EEXIST) {
			return fd, err
		}
	}
}

// checkTrustedFD applies t's file rules to the open fd.
func checkTrustedFD(fd int, path string, t Trust) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return &Untrusted{Path: path, Why: WhyKind, Kind: StatKind(st.Mode)}
	case int(st.Uid) != t.EUID && !(t.RootOwner && st.Uid == 0):
		return &Untrusted{Path: path, Why: WhyOwner, UID: st.Uid}
	case uint32(t.Forbidden.Perm())&st.Mode != 0:
		return &Untrusted{Path: path, Why: WhyMode, Mode: st.Mode & 0o7777}
	case t.OneLink && st.Nlink != 1:
		return &Untrusted{Path: path, Why: WhyLinks, N: int64(st.Nlink)}
	case t.MaxSize > 0 && st.Size > t.MaxSize:
		return &Untrusted{Path: path, Why: WhySize, N: st.Size}
	}
	return nil
}

// ReadTrusted reads the whole of a file opened by OpenTrusted under t,
// never more than t.MaxSize bytes (WhySize with Grew when it grew past
// that while read).
func ReadTrusted(path string, t Trust) ([]byte, error) {
	f, err := OpenTrusted(path, t)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := io.Reader(f)
	if t.MaxSize > 0 {
		r = io.LimitReader(f, t.MaxSize+1)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	if t.MaxSize > 0 && int64(len(b)) > t.MaxSize {
		return nil, &Untrusted{Path: path, Why: WhySize, N: int64(len(b)), Grew: true}
	}
	return b, nil
}
