package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDownRefusesEditedStateFile replays, with the rig binary, the attack
// on an edited state file: kernel records that would have rig down
// overwrite a host tree's /etc/passwd and delete its /etc/shadow, and a
// sysctl the playbook does not set. rig plan --down and rig down fail
// (exit 1) naming the state file, each record and the fix; the tree and
// the state file stay as they were. A state file others may write is
// refused with the chmod that fixes it.
func TestDownRefusesEditedStateFile(t *testing.T) {
	bin := buildRigNoCgo(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "host")
	for p, body := range map[string]string{
		"etc/passwd":             "root:x:0:0:root:/root:/bin/bash\n",
		"etc/shadow":             "root:$y$j9T$secret:19000:0:99999:7:::\n",
		"proc/cmdline":           "BOOT_IMAGE=/vmlinuz ro quiet\n",
		"proc/meminfo":           "MemTotal:       24000000 kB\nHugepagesize:       2048 kB\n",
		"proc/sys/vm/swappiness": "60\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pb := filepath.Join(dir, "kernel.yaml")
	if err := os.WriteFile(pb, []byte("name: kernel\nkernel:\n  sysctl:\n    vm.swappiness: \"10\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sf := filepath.Join(dir, "state", "state.json")
	if err := os.Mkdir(filepath.Dir(sf), 0o700); err != nil {
		t.Fatal(err)
	}
	state := `{"version": 1, "kernel": {"files": [{"path": "/etc/passwd", "existed": true, "content": "root::0:0::/root:/bin/sh\n"}, {"path": "/etc/shadow", "existed": false}],
  "sysctl": {"kernel.core_pattern": "|/tmp/x"}}}`
	if err := os.WriteFile(sf, []byte(state), 0o600); err != nil {
		t.Fatal(err)
	}
	before := treeSnapshot(t, root)
	args := []string{"-p", pb, "--root", root, "--state-file", sf}
	for _, cmd := range [][]string{{"plan", "--down"}, {"down", "--lock-file", filepath.Join(dir, "rig.lock")}} {
		code, out, errOut := runBin(t, bin, append(cmd, args...)...)
		if code != exitFailure {
			t.Fatalf("rig %v: exit %d, want %d\n%s%s", cmd, code, exitFailure, out, errOut)
		}
		for _, want := range []string{"rig state " + sf + ": records rig could not have written",
			`kernel.files[0].path: "/etc/passwd" is not a file the kernel step writes (/etc/default/grub.d/rig.cfg, /etc/sysctl.d/90-rig.conf)`,
			`kernel.files[1].path: "/etc/shadow" is not a file the kernel step writes`,
			`kernel.sysctl["kernel.core_pattern"]: "kernel.core_pattern" is not a sysctl this playbook's kernel section sets (vm.swappiness)`,
			"remove those entries (or the file " + sf + ") and restore those settings by hand"} {
			if !strings.Contains(out+errOut, want) {
				t.Errorf("rig %v output lacks %q:\n%s%s", cmd, want, out, errOut)
			}
		}
	}
	if after := treeSnapshot(t, root); after != before {
		t.Fatalf("the tree changed:\nbefore\n%s\nafter\n%s", before, after)
	}
	if b, _ := os.ReadFile(sf); string(b) != state {
		t.Fatalf("state file changed: %s", b)
	}

	if err := os.Chmod(sf, 0o666); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runBin(t, bin, append([]string{"down", "--lock-file", filepath.Join(dir, "rig.lock")}, args...)...)
	if code != exitFailure || !strings.Contains(out+errOut, "rig state "+sf+": untrusted state file: it is writable by group or others (mode 0666)") ||
		!strings.Contains(out+errOut, "fix: chmod go-w "+sf) {
		t.Fatalf("group-writable state file: exit %d\n%s%s", code, out, errOut)
	}
	if after := treeSnapshot(t, root); after != before {
		t.Fatalf("the tree changed:\nbefore\n%s\nafter\n%s", before, after)
	}
}
