package host

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// Each rule of a Trust policy refuses what it names, with the reason as
// an *Untrusted, and a file that keeps every rule opens.
func TestOpenTrustedRules(t *testing.T) {
	euid := os.Geteuid()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := func(name string, mode os.FileMode, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := file("good", 0o600, "abc")
	strict := Trust{Flags: unix.O_RDONLY, Forbidden: 0o077, OneLink: true, MaxSize: 8, CheckDir: true, EUID: euid}
	if b, err := ReadTrusted(good, strict); err != nil || string(b) != "abc" {
		t.Fatalf("a good file: %q, %v", b, err)
	}
	link := filepath.Join(dir, "link")
	must(t, os.Symlink(good, link))
	hard := filepath.Join(dir, "hard")
	must(t, os.Link(good, hard))
	fifo := filepath.Join(dir, "fifo")
	must(t, unix.Mkfifo(fifo, 0o600))
	wide := file("wide", 0o644, "abc")
	big := file("big", 0o600, "0123456789")
	other := file("other", 0o600, "abc")
	otherOwned := os.Chown(other, 65534, 65534) == nil
	for _, c := range []struct {
		path string
		t    Trust
		why  Why
	}{
		{link, strict, WhySymlink},
		{fifo, strict, WhyKind},
		{hard, strict, WhyLinks},
		{wide, strict, WhyMode},
		{big, strict, WhySize},
		{dir, strict, WhyKind},
	} {
		_, err := OpenTrusted(c.path, c.t)
		var u *Untrusted
		if !errors.As(err, &u) || u.Why != c.why || !errors.Is(err, ErrUntrusted) {
			t.Errorf("%s: %v, want reason %d", filepath.Base(c.path), err, c.why)
		}
	}
	if otherOwned {
		_, err := OpenTrusted(other, strict)
		if u := (*Untrusted)(nil); !errors.As(err, &u) || u.Why != WhyOwner || u.UID != 65534 {
			t.Errorf("a file of uid 65534: %v, want WhyOwner", err)
		}
		if euid == 0 {
			must(t, os.Chown(other, 0, 0))
			if _, err := OpenTrusted(other, Trust{Flags: unix.O_RDONLY, RootOwner: true, EUID: 1000}); err != nil {
				t.Errorf("RootOwner: a root-owned file is refused: %v", err)
			}
		}
	}
	// FollowLink: a token kept behind a link opens
	if f, err := OpenTrusted(link, Trust{Flags: unix.O_RDONLY, FollowLink: true, EUID: euid}); err != nil {
		t.Errorf("FollowLink: %v", err)
	} else {
		f.Close()
	}
	must(t, os.Remove(hard))
	// the directory rule: group-writable without the sticky bit
	must(t, os.Chmod(dir, 0o775))
	if _, err := OpenTrusted(good, strict); func() bool {
		u := (*Untrusted)(nil)
		return !errors.As(err, &u) || u.Why != WhyDirMode || u.Path != dir
	}() {
		t.Errorf("a group-writable directory: %v, want WhyDirMode on %s", err, dir)
	}
	must(t, os.Chmod(dir, os.ModeSticky|0o777))
	if _, err := ReadTrusted(good, strict); err != nil {
		t.Errorf("a sticky world-writable directory (/tmp's kind) is refused: %v", err)
	}
	// Create: made exclusively with the mode given; a missing file without Create is ErrNotExist
	made := filepath.Join(dir, "made")
	if _, err := OpenTrusted(made, Trust{Flags: unix.O_RDONLY, EUID: euid}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file without Create: %v, want ErrNotExist", err)
	}
	f, err := OpenTrusted(made, Trust{Flags: unix.O_RDWR, Create: 0o600, OneLink: true, EUID: euid})
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if fi, err := os.Stat(made); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("created file: %v %v, want mode 0600", fi, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// ReplaceFile never truncates the file it replaces: a reader that opened
// the old file reads it whole after the replace, and the path names a new
// file (a kill between a truncate and a write left rig's drop-ins empty).
func TestReplaceFileNeverTruncates(t *testing.T) {
	for _, root := range []string{"/", t.TempDir()} {
		dir := t.TempDir()
		p := filepath.Join(dir, "90-rig.conf")
		if root != "/" {
			dir, p = filepath.Join(root, "etc/sysctl.d"), "/etc/sysctl.d/90-rig.conf"
			must(t, os.MkdirAll(dir, 0o755))
		}
		h := New(root)
		full := h.Path(p)
		must(t, os.WriteFile(full, []byte("vm.swappiness = 10\n"), 0o644))
		old, err := os.Open(full)
		if err != nil {
			t.Fatal(err)
		}
		var before unix.Stat_t
		must(t, unix.Fstat(int(old.Fd()), &before))
		must(t, h.ReplaceFile(p, []byte("vm.swappiness = 1\n"), 0o644))
		b := make([]byte, 64)
		n, _ := old.ReadAt(b, 0)
		old.Close()
		if string(b[:n]) != "vm.swappiness = 10\n" {
			t.Errorf("root %s: the old file now reads %q: it was written in place", root, b[:n])
		}
		var after unix.Stat_t
		must(t, unix.Stat(full, &after))
		if got, _ := os.ReadFile(full); after.Ino == before.Ino || string(got) != "vm.swappiness = 1\n" {
			t.Errorf("root %s: inode %d -> %d, content %q: want a new file with the new content", root, before.Ino, after.Ino, got)
		}
	}
}
