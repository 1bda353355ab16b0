package diagnose

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rig/internal/host"
	"rig/ovs"
	"rig/ovs/ovstest"
)

// The verdict follows the facts: dpdk_initialized=false is never "ok",
// whether DPDK was not requested or was requested and did not start.
func TestStatusVerdictFollowsDPDK(t *testing.T) {
	empty, err := os.ReadFile(filepath.Join("..", "testdata", "state-empty.json")) // recorded right after `rig ovs daemon start`
	if err != nil {
		t.Fatal(err)
	}
	requested := bytes.Replace(empty, []byte(`["map",[]]`), []byte(`["map",[["dpdk-init","true"]]]`), 1)
	attached, err := os.ReadFile(filepath.Join("..", "testdata", "state-attached.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		state []byte
		ok    bool
		kind  string
		text  []string
	}{
		{"dpdk-init unset", empty, false, ProblemDPDKNotRequested, []string{"dpdk_initialized:  false\n",
			"NOT OK: 1 problem(s):\n- ovs: dpdk: DPDK not requested: other_config:dpdk-init is unset\n"}},
		{"dpdk-init=true, not initialised", requested, false, ProblemDPDKNotInit, []string{
			"NOT OK: 1 problem(s):\n- ovs: dpdk: dpdk-init=true but dpdk_initialized=false\n",
			"cause: ovs-vswitchd was started before other_config:dpdk-init was set"}},
		{"attached", attached, true, "", []string{"\nok: DPDK initialised (DPDK 22.11.11), ovs-vswitchd running, "}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := ReadStatus(context.Background(), ovs.NewClient(ovstest.StatusHost(t, c.state), ovs.TargetFor(host.New("/"), "", "")))
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := s.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			if s.OK != c.ok || (c.kind != "" && (len(s.Problems) != 1 || s.Problems[0].Kind != c.kind)) || (!c.ok && strings.Contains(out, "ok:")) {
				t.Fatalf("ok=%v problems=%+v\n%s", s.OK, s.Problems, out)
			}
			for _, w := range c.text {
				if !strings.Contains(out, w) {
					t.Errorf("missing %q in:\n%s", w, out)
				}
			}
		})
	}
}

// vswitchd down with rig's restart marker in the rundir: status says a rig
// run was interrupted mid-restart and that `rig up` finishes it.
func TestStatusInterruptedRestart(t *testing.T) {
	empty, err := os.ReadFile(filepath.Join("..", "testdata", "state-empty.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	d := &ovs.Daemon{Dir: dir}
	if err := d.BeginRestart(); err != nil {
		t.Fatal(err)
	}
	h := &host.Host{Root: t.TempDir(), Exec: func(ctx context.Context, name string, args ...string) ([]byte, error) { return empty, nil }}
	s, err := ReadStatus(context.Background(), ovs.NewClient(h, ovs.TargetFor(h, dir, "")))
	if err != nil {
		t.Fatal(err)
	}
	if s.OK || len(s.Problems) != 1 || s.Problems[0].Kind != ovs.ProblemVswitchdDown ||
		!strings.Contains(s.Problems[0].Cause, "a rig run stopped ovs-vswitchd to restart it and was interrupted before starting it again ("+filepath.Join(dir, ovs.RestartMarker)+": rig (pid ") ||
		s.Problems[0].Fix != "rig up --rundir "+dir+" finishes the restart (or: rig ovs daemon start --rundir "+dir+")" {
		t.Fatalf("%+v", s.Problems)
	}
}
