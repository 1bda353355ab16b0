package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// treeSnapshot is every entry of a tree: path, type and mode, and a
// file's content or a link's target.
func treeSnapshot(t *testing.T, root string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		line := fmt.Sprintf("%s %v", rel, fi.Mode())
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			line += " " + hex.EncodeToString(sum[:8])
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// copyFixture copies testdata/hosts/NAME to DIR/NAME (symlinks as symlinks).
func copyFixture(t *testing.T, name, dir string) string {
	t.Helper()
	root := filepath.Join(dir, name)
	if out, err := exec.Command("cp", "-a", "../../testdata/hosts/"+name, root).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	return root
}

// wantStateKey is the documented key of a tree's state directory: its
// name, "-", 12 hex digits of the SHA-256 of its absolute path.
func wantStateKey(t *testing.T, root string) string {
	t.Helper()
	abs, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Base(abs) + "-" + hex.EncodeToString(sum[:6])
}

// TestUpDownUnderRootKeepStateOutsideTree: the README's BlueField-2
// bring-up (mst, mode, rdma with the firmware simulator) on a copy of the
// fixture writes nothing inside the tree: rig's record goes to the default
// per-tree file outside it ($RIG_STATE_DIR/roots/KEY/state.json here; the
// package's TestMain points $RIG_STATE_DIR at a temporary directory, where
// a real run as root has /var/lib/rig), which the text output names in a
// "rig state:" line and the JSON report in stateFile; rig down of the same
// tree finds it and restores the mode from it. --state-file FILE puts it
// in FILE instead, and only a run given the same FILE finds it.
func TestUpDownUnderRootKeepStateOutsideTree(t *testing.T) {
	dir := t.TempDir()
	root := copyFixture(t, "bf2-dpu-arm", dir)
	stateDir := filepath.Join(dir, "state")
	t.Setenv("RIG_STATE_DIR", stateDir)
	before := treeSnapshot(t, root)
	sim, lock := filepath.Join(dir, "fw.json"), filepath.Join(dir, "rig.lock")
	if code, _, e := rig(t, "fwsim", "init", "--fw-sim", sim, "--device", "0000:03:00.0=a2d6:separated"); code != exitOK {
		t.Fatalf("fwsim init: %d %s", code, e)
	}
	g := []string{"-p", "bf2-dpu", "--only", "mst,mode,rdma", "--root", root, "--fw-sim", sim}
	run := func(want int, args ...string) string {
		t.Helper()
		code, out, e := rig(t, append(args, g...)...)
		if code != want {
			t.Fatalf("rig %v: exit %d, want %d\n%s%s", args, code, want, out, e)
		}
		return out
	}
	statePath := filepath.Join(stateDir, "roots", wantStateKey(t, root), "state.json")
	note := "rig state: " + statePath + " (--root " + root + ": kept outside the tree; --state-file FILE to choose)\n"

	out := run(exitPowerCycle, "up", "--lock-file", lock)
	if !strings.HasSuffix(out, note) {
		t.Fatalf("up does not end saying where the state went (%q):\n%s", note, out)
	}
	if b, err := os.ReadFile(statePath); err != nil || !strings.Contains(string(b), `"INTERNAL_CPU_MODEL": "0"`) {
		t.Fatalf("state file %s: %v\n%s", statePath, err, b)
	}
	var rep struct{ StateFile string }
	if err := json.Unmarshal([]byte(run(exitPowerCycle, "-o", "json", "plan")), &rep); err != nil || rep.StateFile != statePath {
		t.Fatalf("json report stateFile %q %v, want %s", rep.StateFile, err, statePath)
	}
	if code, _, e := rig(t, "fwsim", "power-cycle", "--fw-sim", sim); code != exitOK {
		t.Fatalf("power-cycle: %d %s", code, e)
	}
	run(exitOK, "up", "--lock-file", lock)
	out = run(exitPowerCycle, "down", "--firmware", "--lock-file", lock)
	if !strings.Contains(out, "set INTERNAL_CPU_MODEL (next boot) EMBEDDED_CPU(1) -> SEPARATED_HOST(0)") || strings.Contains(out, "no rig record") || !strings.HasSuffix(out, note) {
		t.Fatalf("down did not restore the mode from %s:\n%s", statePath, out)
	}
	if after := treeSnapshot(t, root); after != before {
		t.Fatalf("the tree changed:\nbefore\n%s\nafter\n%s", before, after)
	}

	// --state-file: there, said so; the default file of a fresh tree stays
	// absent, and only a down given the file finds the record
	root2 := copyFixture(t, "bf2-dpu-arm", t.TempDir())
	sim2, own := filepath.Join(dir, "fw2.json"), filepath.Join(dir, "own", "st.json")
	if code, _, e := rig(t, "fwsim", "init", "--fw-sim", sim2, "--device", "0000:03:00.0=a2d6:separated"); code != exitOK {
		t.Fatalf("fwsim init: %d %s", code, e)
	}
	g = []string{"-p", "bf2-dpu", "--only", "mst,mode,rdma", "--root", root2, "--fw-sim", sim2}
	before2 := treeSnapshot(t, root2)
	if out := run(exitPowerCycle, "up", "--lock-file", lock, "--state-file", own); !strings.HasSuffix(out, "rig state: "+own+" (--state-file)\n") {
		t.Fatalf("up --state-file:\n%s", out)
	}
	if _, err := os.Stat(own); err != nil {
		t.Fatal(err)
	}
	default2 := filepath.Join(stateDir, "roots", wantStateKey(t, root2), "state.json")
	if _, err := os.Stat(default2); !os.IsNotExist(err) {
		t.Fatalf("default state file %s written too: %v", default2, err)
	}
	if out := run(exitOK, "plan", "--down", "--firmware"); !strings.Contains(out, "no rig record in "+default2) {
		t.Fatalf("plan --down without --state-file:\n%s", out)
	}
	if out := run(exitOK, "plan", "--down", "--firmware", "--state-file", own); !strings.Contains(out, "set INTERNAL_CPU_MODEL (next boot) EMBEDDED_CPU(1) -> SEPARATED_HOST(0)") {
		t.Fatalf("plan --down --state-file:\n%s", out)
	}
	if after := treeSnapshot(t, root2); after != before2 {
		t.Fatalf("the tree changed:\nbefore\n%s\nafter\n%s", before2, after)
	}
}

// TestStateFileDefaultsUnderRoot: without $RIG_STATE_DIR the default under
// --root is /var/lib/rig/roots/KEY/state.json as root and
// $XDG_STATE_HOME/rig/roots/KEY/state.json (~/.local/state without it)
// otherwise; rig plan says so and writes nothing (the test never touches
// /var/lib/rig). With root "/" no note is printed.
func TestStateFileDefaultsUnderRoot(t *testing.T) {
	root := copyFixture(t, "bf2-dpu-arm", t.TempDir())
	key := wantStateKey(t, root)
	home := t.TempDir()
	t.Setenv("RIG_STATE_DIR", "")
	t.Setenv("HOME", home)
	as := func(euid int, args ...string) string {
		t.Helper()
		var o, e bytes.Buffer
		code := runApp(&app{out: &o, errOut: &e, output: "text", geteuid: func() int { return euid }}, args)
		if code != exitOK {
			t.Fatalf("rig %v as %d: exit %d\n%s%s", args, euid, code, o.String(), e.String())
		}
		return o.String()
	}
	plan := []string{"plan", "-p", "bf2-dpu", "--only", "rdma", "--root", root}
	for _, c := range []struct {
		euid int
		xdg  string
		want string
	}{
		{0, "", "/var/lib/rig/roots/" + key + "/state.json"},
		{1000, "", home + "/.local/state/rig/roots/" + key + "/state.json"},
		{1000, home + "/xdg", home + "/xdg/rig/roots/" + key + "/state.json"},
	} {
		t.Setenv("XDG_STATE_HOME", c.xdg)
		note := "rig state: " + c.want + " (--root " + root + ": kept outside the tree; --state-file FILE to choose)\n"
		if out := as(c.euid, plan...); !strings.HasSuffix(out, note) {
			t.Errorf("euid %d, XDG_STATE_HOME %q: want the note %q:\n%s", c.euid, c.xdg, note, out)
		}
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Errorf("plan wrote into HOME: %v", entries)
	}
	if out := as(1000, "plan", "-p", "hugepages-2m", "--root", "/"); strings.Contains(out, "rig state:") {
		t.Errorf("root /: a state note:\n%s", out)
	}
}
