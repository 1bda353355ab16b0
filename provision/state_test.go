package provision

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rig/internal/host"
)

// TestStateFileFor: --state-file, then $RIG_STATE_FILE, then the default:
// DefaultStateFile for root "/", and for any other root a file per tree
// outside it (/var/lib/rig/roots/KEY as root, $XDG_STATE_HOME/rig/roots/KEY
// or ~/.local/state/rig/roots/KEY otherwise; $RIG_STATE_DIR replaces the
// base); relative paths made absolute; no place at all is an error naming
// the flag.
func TestStateFileFor(t *testing.T) {
	tree := filepath.Join(t.TempDir(), "bf2-dpu-arm")
	if err := os.Mkdir(tree, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(tree))
	key := "bf2-dpu-arm-" + hex.EncodeToString(sum[:6])
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	wd, _ := os.Getwd()
	cases := []struct {
		name, root, flag string
		euid             int
		env              func(string) string
		want, source     string
	}{
		{"root / as root", "/", "", 0, env(), DefaultStateFile, StateFromDefault},
		{"root / as a user", "/", "", 1000, env("HOME", "/home/u"), DefaultStateFile, StateFromDefault},
		{"empty root is /", "", "", 0, env(), DefaultStateFile, StateFromDefault},
		{"tree as root", tree, "", 0, env("HOME", "/root", "XDG_STATE_HOME", "/x"), "/var/lib/rig/roots/" + key + "/state.json", StateFromDefault},
		{"tree as a user, XDG", tree, "", 1000, env("HOME", "/home/u", "XDG_STATE_HOME", "/home/u/st"), "/home/u/st/rig/roots/" + key + "/state.json", StateFromDefault},
		{"tree as a user, relative XDG ignored", tree, "", 1000, env("HOME", "/home/u", "XDG_STATE_HOME", "st"), "/home/u/.local/state/rig/roots/" + key + "/state.json", StateFromDefault},
		{"tree as a user, HOME", tree, "", 1000, env("HOME", "/home/u"), "/home/u/.local/state/rig/roots/" + key + "/state.json", StateFromDefault},
		{"RIG_STATE_DIR, tree", tree, "", 0, env("RIG_STATE_DIR", "/s"), "/s/roots/" + key + "/state.json", StateFromDefault},
		{"RIG_STATE_DIR, root /", "/", "", 0, env("RIG_STATE_DIR", "/s"), "/s/state.json", StateFromDefault},
		{"env over default", tree, "", 0, env("RIG_STATE_FILE", "/e/st.json", "RIG_STATE_DIR", "/s"), "/e/st.json", StateFromEnv},
		{"flag over env", tree, "/f/st.json", 0, env("RIG_STATE_FILE", "/e/st.json"), "/f/st.json", StateFromFlag},
		{"relative flag", "/", "st.json", 0, env(), filepath.Join(wd, "st.json"), StateFromFlag},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := StateFileFor(c.root, c.flag, c.euid, c.env)
			if err != nil || got.Path != c.want || got.Source != c.source {
				t.Fatalf("got %+v %v, want %s (%s)", got, err, c.want, c.source)
			}
		})
	}
	if _, err := StateFileFor(tree, "", 1000, env()); err == nil || !strings.Contains(err.Error(), "give --state-file FILE") {
		t.Fatalf("no HOME: %v", err)
	}
	// the same tree by a relative path and through a symlink: the same key
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(tree, link); err != nil {
		t.Fatal(err)
	}
	if k, err := StateKey(link); err != nil || k != key {
		t.Fatalf("key through a symlink %s %v, want %s", k, err, key)
	}
	t.Chdir(filepath.Dir(tree))
	if k, err := StateKey("bf2-dpu-arm"); err != nil || k != key {
		t.Fatalf("key by a relative path %s %v, want %s", k, err, key)
	}
	slash := sha256.Sum256([]byte("/"))
	if k, _ := StateKey("/"); k != "root-"+hex.EncodeToString(slash[:6]) {
		t.Fatalf("key of /: %s", k)
	}
}

// TestStateFileOutsideRoot: a step under a fixture root records in the
// Env's state file on this machine and writes nothing under the root for
// it; an Env without one derives the per-tree default.
func TestStateFileOutsideRoot(t *testing.T) {
	root := t.TempDir()
	sf := filepath.Join(t.TempDir(), "st", "state.json")
	st := (&Env{StateFile: sf}).State()
	if err := UpdateState(st, func(rs *RigState) {
		rs.RecordBind(BoundDevice{BDF: "0000:00:04.0", Original: "virtio-pci", Driver: "vfio-pci"})
	}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(sf); err != nil || !strings.Contains(string(b), `"originalDriver": "virtio-pci"`) {
		t.Fatalf("state file %s: %v\n%s", sf, err, b)
	}
	if fi, err := os.Stat(sf); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file mode: %v %v", fi, err)
	}
	entries, _ := os.ReadDir(root)
	if len(entries) != 0 {
		t.Fatalf("wrote under the root: %v", entries)
	}
	t.Setenv("RIG_STATE_FILE", "")
	t.Setenv("RIG_STATE_DIR", "/d")
	key, _ := StateKey(root)
	if got := (&Env{Host: host.New(root)}).State().Path; got != "/d/roots/"+key+"/state.json" {
		t.Fatalf("derived %s", got)
	}
	if err := loadStateErr((StateStore{})); err == nil || !strings.Contains(err.Error(), "--state-file") {
		t.Fatalf("no state file: %v", err)
	}
}

func loadStateErr(s StateStore) error {
	_, err := LoadState(s)
	return err
}
