package provision

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"rig/internal/testutil"
)

// TestLoadStateRefusesUntrustedFile: the state file must be a regular file
// (a FIFO is refused at once, not read), not a symbolic link, with one
// link, not writable by group or others, at most 4 MiB, in a directory
// others cannot write without the sticky bit; each refusal names the file
// and the fix. A sticky world-writable directory is accepted.
func TestLoadStateRefusesUntrustedFile(t *testing.T) {
	good := `{"version": 1}`
	for _, c := range []struct {
		name  string
		make  func(t *testing.T, p string)
		wants []string
	}{
		{"fifo", func(t *testing.T, p string) {
			if err := unix.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
		}, []string{"it is a named pipe, not a regular file", "fix: remove it (rm "}},
		{"symlink", func(t *testing.T, p string) {
			target := filepath.Join(filepath.Dir(p), "real.json")
			testutil.PlantState(t, target, good)
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		}, []string{"it is a symbolic link to ", "rig does not follow it"}},
		{"hard link", func(t *testing.T, p string) {
			testutil.PlantState(t, p, good)
			if err := os.Link(p, p+".other"); err != nil {
				t.Fatal(err)
			}
		}, []string{"it has 2 hard links"}},
		{"group-writable", func(t *testing.T, p string) {
			testutil.PlantState(t, p, good)
			if err := os.Chmod(p, 0o664); err != nil {
				t.Fatal(err)
			}
		}, []string{"it is writable by group or others (mode 0664)", "fix: chmod go-w "}},
		{"too big", func(t *testing.T, p string) {
			testutil.PlantState(t, p, good+strings.Repeat(" ", maxStateFile))
		}, []string{"bytes, more than the 4194304 a state file of rig's can be"}},
		{"open directory", func(t *testing.T, p string) {
			testutil.PlantState(t, p, good)
			if err := os.Chmod(filepath.Dir(p), 0o777); err != nil {
				t.Fatal(err)
			}
		}, []string{"is writable by group or others (mode 0777) without the sticky bit", "fix: chmod go-w "}},
		{"a directory", func(t *testing.T, p string) {
			if err := os.Mkdir(p, 0o700); err != nil {
				t.Fatal(err)
			}
		}, []string{"it is a directory, not a regular file"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "st", "state.json")
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			c.make(t, p)
			done := make(chan error, 1)
			go func() { _, err := LoadState(StateStore{Path: p}); done <- err }()
			var err error
			select {
			case err = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("loadState hangs")
			}
			if !errors.Is(err, ErrStateUntrusted) {
				t.Fatalf("error %v, want ErrStateUntrusted", err)
			}
			for _, w := range append([]string{"rig state " + p + ": untrusted state file: ", "nothing was written"}, c.wants...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
	sticky := t.TempDir()
	if err := os.Chmod(sticky, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(sticky, "state.json")
	testutil.PlantState(t, p, `{"version": 1, "bound": [{"bdf": "0000:00:04.0", "originalDriver": "virtio-pci", "driver": "vfio-pci"}]}`)
	if st, err := LoadState(StateStore{Path: p}); err != nil || len(st.Bound) != 1 {
		t.Fatalf("sticky directory: %+v %v", st, err)
	}
}

// TestPrivilegedStateFileForeignOwner: a state file (or its directory)
// owned by another user is refused with the fix; root needed to chown.
func TestPrivilegedStateFileForeignOwner(t *testing.T) {
	testutil.RequirePrivileged(t)
	p := filepath.Join(t.TempDir(), "st", "state.json")
	testutil.PlantState(t, p, `{"version": 1}`)
	if err := os.Chown(p, nobody, nobody); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadState(StateStore{Path: p}); !errors.Is(err, ErrStateUntrusted) ||
		!strings.Contains(err.Error(), "it is owned by uid 65534 (nobody), not by root or rig's user (uid 0 (root))") || !strings.Contains(err.Error(), "fix: remove it (rm "+p+")") {
		t.Fatalf("foreign file: %v", err)
	}
	if err := os.Chown(p, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(filepath.Dir(p), nobody, nobody); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadState(StateStore{Path: p}); !errors.Is(err, ErrStateUntrusted) ||
		!strings.Contains(err.Error(), "its directory "+filepath.Dir(p)+" is owned by uid 65534 (nobody)") {
		t.Fatalf("foreign directory: %v", err)
	}
}
