package ovs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rig/internal/host"
	"rig/internal/testutil/sysfstree"
)

func TestReadLogTailFromLastStart(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "ovs-vswitchd.log")
	log := "2026-11-30T13:00:00.000Z|00001|vlog|INFO|opened log file " + p + "\n" +
		"2026-11-30T13:00:01.000Z|00002|dpdk|ERR|EAL: Cannot find device (0000:99:00.0)\n" +
		"2026-11-30T13:01:00.000Z|00001|vlog|INFO|opened log file " + p + "\n" +
		"2026-11-30T13:01:01.000Z|00002|dpdk|INFO|DPDK Enabled - initialized\n"
	if err := os.WriteFile(p, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	tail := ReadLogTail(&host.Host{Root: "/"}, Target{LogFile: p, Private: true})
	if len(tail) != 2 || !strings.Contains(tail[1], "initialized") {
		t.Fatalf("tail: %q", tail)
	}
	if got := ReadLogTail(&host.Host{Root: "/"}, Target{LogFile: filepath.Join(dir, "none.log"), Private: true}); got != nil {
		t.Fatalf("missing log: %q", got)
	}
	// the system instance's log is a host path: it is read under --root,
	// a private instance's is the real path whatever the root
	h := sysfstree.FakeRoot(t, map[string]string{SystemLogFile: log})
	if tail := ReadLogTail(h, TargetFor(h, "", "")); len(tail) != 2 || !strings.Contains(tail[1], "initialized") {
		t.Fatalf("system log under the root: %q", tail)
	}
	if tail := ReadLogTail(h, Target{LogFile: p, Private: true}); len(tail) != 2 {
		t.Fatalf("private log under a fixture root: %q", tail)
	}
}
