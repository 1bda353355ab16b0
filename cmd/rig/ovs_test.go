package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rig/ovs/ovstest"
	"rig/provision/host"
)

// A 200,000-byte devargs is refused at playbook validation (exit 2) with
// file:line: field, before any ovs-vsctl could run.
func TestPlanRefusesHugeDevargs(t *testing.T) {
	pb := filepath.Join(t.TempDir(), "big.yaml")
	src := "name: big\novs:\n  bridges:\n    - name: br0\n      ports:\n        - name: p0\n          devargs: \"net_null0,x=" + strings.Repeat("a", 200000) + "\"\n"
	if err := os.WriteFile(pb, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := rig(t, "plan", "-p", pb, "--db", "unix:/nonexistent/db.sock")
	if code != exitUsage || !strings.Contains(errOut, pb+":7: ovs.bridges[0].ports[0].devargs: ") ||
		!strings.Contains(errOut, "(200012 bytes) is longer than 1024 bytes") || len(errOut) > 2000 {
		t.Fatalf("exit %d, stdout %q, stderr %.3000q", code, out, errOut)
	}
}

// `rig ovs daemon stop` says what it did per daemon: "stopped NAME (pid N,
// SIGTERM)" for running ones, "NAME was not running (...)" on a second stop.
func TestOVSDaemonStopSaysWhatItDid(t *testing.T) {
	d := ovstest.Start(t, host.New("/"), 64)
	st := d.Status()
	if !st.Running {
		t.Fatalf("not running: %+v", st)
	}
	code, out, errOut := rig(t, "ovs", "daemon", "stop", "--rundir", d.Dir)
	want := fmt.Sprintf("stopped ovs-vswitchd (pid %d, SIGTERM)\nstopped ovsdb-server (pid %d, SIGTERM)\n", st.Vswitchd.PID, st.OVSDB.PID)
	if code != exitOK || out != want {
		t.Fatalf("first stop: exit %d\n got %q\nwant %q\nstderr %s", code, out, want, errOut)
	}
	code, out, errOut = rig(t, "ovs", "daemon", "stop", "--rundir", d.Dir)
	want = "ovs-vswitchd was not running (no pidfile)\novsdb-server was not running (no pidfile)\n"
	if code != exitOK || out != want {
		t.Fatalf("second stop: exit %d\n got %q\nwant %q\nstderr %s", code, out, want, errOut)
	}
}
