package ovs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rig/internal/host"
	"rig/internal/testutil/sysfstree"
)

// A write that ovs-vsctl's --timeout killed (SIGALRM, as recorded from a
// real ovs-vsctl waiting on a dead vswitchd) is explained by the process
// state: vswitchd gone -> VswitchdDiedError; vswitchd alive -> a timeout
// that names the live pid.
func TestWriteTimeoutExplained(t *testing.T) {
	run := t.TempDir()
	root := t.TempDir()
	alarm := func(ctx context.Context, name string, args ...string) ([]byte, error) {
		return nil, &host.ToolError{Argv: append([]string{name}, args...), Err: errors.New("signal: alarm clock"),
			Stderr: "2026-12-01T10:40:34Z|00002|fatal_signal|WARN|terminating with signal 14 (Alarm clock)\n"}
	}
	if err := os.WriteFile(filepath.Join(run, "ovs-vswitchd.pid"), []byte("4242\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := &host.Host{Root: root, Exec: alarm}
	c := &Client{host: h, Target: Target{DB: "unix:" + run + "/db.sock", RunDir: run, LogFile: run + "/ovs-vswitchd.log", Private: true}, Timeout: 2}
	err := c.AddBridge(context.Background(), "br0", "netdev")
	var died *VswitchdDiedError
	if !errors.As(err, &died) || died.Diagnosis.Kind != ProblemVswitchdDied ||
		!strings.Contains(err.Error(), "ovs-vswitchd died during the write (after the failure "+run+"/ovs-vswitchd.pid: pid 4242 from the pidfile is not running (stale pidfile))") ||
		died.Diagnosis.Fix != "start it: rig ovs daemon start --rundir "+run+" (see "+run+"/ovs-vswitchd.log for why it stopped)" {
		t.Fatalf("dead vswitchd: %v (%+v)", err, died)
	}
	// alive: the timeout stays a timeout, naming the live pid
	if err := os.MkdirAll(filepath.Join(root, "proc/4242"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "proc/4242/stat"), []byte("4242 (ovs-vswitchd) S 1 4242 4242 0 -1"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = c.AddBridge(context.Background(), "br0", "netdev")
	if errors.As(err, &died) || !strings.Contains(err.Error(), "ovs-vswitchd pid 4242 is running but did not apply the change within 2 s") {
		t.Fatalf("live vswitchd: %v", err)
	}
	// a write refused for another reason is left alone
	h.Exec = func(ctx context.Context, name string, args ...string) ([]byte, error) {
		return nil, &host.ToolError{Argv: args, Err: errors.New("exit status 1"), Stderr: "ovs-vsctl: no bridge named br0\n"}
	}
	if err := c.SetBridgeDatapath(context.Background(), "br0", "netdev"); errors.As(err, &died) || strings.Contains(err.Error(), "running") {
		t.Fatalf("other error: %v", err)
	}
}

// --db alone: the socket's directory is a private instance when conf.db and
// ovsdb-server.pid are there on the live machine (a socket is a real path,
// whatever --root says); the same files under the root do not count.
func TestTargetForDBChecksLiveFiles(t *testing.T) {
	live := t.TempDir()
	for _, n := range []string{"conf.db", "ovsdb-server.pid"} {
		if err := os.WriteFile(filepath.Join(live, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h := sysfstree.FakeRoot(t, map[string]string{"/srv/ovs/conf.db": "x", "/srv/ovs/ovsdb-server.pid": "1\n"})
	if got := TargetFor(h, "", "unix:"+live+"/db.sock"); !got.Private || got.RunDir != live || got.LogFile != live+"/ovs-vswitchd.log" {
		t.Errorf("live private dir: %+v", got)
	}
	if got := TargetFor(h, "", "unix:/srv/ovs/db.sock"); got.Private || got.LogFile != SystemLogFile {
		t.Errorf("files only under the root: %+v, want the system instance's log", got)
	}
}

// No flags: the default rundir holds a rig-started instance (conf.db and
// ovsdb-server.pid there, live) → private, restarted by pid, log in the
// rundir; a rundir with only a pidfile (Debian's instance keeps conf.db in
// /etc/openvswitch) → the system instance.
func TestDefaultTargetRecognisesRigStartedInstance(t *testing.T) {
	dir := t.TempDir()
	h := sysfstree.FakeRoot(t, nil)
	if got := defaultTarget(h, dir); got.Private || got.DB != "" || got.LogFile != SystemLogFile || got.RunDir != dir {
		t.Errorf("empty rundir: %+v, want the system instance", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "ovsdb-server.pid"), []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := defaultTarget(h, dir); got.Private {
		t.Errorf("pidfile without conf.db: %+v, want the system instance", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "conf.db"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := Target{DB: "unix:" + dir + "/db.sock", RunDir: dir, LogFile: dir + "/ovs-vswitchd.log", Private: true}
	if got := defaultTarget(h, dir); got != want {
		t.Errorf("rig-started instance: %+v, want %+v", got, want)
	}
	if got := TargetFor(h, "", ""); got.RunDir != SystemRunDir {
		t.Errorf("TargetFor with no flags: rundir %s, want %s", got.RunDir, SystemRunDir)
	}
}

func TestProcessStatusStale(t *testing.T) {
	h := sysfstree.FakeRoot(t, map[string]string{
		"/var/run/openvswitch/ovs-vswitchd.pid": "4242\n",
		"/proc/4242/stat":                       "4242 (ovs-vswitchd-dp) S 1 4242 4242 0 -1 4194624",
		"/run/b/ovs-vswitchd.pid":               "77\n",
		"/proc/77/stat":                         "77 (bash) S 1 77 77 0 -1",
		"/run/z/ovs-vswitchd.pid":               "78\n",
		"/proc/78/stat":                         "78 (ovs-vswitchd-dp) Z 1 78 78 0 -1",
		"/run/g/ovs-vswitchd.pid":               "79\n",
		"/run/j/ovs-vswitchd.pid":               "junk\n",
	})
	if ps := ProcessStatus(h, TargetFor(h, "", ""), "ovs-vswitchd"); !ps.Alive || ps.PID != 4242 {
		t.Errorf("alive: %+v", ps)
	}
	for p, note := range map[string]string{"/run/b": "is \"bash\" now", "/run/z": "zombie", "/run/g": "not running",
		"/run/j": "not a pid", "/run/none": "no pidfile"} {
		ps := ProcessStatus(h, Target{RunDir: p}, "ovs-vswitchd")
		if ps.Alive || !strings.Contains(ps.Note, note) {
			t.Errorf("%s: %+v, want note %q", p, ps, note)
		}
	}
}

// Attached is the one rule rig ovs status and the ovs step share: a port is
// attached only with an ofport above 0 and no error (0 = not yet/never
// added, -1 = failed).
func TestInterfaceAttached(t *testing.T) {
	for _, c := range []struct {
		ofport int64
		err    string
		want   bool
	}{{1, "", true}, {65534, "", true}, {0, "", false}, {-1, "", false}, {3, "could not open network device x (No such device)", false}} {
		if got := (Interface{Name: "x", OFPort: c.ofport, Error: c.err}).Attached(); got != c.want {
			t.Errorf("ofport %d error %q: Attached() = %v, want %v", c.ofport, c.err, got, c.want)
		}
	}
}
