package ovs

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

// Recorded dump-flows lines: with --names, OpenFlow 1.5 (reset_counts,
// idle_age), and the NXST_FLOW header of a plain dump.
func TestParseFlows(t *testing.T) {
	fl, err := ParseFlows(fixture(t, "dump-flows-cookie.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := Flow{Line: "cookie=0x5252, duration=6.459s, table=0, n_packets=106752, n_bytes=6832128, priority=20,in_port=v1 actions=output:v0,output:n2",
		Cookie: 0x5252, Priority: 20, NPackets: 106752, NBytes: 6832128, Match: "priority=20,in_port=v1", Actions: "output:v0,output:n2"}
	if len(fl) != 2 || !reflect.DeepEqual(fl[1], want) {
		t.Errorf("flows:\n got %+v\nwant %+v", fl, want)
	}
	of15, err := ParseFlows(fixture(t, "dump-flows-of15.txt"))
	if err != nil || len(of15) != 3 || of15[2].Cookie != 0 || of15[2].Priority != 1 || of15[2].Actions != "drop" || of15[0].Match != "priority=20,in_port=v0" {
		t.Errorf("of15: %+v %v", of15, err)
	}
	hdr, err := ParseFlows(fixture(t, "dump-flows-header.txt"))
	if err != nil || len(hdr) != 1 || hdr[0].Match != "priority=1" {
		t.Errorf("header: %+v %v", hdr, err)
	}
	def, err := ParseFlows([]byte(" cookie=0x1, duration=1.0s, table=3, n_packets=0, n_bytes=0, actions=NORMAL\n"))
	if err != nil || def[0].Priority != 32768 || def[0].Table != 3 || def[0].Match != "" {
		t.Errorf("default priority: %+v %v", def, err)
	}
	for _, bad := range []string{"cookie=0x1, table=0\n", "cookie=0xzz, table=0, actions=drop\n", "cookie=0x1, n_packets=-1, actions=drop\n"} {
		if f, err := ParseFlows([]byte(bad)); err == nil {
			t.Errorf("%q: no error: %+v", bad, f)
		}
	}
}

// AddFlows: one add-flow argv per flow, checked before the first exec;
// del/dump by exact cookie; cookie 0 refused.
func TestFlowsArgv(t *testing.T) {
	c, rec, run := fakeClient(t, true, func(name string, args []string) ([]byte, error, bool) {
		if strings.Contains(strings.Join(args, " "), "dump-flows") {
			return fixture(t, "dump-flows-cookie.txt"), nil, true
		}
		return nil, nil, true
	})
	ctx := context.Background()
	mgmt := "unix:" + run + "/br0.mgmt"
	pre := "ovs-ofctl --timeout=7 -OOpenFlow10,OpenFlow11,OpenFlow12,OpenFlow13,OpenFlow14,OpenFlow15 "
	flows := []string{`cookie=0x5252,priority=20,in_port="n 1",actions=output:2`, "cookie=0x5252,priority=20,in_port=2,actions=output:1"}
	if err := c.AddFlows(ctx, "br0", flows...); err != nil {
		t.Fatal(err)
	}
	if err := c.DelFlowsByCookie(ctx, "br0", 0x5252); err != nil {
		t.Fatal(err)
	}
	lines, err := c.FlowsByCookie(ctx, "br0", 0x5252)
	if err != nil || len(lines) != 2 || !strings.HasPrefix(lines[0], "cookie=0x5252, duration=6.509s") {
		t.Fatalf("%q %v", lines, err)
	}
	want := []string{pre + "add-flow " + mgmt + " " + flows[0], pre + "add-flow " + mgmt + " " + flows[1],
		pre + "del-flows " + mgmt + " cookie=0x5252/-1", pre + "dump-flows --names " + mgmt + " cookie=0x5252/-1"}
	if got := rec.Lines(); !reflect.DeepEqual(got, want) {
		t.Errorf("argv:\n got %q\nwant %q", got, want)
	}
	if argv := rec.Calls()[0]; argv[len(argv)-1] != flows[0] {
		t.Errorf("a flow must be one argv word: %q", argv)
	}
	rec.Reset()
	for _, bad := range [][]string{{"ok=1", ""}, {"in_port=1,actions=drop\nin_port=2,actions=drop"}, {"--strict"}} {
		if err := c.AddFlows(ctx, "br0", bad...); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := c.DelFlowsByCookie(ctx, "br0", 0); err == nil || !strings.Contains(err.Error(), "every flow added without a cookie") {
		t.Errorf("cookie 0: %v", err)
	}
	if _, err := c.CookieFlows(ctx, "br0", 0x77); err == nil || !strings.Contains(err.Error(), "returned a flow with cookie 0x5252") {
		t.Errorf("a dump that does not match its cookie: %v", err)
	}
	if n := len(rec.Calls()); n != 1 {
		t.Errorf("refused input ran tools: %q", rec.Lines())
	}
}

func TestPortsWithPrefix(t *testing.T) {
	st := &State{Bridges: []Bridge{
		{Name: "br0", Ports: []Port{{Name: "br0"}, {Name: "rig-chk-b"}, {Name: "rig-chk-a"}, {Name: "dpdk0"}}},
		{Name: "br1", Ports: []Port{{Name: "x"}}}}}
	if got := st.PortsWithPrefix("rig-chk-"); !reflect.DeepEqual(got, map[string][]string{"br0": {"rig-chk-a", "rig-chk-b"}}) {
		t.Errorf("got %v", got)
	}
	c, _, _ := fakeClient(t, true, nil)
	if _, err := c.PortsWithPrefix(context.Background(), ""); err == nil {
		t.Error("empty prefix accepted")
	}
}
