package ovs_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rig/internal/host"
	"rig/ovs"
	"rig/ovs/diagnose"
	"rig/ovs/ovstest"
)

// A real private instance: every file in its dir, status by pid, stop by
// pid leaves no process and no socket, and a second start is a no-op.
func TestPrivilegedDaemonLifecycle(t *testing.T) {
	rec := &ovstest.Recorder{}
	h := &host.Host{Root: "/", Exec: rec.Exec}
	d := ovstest.Start(t, h) // dpdk-init stays unset: no hugepages
	st := d.Status()
	if !st.Running || st.OVSDB.PID <= 0 || st.Vswitchd.PID <= 0 || st.DB != "unix:"+filepath.Join(d.Dir, "db.sock") {
		t.Fatalf("status: %+v", st)
	}
	for _, c := range rec.Calls() {
		for _, a := range c {
			if strings.Contains(a, "/var/run/openvswitch") || strings.Contains(a, "/var/log/openvswitch") {
				t.Errorf("system path in %q", c)
			}
		}
	}
	want := []string{"env", "OVS_RUNDIR=" + d.Dir, "OVS_DBDIR=" + d.Dir, "OVS_LOGDIR=" + d.Dir, ovs.DefaultVswitchd, d.DB(),
		"--pidfile=" + filepath.Join(d.Dir, "ovs-vswitchd.pid"), "--log-file=" + filepath.Join(d.Dir, "ovs-vswitchd.log"),
		"--unixctl=" + filepath.Join(d.Dir, "ovs-vswitchd.ctl"), "--detach", "--no-chdir", "-vconsole:off"}
	calls := rec.Calls()
	if got := calls[len(calls)-1]; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("vswitchd argv:\n got %q\nwant %q", got, want)
	}
	rec.Reset()
	if err := d.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(rec.Calls()) != 0 {
		t.Errorf("second start ran %q", rec.Calls())
	}
	c := ovs.NewClient(h, d.Target())
	s, err := diagnose.ReadStatus(context.Background(), c)
	// right after start dpdk-init is unset: status must not say ok
	if err != nil || !s.Vswitchd.Alive || s.DPDKInitialized || s.OK || len(s.Problems) != 1 ||
		s.Problems[0].Kind != diagnose.ProblemDPDKNotRequested || s.Problems[0].Error != "DPDK not requested: other_config:dpdk-init is unset" {
		t.Fatalf("ovs status: %+v %v", s, err)
	}
	if err := d.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	st = d.Status()
	if st.Running || st.OVSDB.Alive || st.Vswitchd.Alive {
		t.Fatalf("after stop: %+v", st)
	}
	ents, _ := os.ReadDir(d.Dir)
	for _, e := range ents {
		if e.Type()&os.ModeSocket != 0 || strings.HasSuffix(e.Name(), ".pid") {
			t.Errorf("left in %s: %s", d.Dir, e.Name())
		}
	}
	if _, err := c.ReadState(context.Background()); err == nil || !ovs.Unreachable(err) {
		t.Errorf("read after stop: %v", err)
	}
}

func TestNewDaemonRejectsLongDir(t *testing.T) {
	if _, err := ovs.NewDaemon(host.New("/"), "/tmp/"+strings.Repeat("x", 90)); err == nil {
		t.Fatal("want an error for a rundir too long for unix sockets")
	}
}

func TestIsRead(t *testing.T) {
	if !ovstest.IsRead(append([]string{"ovs-vsctl", "--timeout=15"}, ovs.StateArgs()...)) {
		t.Error("StateArgs is a read")
	}
	for _, w := range [][]string{{"ovs-vsctl", "--timeout=15", "add-port", "br", "list"}, {"systemctl", "restart", "x"},
		{"ovs-vsctl", "--format=json", "list", "Bridge", "--", "set", "Bridge", "x"}} {
		if ovstest.IsRead(w) {
			t.Errorf("%q is a write", w)
		}
	}
}
