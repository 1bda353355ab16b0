package ovsstep

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rig/internal/host"
	"rig/internal/testutil/fakeexec"
	"rig/ovs/ovstest"
	"rig/provision"
	"rig/provision/steptest"
)

// An apply that fails after earlier writes changed OvS says what it had
// written, never "nothing was written".
func TestOVSStepUnitPartialApplySaysWhatWasWritten(t *testing.T) {
	stateDir := t.TempDir()
	sf := filepath.Join(stateDir, "state.json")
	before, after := steptest.Sample(t, "state-empty.json"), steptest.Sample(t, "state-attached.json")
	wrote := false
	f := &fakeexec.Recorder{Answer: func(name string, args []string) ([]byte, error, bool) {
		if ovstest.IsRead(append([]string{name}, args...)) {
			if wrote {
				return after, nil, true
			}
			return before, nil, true
		}
		if !wrote {
			// after the first write the state file can no longer be
			// written: its directory became writable by others
			if err := os.Chmod(stateDir, 0o777); err != nil {
				t.Fatal(err)
			}
		}
		wrote = true
		return nil, nil, true
	}}
	h := systemHost(t, f)
	step, err := NewOVSStep(&provision.Env{Host: h, StateFile: sf}, vdevSpec())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := (&provision.Runner{Steps: []provision.Step{step}}).Execute(context.Background(), provision.RunApply, provision.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	res := rep.Steps[0]
	if res.Status != provision.StatusFailed || res.Phase != provision.PhaseApply {
		t.Fatalf("want a failed apply: %+v", res)
	}
	if strings.Contains(res.Error, "nothing was written") || !strings.Contains(res.Error, "already changed OvS") ||
		!strings.Contains(res.Error, "ovs other_config: set dpdk-extra") {
		t.Fatalf("after a write to OvS the failure says:\n%s", res.Error)
	}
}

// A write that times out while ovsdb-server is dead (its pidfile names a
// pid that is gone) blames ovsdb-server, not a running ovs-vswitchd.
func TestOVSStepUnitWriteTimeoutDBDied(t *testing.T) {
	f := &fakeexec.Recorder{Answer: func(name string, args []string) ([]byte, error, bool) {
		if ovstest.IsRead(append([]string{name}, args...)) {
			return steptest.Sample(t, "state-empty.json"), nil, true
		}
		return nil, &host.ToolError{Argv: append([]string{name}, args...), Stderr: "ovs-vsctl: terminating with signal 14 (Alarm clock)", Err: errors.New("signal: alarm clock")}, true
	}}
	h := systemHost(t, f)
	if err := os.WriteFile(h.Path("/var/run/openvswitch/ovsdb-server.pid"), []byte("4343\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	step, err := NewOVSStep(&provision.Env{Host: h, StateFile: filepath.Join(t.TempDir(), "state.json")}, vdevSpec())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := (&provision.Runner{Steps: []provision.Step{step}}).Execute(context.Background(), provision.RunApply, provision.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	res := rep.Steps[0]
	if res.Status != provision.StatusFailed || !strings.Contains(res.Error, "ovsdb-server") || strings.Contains(res.Error, "ovs-vswitchd pid 4242 is running but") ||
		!strings.Contains(res.Error, "pid 4343") || !strings.Contains(res.Fix, "systemctl restart openvswitch-switch") {
		t.Fatalf("a write with ovsdb-server dead:\nerror %s\ncause %s\nfix %s", res.Error, res.Cause, res.Fix)
	}
}
