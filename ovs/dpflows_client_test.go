package ovs

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"rig/internal/host"
)

// DumpDPFlows: exact argv to the private instance's unixctl socket, with and
// without type=offloaded.
func TestDumpDPFlowsArgv(t *testing.T) {
	c, rec, run := fakeClient(t, true, func(name string, args []string) ([]byte, error, bool) {
		if args[len(args)-1] == "type=offloaded" {
			return dpflowsFixture(t, "ovs31-netdev-m-type-offloaded.txt"), nil, true
		}
		return dpflowsFixture(t, "ovs31-netdev-m.txt"), nil, true
	})
	d, err := c.DumpDPFlows(context.Background(), "")
	if err != nil || len(d.Flows) != 3 || d.Type != "" || d.TypeRefused != "" || len(d.Unreadable) != 0 {
		t.Fatalf("%+v %v", d, err)
	}
	off, err := c.DumpDPFlows(context.Background(), DPFlowTypeOffloaded)
	if err != nil || len(off.Flows) != 0 || off.Type != "offloaded" || off.TypeRefused != "" {
		t.Fatalf("offloaded: %+v %v", off, err)
	}
	ctl := run + "/ovs-vswitchd.ctl"
	want := []string{"ovs-appctl -t " + ctl + " --timeout=7 dpctl/dump-flows -m",
		"ovs-appctl -t " + ctl + " --timeout=7 dpctl/dump-flows -m type=offloaded"}
	if got := rec.Lines(); !reflect.DeepEqual(got, want) {
		t.Errorf("argv:\n got %q\nwant %q", got, want)
	}
	if !reflect.DeepEqual(off.Argv, strings.Fields(want[1])) || !reflect.DeepEqual(d.Argv, strings.Fields(want[0])) {
		t.Errorf("dump argv %q / %q", d.Argv, off.Argv)
	}
	sys, rec2, _ := fakeClient(t, false, func(name string, args []string) ([]byte, error, bool) {
		return dpflowsFixture(t, "dpdk-offload.txt"), nil, true
	})
	if d, err := sys.DumpDPFlows(context.Background(), ""); err != nil || len(d.Flows) != 4 {
		t.Fatalf("system: %+v %v", d, err)
	}
	if got := rec2.Lines(); len(got) != 1 || got[0] != "ovs-appctl --timeout=7 dpctl/dump-flows -m" {
		t.Errorf("system argv: %q", got)
	}
}

// An OvS that refuses type=offloaded: the plain dump, and what the OvS
// said. Refusal texts recorded from OvS 3.1 (unknown type; the word taken
// for a datapath name, as by an OvS older than type=).
func TestDumpDPFlowsTypeRefused(t *testing.T) {
	for _, stderr := range []string{"ovs31-type-doca.stderr", "ovs31-extra-arg.stderr", "ovs31-type-bogus.stderr"} {
		refusal := string(dpflowsFixture(t, stderr))
		c, rec, run := fakeClient(t, true, func(name string, args []string) ([]byte, error, bool) {
			if strings.HasPrefix(args[len(args)-1], "type=") {
				return nil, &host.ToolError{Argv: append([]string{name}, args...), Err: errors.New("exit status 2"), Stderr: refusal}, true
			}
			return dpflowsFixture(t, "ovs31-netdev-m.txt"), nil, true
		})
		d, err := c.DumpDPFlows(context.Background(), DPFlowTypeOffloaded)
		if err != nil {
			t.Fatalf("%s: %v", stderr, err)
		}
		if d.Type != "" || d.TypeRefused != strings.TrimSpace(refusal) || len(d.Flows) != 3 {
			t.Errorf("%s: %+v", stderr, d)
		}
		ctl := run + "/ovs-vswitchd.ctl"
		want := []string{"ovs-appctl -t " + ctl + " --timeout=7 dpctl/dump-flows -m type=offloaded", "ovs-appctl -t " + ctl + " --timeout=7 dpctl/dump-flows -m"}
		if got := rec.Lines(); !reflect.DeepEqual(got, want) || !reflect.DeepEqual(d.Argv, strings.Fields(want[1])) {
			t.Errorf("%s argv: %q (dump %q)", stderr, got, d.Argv)
		}
	}
	// ovs-dpctl's refusal is one too
	if !typeRefused(string(dpflowsFixture(t, "ovs-dpctl-type.stderr"))) {
		t.Error("ovs-dpctl's type refusal not recognised")
	}
}

// Failures: no bridge at all (recorded: both dumps say so) is explained;
// vswitchd down is the appctl diagnosis; a failure that is not the type's
// is not retried without it.
func TestDumpDPFlowsErrors(t *testing.T) {
	nodp := string(dpflowsFixture(t, "ovs31-no-datapath.stderr"))
	c, rec, _ := fakeClient(t, true, func(name string, args []string) ([]byte, error, bool) {
		return nil, &host.ToolError{Argv: append([]string{name}, args...), Err: errors.New("exit status 2"), Stderr: nodp}, true
	})
	_, err := c.DumpDPFlows(context.Background(), DPFlowTypeOffloaded)
	var tp *ToolProblem
	if !errors.As(err, &tp) || tp.Diagnosis.Kind != ProblemNoDatapath || !strings.Contains(tp.Fix(), "bridge") || len(rec.Calls()) != 2 {
		t.Fatalf("no datapath: %v (%d calls)", err, len(rec.Calls()))
	}
	down, rec2, _ := fakeClient(t, true, func(name string, args []string) ([]byte, error, bool) {
		return nil, &host.ToolError{Argv: append([]string{name}, args...), Err: errors.New("exit status 1"),
			Stderr: "2026-12-01T19:12:12Z|00001|unixctl|WARN|failed to connect to " + args[1] + "\novs-appctl: cannot connect to \"" + args[1] + "\" (Connection refused)\n"}, true
	})
	_, err = down.DumpDPFlows(context.Background(), DPFlowTypeOffloaded)
	if !errors.As(err, &tp) || tp.Diagnosis.Kind != ProblemVswitchdDown || len(rec2.Calls()) != 1 {
		t.Fatalf("vswitchd down: %v (%d calls)", err, len(rec2.Calls()))
	}
	if !strings.HasPrefix(err.Error(), "ovs") {
		t.Errorf("error does not name the object: %v", err)
	}
	bad, _, _ := fakeClient(t, true, func(name string, args []string) ([]byte, error, bool) {
		return []byte("flow-dump from the main thread:\nrecirc_id(0),in_port(2), packets:1\n" + string(dpflowsFixture(t, "ovs31-netdev-plain.txt"))), nil, true
	})
	d, err := bad.DumpDPFlows(context.Background(), "")
	if err != nil || len(d.Unreadable) != 1 || d.Unreadable[0].LineNo != 2 || len(d.Flows) != 3 {
		t.Errorf("unreadable line: %+v %v", d, err)
	}
}
