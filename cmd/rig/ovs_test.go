package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"rig/internal/host"
	"rig/internal/testutil/ovstest"
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
func TestPrivilegedOVSDaemonStopSaysWhatItDid(t *testing.T) {
	d := ovstest.Start(t, host.New("/"), 0) // DPDK is not initialised: no hugepages needed
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

// Right after `rig ovs daemon start` DPDK is not initialised: `rig ovs
// status` says so (text and JSON) and exits 1 instead of "ok".
func TestPrivilegedOVSStatusDPDKNotRequested(t *testing.T) {
	d := ovstest.Start(t, host.New("/"), 0) // DPDK is not initialised: no hugepages needed
	code, out, errOut := rig(t, "ovs", "status", "--rundir", d.Dir)
	if code != exitFailure || strings.Contains(out, "ok:") || !strings.Contains(out, "dpdk_initialized:  false") ||
		!strings.Contains(out, "NOT OK: 1 problem(s):\n- ovs: dpdk: DPDK not requested: other_config:dpdk-init is unset\n") ||
		!strings.Contains(out, "fix:   set ovs.config.dpdk-init: try (or true) in the playbook and run `rig up --rundir "+d.Dir+"`") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr: %s", code, out, errOut)
	}
	code, out, _ = rig(t, "ovs", "status", "--rundir", d.Dir, "-o", "json")
	var st struct {
		OK       bool `json:"ok"`
		Problems []struct{ Kind, Error, Fix string }
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || code != exitFailure || st.OK || len(st.Problems) != 1 || st.Problems[0].Kind != "dpdk-not-requested" {
		t.Fatalf("json: exit %d, %v, %s", code, err, out)
	}
}

// ovsdb unreachable: text gives the cause and fix of `rig up`'s ovs step,
// -o json writes a document with ok: false and them, and the exit is 1.
func TestOVSStatusUnreachable(t *testing.T) {
	if _, err := exec.LookPath("ovs-vsctl"); err != nil {
		t.Skip("needs ovs-vsctl (openvswitch-common)")
	}
	dir := t.TempDir()
	code, out, errOut := rig(t, "ovs", "status", "--rundir", dir)
	if code != exitFailure || !strings.Contains(out, "ovsdb:             unix:"+dir+"/db.sock: UNREACHABLE") ||
		!strings.Contains(out, "cause: ovsdb-server of the private instance in "+dir+" is not running") ||
		!strings.Contains(out, "fix:   rig ovs daemon start --rundir "+dir) {
		t.Fatalf("text: exit %d\nstdout:\n%s\nstderr: %s", code, out, errOut)
	}
	code, out, errOut = rig(t, "ovs", "status", "--rundir", dir, "-o", "json")
	var st struct {
		OK        bool `json:"ok"`
		Reachable bool `json:"ovsdbReachable"`
		Problems  []struct{ Kind, Error, Cause, Fix string }
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || code != exitFailure || st.OK || st.Reachable || len(st.Problems) != 1 ||
		st.Problems[0].Kind != "ovsdb-unreachable" || st.Problems[0].Fix != "rig ovs daemon start --rundir "+dir ||
		!strings.Contains(st.Problems[0].Error, "database connection failed") {
		t.Fatalf("json: exit %d, %v\nstdout: %s\nstderr: %s", code, err, out, errOut)
	}
}
