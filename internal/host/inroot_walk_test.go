package host

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// openWalk (reads where openat2 is missing) resolves every path as
// openat2 RESOLVE_IN_ROOT does: the same file, or the same errno, for
// absolute and relative symlinks, ".." at and below the root, chains,
// loops, dangling links, a file used as a directory, and a final symlink
// opened itself with O_NOFOLLOW.
func TestOpenWalkMatchesOpenat2(t *testing.T) {
	root := t.TempDir()
	put(t, filepath.Join(root, "etc/hostname"), "fixture\n")
	put(t, filepath.Join(root, "sys/devices/pci0000:00/0000:03:00.0/vendor"), "0x15b3\n")
	for link, target := range map[string]string{
		"sys/bus/pci/devices/0000:03:00.0": "../../../devices/pci0000:00/0000:03:00.0",
		"sys/abs":                          "/etc/hostname",
		"sys/up":                           "../../../../etc/hostname",
		"sys/chain":                        "abs",
		"sys/loop1":                        "loop2",
		"sys/loop2":                        "loop1",
		"sys/dangling":                     "/nowhere",
		"sys/dirdot":                       "/sys/devices/.",
		"sys/absroot":                      "/",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, link)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	r, err := New(root).openRootRead()
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	for _, p := range []string{
		"/", "/etc/hostname", "/../../etc/hostname", "/sys/bus/pci/devices/0000:03:00.0/vendor",
		"/sys/bus/pci/devices/0000:03:00.0/../0000:03:00.0/vendor", "/sys/abs", "/sys/up", "/sys/chain",
		"/sys/loop1", "/sys/dangling", "/sys/dirdot/pci0000:00", "/sys/absroot/etc/hostname",
		"/etc/hostname/x", "/missing/x", "/sys/abs/..",
	} {
		for _, flags := range []int{unix.O_RDONLY, unix.O_PATH, unix.O_PATH | unix.O_NOFOLLOW, unix.O_RDONLY | unix.O_DIRECTORY} {
			how := unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC), Resolve: resolveInRoot}
			kfd, kerr := unix.Openat2(r.fd, rel(p), &how)
			if kerr == unix.ENOSYS {
				t.Skip("no openat2 here to compare with")
			}
			wfd, werr := r.openWalk("open", p, flags)
			switch {
			case kerr != nil && werr == nil:
				t.Errorf("%s flags %#x: openat2 %v, walk opened it", p, flags, kerr)
			case kerr == nil && werr != nil:
				t.Errorf("%s flags %#x: openat2 opened it, walk: %v", p, flags, werr)
			case kerr != nil && !errorsIsErrno(werr, kerr.(unix.Errno)):
				t.Errorf("%s flags %#x: openat2 %v, walk %v", p, flags, kerr, werr)
			case kerr == nil:
				var ks, ws unix.Stat_t
				if unix.Fstat(kfd, &ks) != nil || unix.Fstat(wfd, &ws) != nil || ks.Ino != ws.Ino || ks.Dev != ws.Dev {
					t.Errorf("%s flags %#x: openat2 and walk opened different files (ino %d, %d)", p, flags, ks.Ino, ws.Ino)
				}
			}
			if kerr == nil {
				unix.Close(kfd)
			}
			if werr == nil {
				unix.Close(wfd)
			}
		}
	}
}

func errorsIsErrno(err error, e unix.Errno) bool {
	for err != nil {
		if x, ok := err.(unix.Errno); ok {
			return x == e
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}
