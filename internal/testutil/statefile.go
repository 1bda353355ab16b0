package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// RunWithPrivateStateFile runs a package's tests with rig's records of
// what it changed (rig down's state files) in a temporary directory,
// removed afterwards: tests that run steps on this machine must not write
// the host's /var/lib/rig. It sets $RIG_STATE_DIR, the directory of rig's
// default state files (DIR/state.json for root "/", DIR/roots/KEY/state.json
// for each other --root tree, so tests on different trees keep separate
// records), and unsets $RIG_STATE_FILE, which would put every run in one
// file. Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(testutil.RunWithPrivateStateFile(m)) }
//
// rig keeps its state file on the machine it runs on, never under --root:
// a test (or a regression) that left one inside a checked-in fixture host
// (testdata/hosts/NAME/var/lib/rig, or the private directory under it)
// fails the package here, and the file is removed (a fixture tree that
// changes under other packages' tests makes them flaky).
func RunWithPrivateStateFile(m *testing.M) int {
	dir, err := os.MkdirTemp("", "rig-state-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	os.Setenv("RIG_STATE_DIR", dir)
	os.Unsetenv("RIG_STATE_FILE")
	cleanBase := KeepNoRuntimeBase()
	code := m.Run()
	cleanBase()
	if leaked := fixtureStateFiles(dir); len(leaked) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: a test wrote rig's state file into a checked-in fixture host (rig keeps it outside --root; a --state-file inside the tree puts it there): %v\n", leaked)
		for _, p := range leaked {
			os.RemoveAll(p)
			// and the directories rig made for it (tmp, var/lib), up to the host
			for d := filepath.Dir(p); filepath.Base(filepath.Dir(d)) != "hosts" && os.Remove(d) == nil; d = filepath.Dir(d) {
			}
		}
		return 1
	}
	return code
}

// fixtureStateFiles lists testdata/hosts/*/<dir> and
// testdata/hosts/*/var/lib/rig of the module the test runs in.
func fixtureStateFiles(dir string) []string {
	d, ok := moduleRoot()
	if !ok {
		return nil
	}
	var out []string
	for _, sub := range []string{dir, "/var/lib/rig"} {
		m, _ := filepath.Glob(filepath.Join(d, "testdata", "hosts", "*", sub))
		out = append(out, m...)
	}
	return out
}

// ModuleRoot is the directory of the module the test runs in (the first
// above the package's directory that holds go.mod), for fixtures under the
// module's testdata/ that a test kit reads whatever package calls it.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	d, ok := moduleRoot()
	if !ok {
		t.Fatal("testutil: no go.mod above the working directory")
	}
	return d
}

func moduleRoot() (string, bool) {
	wd, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for d := wd; d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, true
		}
	}
	return "", false
}

// PlantState writes a state file as an attacker who edited rig's own
// would leave it: rig's place, mode 0600, owned by rig's user.
func PlantState(t testing.TB, path, body string) []byte {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return []byte(body)
}
