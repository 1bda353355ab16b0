// Package ovstest starts a private OvS-DPDK for privileged tests and
// records the commands rig runs against it.
package ovstest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"rig/internal/host"
	"rig/internal/testutil"
	"rig/internal/testutil/hugetest"
	"rig/ovs"
)

// Recorder wraps an ExecFunc and records every argv.
type Recorder struct {
	Next  host.ExecFunc
	mu    sync.Mutex
	calls [][]string
}

// Exec is the recording ExecFunc.
func (r *Recorder) Exec(ctx context.Context, name string, args ...string) ([]byte, error) {
	r.mu.Lock()
	r.calls = append(r.calls, append([]string{name}, args...))
	r.mu.Unlock()
	next := r.Next
	if next == nil {
		next = host.RealExec
	}
	return next(ctx, name, args...)
}

// Calls returns every argv so far.
func (r *Recorder) Calls() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]string(nil), r.calls...)
}

// Reset forgets the recorded calls.
func (r *Recorder) Reset() {
	r.mu.Lock()
	r.calls = nil
	r.mu.Unlock()
}

// Writes returns the calls that may change something: everything except
// an ovs-vsctl whose only commands are `list`.
func (r *Recorder) Writes() [][]string {
	var out [][]string
	for _, c := range r.Calls() {
		if !IsRead(c) {
			out = append(out, c)
		}
	}
	return out
}

// IsRead reports an ovs-vsctl argv made only of list commands.
func IsRead(argv []string) bool {
	if len(argv) == 0 || argv[0] != "ovs-vsctl" {
		return false
	}
	cmds := 0
	expectCmd := true
	for _, a := range argv[1:] {
		if a == "--" {
			expectCmd = true
			continue
		}
		if strings.HasPrefix(a, "--") {
			continue
		}
		if expectCmd {
			if a != "list" {
				return false
			}
			cmds++
			expectCmd = false
		}
	}
	return cmds > 0
}

// KeepLogEnv names a file that gets the whole ovs-vswitchd.log of a failed
// test (the test log shows its last 40 lines).
const KeepLogEnv = "RIG_TEST_KEEP_OVS_LOG"

// Start reserves the hugepages the test names (needs: the OvS it will
// configure, hugetest.OVS, and every DPDK process it runs beside it;
// none for an OvS without DPDK), starts a private ovsdb-server and
// ovs-vswitchd-dpdk in a short temp dir (unix socket paths are limited),
// and at cleanup stops both by pid, checks that no process and no socket
// is left, and removes the dir. It skips when not root.
func Start(t testing.TB, h *host.Host, needs ...hugetest.Need) *ovs.Daemon {
	t.Helper()
	testutil.RequirePrivileged(t)
	if _, err := os.Stat(ovs.DefaultVswitchd); err != nil {
		t.Skipf("needs %s (openvswitch-switch-dpdk; `make deps`): %v", ovs.DefaultVswitchd, err)
	}
	if len(needs) > 0 {
		hugetest.ReserveFor(t, needs...)
	}
	testutil.CleanDefaultDPDKRuntimeDir(t) // runs after the stop below
	dir, err := os.MkdirTemp("", "rigovs")
	if err != nil {
		t.Fatal(err)
	}
	d, err := ovs.NewDaemon(h, dir)
	if err != nil {
		t.Fatal(err)
	}
	d.StopWait = 3 * time.Second
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		st := d.Status()
		// the netdev bridges' tap devices must go with the instance
		var taps []string
		if cs, err := ovs.NewClient(h, d.Target()).ReadState(ctx); err == nil {
			for _, b := range cs.Bridges {
				if b.DatapathType == "netdev" {
					taps = append(taps, b.Name)
				}
			}
		}
		if err := d.Stop(ctx); err != nil {
			t.Errorf("ovstest: stop: %v", err)
		}
		for _, n := range taps {
			if _, err := os.Stat(filepath.Join("/sys/class/net", n)); err == nil {
				t.Errorf("ovstest: tap device %s of netdev bridge %s left in the host netns after stop", n, n)
			}
		}
		// A dead daemon may stay a zombie when PID 1 does not reap (as in
		// some containers); ProcessStatus counts that as gone.
		for _, p := range []ovs.ProcStatus{st.OVSDB, st.Vswitchd} {
			if p.PID > 0 {
				if now := ovs.ProcessStatus(h, d.Target(), p.Name); now.Alive {
					t.Errorf("ovstest: %s pid %d still running after stop", p.Name, p.PID)
				}
				if b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.PID), "stat")); err == nil &&
					strings.Contains(string(b), "ovs") && !strings.Contains(string(b), ") Z ") {
					t.Errorf("ovstest: %s pid %d still running after stop: %s", p.Name, p.PID, b)
				}
			}
		}
		if out, _ := exec.Command("find", dir, "-type", "s").Output(); len(strings.TrimSpace(string(out))) > 0 {
			t.Errorf("ovstest: sockets left in %s: %s", dir, out)
		}
		if t.Failed() {
			if b, err := os.ReadFile(filepath.Join(dir, "ovs-vswitchd.log")); err == nil {
				if k := os.Getenv(KeepLogEnv); k != "" {
					if err := os.WriteFile(k, b, 0o644); err != nil {
						t.Logf("ovstest: %s: %v", KeepLogEnv, err)
					}
				}
				lines := strings.Split(string(b), "\n")
				if len(lines) > 40 {
					lines = lines[len(lines)-40:]
				}
				t.Logf("ovs-vswitchd.log tail:\n%s", strings.Join(lines, "\n"))
			}
		}
		os.RemoveAll(dir)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := d.Start(ctx); err != nil {
		t.Fatalf("ovstest: %v", err)
	}
	return d
}
