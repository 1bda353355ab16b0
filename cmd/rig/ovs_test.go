package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"rig/internal/host"
	"rig/internal/testutil/hugetest"
	"rig/ovs/ovstest"
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
	d := ovstest.Start(t, host.New("/")) // DPDK is not initialised: no hugepages needed
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
	d := ovstest.Start(t, host.New("/")) // DPDK is not initialised: no hugepages needed
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

// docaPlaybook is NVIDIA DPF's OVS-DOCA layout on a BlueField-3: doca-init,
// a netdev bridge, p0 and pf0hpf by netdev name (no devargs).
const docaPlaybook = "name: doca\novs:\n  config:\n    doca-init: true\n    hw-offload: true\n  bridges:\n    - name: br-sfc\n      ports:\n" +
	"        - name: p0\n        - name: pf0hpf\n          mtu_request: 9216\n"

// On the BlueField-3 fixture the OVS-DOCA playbook plans ports without
// devargs and says what OVS-DOCA resolves each name to; without doca-init
// the same ports are refused at validation (exit 2, file:line, the fix).
func TestPlanDOCAPlaybookOnFixture(t *testing.T) {
	dir := t.TempDir()
	pb := filepath.Join(dir, "doca.yaml")
	if err := os.WriteFile(pb, []byte(docaPlaybook), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := rig(t, "plan", "-p", pb, "--root", "../../testdata/hosts/bf3-dpu-arm")
	for _, want := range []string{
		"+ ovs other_config: set doca-init true",
		"+ ovs port p0: add port to br-sfc type=dpdk (no devargs: OVS-DOCA resolves netdev p0)",
		"· p0: no devargs, OVS-DOCA resolves it by its netdev name: uplink (phys_port_name p0) of 0000:03:00.0",
		"· pf0hpf: no devargs, OVS-DOCA resolves it by its netdev name: host-PF representor (phys_port_name c1pf0) on 0000:03:00.0",
		"· ovs: config.doca-init: true says this OvS is NVIDIA's OVS-DOCA; not checked against a fixture root",
	} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("plan: exit %d, missing %q\n%s%s", code, want, out, errOut)
		}
	}
	// the embedded playbook plans the same ports on the fixture
	code, out, errOut = rig(t, "plan", "-p", "bf3-doca", "--only", "ovs", "--root", "../../testdata/hosts/bf3-dpu-arm")
	if code != exitOK || !strings.Contains(out, "+ ovs port pf0hpf: add port to br-sfc type=dpdk mtu_request=9216 (no devargs: OVS-DOCA resolves netdev pf0hpf)") {
		t.Errorf("plan bf3-doca: exit %d\n%s%s", code, out, errOut)
	}
	up := filepath.Join(dir, "up.yaml")
	if err := os.WriteFile(up, []byte(strings.Replace(docaPlaybook, "    doca-init: true\n", "", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = rig(t, "plan", "-p", up, "--root", "../../testdata/hosts/bf3-dpu-arm")
	if code != exitUsage || out != "" || !strings.Contains(errOut, up+":8: ovs.bridges[0].ports[0].devargs: a dpdk port needs devargs") ||
		!strings.Contains(errOut, "if this host runs it, set ovs.config.doca-init: true (upstream Open vSwitch rejects the port: \"'p0' is missing 'options:dpdk-devargs'\")") {
		t.Fatalf("without doca-init: exit %d\n%s%s", code, out, errOut)
	}
}

// For real on upstream OvS 3.1: `rig up` with the OVS-DOCA playbook stops
// before any write (exit 1, "not NVIDIA's OVS-DOCA"); a port added by hand
// without devargs shows in `rig ovs status` as resolved by nothing, with
// the cause and fix, next to a port whose devargs are given (text, JSON).
func TestPrivilegedOVSStatusResolution(t *testing.T) {
	d := ovstest.Start(t, host.New("/"), hugetest.OVS(128, 0)) // the vdev playbook's socket memory
	dir := t.TempDir()
	pb := filepath.Join(dir, "doca.yaml")
	if err := os.WriteFile(pb, []byte(docaPlaybook), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := rig(t, "up", "-p", pb, "--rundir", d.Dir, "--lock-file", d.Dir+"/lock")
	if code != exitFailure || !strings.Contains(out, "this Open vSwitch is not NVIDIA's OVS-DOCA: its database has no doca_initialized column") {
		t.Fatalf("up doca: exit %d\n%s%s", code, out, errOut)
	}
	vdev := filepath.Join(dir, "vdev.yaml")
	if err := os.WriteFile(vdev, []byte("name: v\novs:\n  config:\n    dpdk-init: try\n    dpdk-socket-mem: \"128\"\n    dpdk-extra: \"--no-pci --no-telemetry\"\n"+
		"  bridges:\n    - name: br-sfc\n      ports:\n        - name: vnull0\n          devargs: net_null0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := rig(t, "up", "-p", vdev, "--rundir", d.Dir, "--lock-file", d.Dir+"/lock"); code != exitOK {
		t.Fatalf("up vdev: exit %d\n%s%s", code, out, errOut)
	}
	if out, err := exec.Command("ovs-vsctl", "--db=unix:"+d.Dir+"/db.sock", "--timeout=30", "add-port", "br-sfc", "p0", "--", "set", "Interface", "p0", "type=dpdk").CombinedOutput(); err != nil {
		t.Fatalf("add-port p0: %v\n%s", err, out)
	}
	code, out, errOut = rig(t, "ovs", "status", "--rundir", d.Dir)
	for _, want := range []string{
		"DEVARGS    RESOLUTION",
		"none (no devargs, and this OvS resolves no names)  'p0' is missing 'options:dpdk-devargs'",
		"net_null0  devargs given",
		"- ovs: port p0: 'p0' is missing 'options:dpdk-devargs'. The old 'dpdk<port_id>' names are not supported\n",
		"cause: a type=dpdk port needs options:dpdk-devargs in upstream Open vSwitch; resolving a port by its netdev name alone is NVIDIA OVS-DOCA's extension",
	} {
		if code != exitFailure || !strings.Contains(out, want) {
			t.Errorf("status: exit %d, missing %q\n%s%s", code, want, out, errOut)
		}
	}
	_, out, _ = rig(t, "ovs", "status", "--rundir", d.Dir, "-o", "json")
	var st struct {
		DOCA    bool `json:"doca"`
		Bridges []struct {
			Ports []struct {
				Interfaces []struct{ Name, Resolution string }
			}
		}
		Problems []struct{ Kind string }
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.DOCA || len(st.Problems) != 1 || st.Problems[0].Kind != "devargs-missing" {
		t.Fatalf("json: %v\n%s", err, out)
	}
	got := map[string]string{}
	for _, b := range st.Bridges {
		for _, p := range b.Ports {
			for _, i := range p.Interfaces {
				got[i.Name] = i.Resolution
			}
		}
	}
	if !reflect.DeepEqual(got, map[string]string{"br-sfc": "", "p0": "none", "vnull0": "devargs"}) {
		t.Fatalf("resolutions: %v", got)
	}
}
