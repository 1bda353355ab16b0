package check

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"rig/bench"
	"rig/bench/peer"
	"rig/internal/host"
	"rig/internal/labinfo"
	"rig/ovs"
	"rig/playbooks"
	"rig/provision"
)

// farStep is a through-ports check step on a host root with no lab.
func farStep(t *testing.T, sp *playbooks.CheckSpec) *checkStep {
	t.Helper()
	sp.Topology = playbooks.TopologyThroughPorts
	return &checkStep{env: &Env{Env: provision.Env{Host: &host.Host{Root: t.TempDir()}}}, spec: sp, bridge: "br0"}
}

// Where each far end is: given, far_end_netns, the host-PF representor's
// default (the x86 host across tmfifo_net0); an uplink with none is an
// error naming the command to run on the far machine, never "not
// supported"; a netns far end and a serve one are not mixed.
func TestCheckFarEndsResolve(t *testing.T) {
	s := farStep(t, &playbooks.CheckSpec{Ports: []string{"p0", "pf0hpf"}, FarEnds: map[string]playbooks.FarEnd{"p0": {Serve: "10.0.0.2:7400", Netdev: "eth1"}}})
	ends, err := s.farEnds(nil)
	if err != nil {
		t.Fatal(err)
	}
	if e := ends[1]; e.Serve != "192.168.100.1:7400" || e.hostPF != 0 || e.TokenFileOrDefault() != "/etc/rig/peer.token" || !strings.Contains(e.Source, "tmfifo_net0") {
		t.Fatalf("pf0hpf's default far end: %+v", e)
	}
	if v, p := ends[1].farPort(1); v != afPacketVdev(1, "hostpf:0") || p != "net_af_packet1" {
		t.Errorf("pf0hpf's far port: %q %q", v, p)
	}
	if c := ends[1].serveCommand(); c != "rig bench serve --listen 192.168.100.1:7400 --token-file /etc/rig/peer.token --allow-netdev <the host's PF0 netdev, e.g. ens1f0np0>" {
		t.Errorf("command for the host: %s", c)
	}
	if c := ends[0].serveCommand(); c != "rig bench serve --listen 10.0.0.2:7400 --token-file /etc/rig/peer.token --allow-netdev eth1" {
		t.Errorf("command for the peer: %s", c)
	}
	// an uplink's far end must be given
	s = farStep(t, &playbooks.CheckSpec{Ports: []string{"p0", "pf0hpf"}})
	_, err = s.farEnds(nil)
	var p *provision.Problem
	if !errors.As(err, &p) || !strings.Contains(err.Error(), "check: port p0: no far end") || !strings.Contains(p.Fix(), "rig bench serve --listen ADDR:7400 --token-file /etc/rig/peer.token --allow-netdev NETDEV") ||
		!strings.Contains(p.Fix(), "--far-end p0:serve=ADDR:7400,netdev=NETDEV") || strings.Contains(err.Error(), "not supported") {
		t.Errorf("uplink without a far end: %v", err)
	}
	// far_end_netns: both local, netdevs by the ports' names
	s = farStep(t, &playbooks.CheckSpec{Ports: []string{"p0", "p1"}, FarEndNetNS: "wire"})
	if ends, err := s.farEnds(nil); err != nil || ends[0].NetNS != "wire" || ends[1].Netdev != "p1" || ends[0].Remote() {
		t.Errorf("far_end_netns: %+v %v", ends, err)
	}
	// a lab: its wire netns; in a lab of the three machines, only for the
	// far ends that are not on its host or peer (pf0hpf: the host's serve
	// by default, as on a card; p0: to be given)
	s = farStep(t, &playbooks.CheckSpec{Ports: []string{"pf0vf0", "p1"}})
	if err := labinfo.Write(mkdirRun(t, s), &labinfo.Info{Name: "a", WireNetNS: "rig-lab-a-wire"}); err != nil {
		t.Fatal(err)
	}
	if ends, err := s.farEnds(nil); err != nil || ends[0].NetNS != "rig-lab-a-wire" || ends[1].NetNS != "rig-lab-a-wire" {
		t.Errorf("one-machine lab: %+v %v", ends, err)
	}
	s.spec.Ports = []string{"p0", "pf0hpf"}
	s.spec.FarEnds = map[string]playbooks.FarEnd{"p0": {Serve: "192.168.101.1:7400", Netdev: "p0"}}
	if err := labinfo.Write(mkdirRun(t, s), &labinfo.Info{Name: "a", WireNetNS: "rig-lab-a-wire", Machine: labinfo.MachineArm, HostNetNS: "h", PeerNetNS: "p"}); err != nil {
		t.Fatal(err)
	}
	if ends, err := s.farEnds(nil); err != nil || ends[1].Serve != "192.168.100.1:7400" || ends[1].NetNS != "" {
		t.Errorf("three-machine lab: %+v %v", ends, err)
	}
	// a local far end and a served one
	s = farStep(t, &playbooks.CheckSpec{Ports: []string{"p0", "p1"}, FarEndNetNS: "wire", FarEnds: map[string]playbooks.FarEnd{"p1": {Serve: "h:1", Netdev: "x"}}})
	if _, err := s.farEnds(nil); err == nil || !strings.Contains(err.Error(), "ip netns exec NS rig bench serve") {
		t.Errorf("mixed far ends: %v", err)
	}
}

// mkdirRun makes the step's root's /run/rig (where lab.json lives).
func mkdirRun(t *testing.T, s *checkStep) string {
	t.Helper()
	dir := filepath.Join(s.env.Host.Root, "run", "rig")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The far configs of a trial: one serve runs a loop over both far ports
// (its own placement, no hold); two run a generator (the trial's rate and
// duration) and a receiver (until stopped).
func TestFarTrafficConfigs(t *testing.T) {
	in := farEnd{FarEnd: playbooks.FarEnd{Serve: "a:1", Netdev: "e0"}, Port: "p0", hostPF: -1}
	out := farEnd{FarEnd: playbooks.FarEnd{Serve: "a:1", PCI: "0000:03:00.1"}, Port: "p1", hostPF: -1}
	sp := &playbooks.CheckSpec{Rate: "1Mpps"}
	cfg := checkConfig(sp, pathPorts, []string{"local0", "local1"}, "0@0,1@1", 0)
	cfg.FrameSize, cfg.Rate, cfg.Duration = 64, sp.Rate, 2e9
	gen, rx := (&farTraffic{in: in, out: out}).configs(cfg)
	if gen.Role != bench.RoleLoop || strings.Join(gen.VDevs, " ") != afPacketVdev(0, "e0") || strings.Join(gen.Ports, " ") != "net_af_packet0 0000:03:00.1" ||
		gen.Lcores != "" || gen.Hold != 0 || gen.Rate != "1Mpps" || rx.Role != "" {
		t.Errorf("one serve: %+v / %+v", gen, rx)
	}
	out.Serve = "b:1"
	gen, rx = (&farTraffic{in: in, out: out}).configs(cfg)
	if gen.Role != bench.RoleGen || gen.Duration != 2e9 || gen.Rate != "1Mpps" || strings.Join(gen.Ports, " ") != "net_af_packet0" ||
		rx.Role != bench.RoleRx || rx.Duration != 0 || rx.Rate != "" || len(rx.VDevs) != 0 || strings.Join(rx.Ports, " ") != "0000:03:00.1" {
		t.Errorf("two serves: %+v / %+v", gen, rx)
	}
	for _, c := range []bench.Config{gen, rx} {
		c.Defaults()
		c.NoHuge = true
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", c.Role, err)
		}
	}
}

// The check with both far ends on one rig bench serve (in process, on
// loopback; its far runs faked as moving OvS's counters), there and back:
// a loop there per direction, its flow turned round, each way reported
// and passing; a far port serve does not allow fails before any flow or
// far run.
func TestCheckMeasureFarEndsOnServe(t *testing.T) {
	o := newFakeCheckOVS()
	o.st.Bridges[0].Ports = []ovs.Port{
		{Name: "p0", Interfaces: []ovs.Interface{{Name: "p0", Bridge: "br0", Port: "p0", OFPort: 1}}},
		{Name: "p1", Interfaces: []ovs.Interface{{Name: "p1", Bridge: "br0", Port: "p1", OFPort: 2}}},
	}
	var mu sync.Mutex
	var farCfgs []bench.Config
	run := func(ctx context.Context, cfg bench.Config, ready func()) (*bench.Result, error) {
		ready()
		mu.Lock()
		farCfgs = append(farCfgs, cfg)
		in, out := "p0", "p1"
		if strings.Contains(cfg.VDevs[0], "iface=e1") {
			in, out = "p1", "p0"
		}
		ci, co := o.counters[in], o.counters[out]
		ci.RxPackets += 1000
		co.TxPackets += 1000
		o.counters[in], o.counters[out] = ci, co
		mu.Unlock()
		return &bench.Result{Role: bench.RoleLoop, DurationS: 1, Sent: 1000, Received: 1000,
			Ports:   []bench.PortStats{{Name: "net_af_packet0", Driver: "net_af_packet", TxPkts: 1000}, {Name: "net_af_packet1", Driver: "net_af_packet", RxPkts: 1000, RxMpps: 0.001}},
			Latency: &bench.Latency{Samples: 10, P99Us: 9}}, nil
	}
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("far-end-test-token-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := &peer.Server{Token: []byte("far-end-test-token-0123456789"), Run: run, Policy: peer.FarPolicy{Netdevs: []string{"e0", "e1"}}}
	go srv.Serve(ctx, ln)
	addr := ln.Addr().String()
	spec := &playbooks.CheckSpec{Topology: playbooks.TopologyThroughPorts, Bridge: "br0", Ports: []string{"p0", "p1"}, Duration: "1s", Warmup: "0s", Rate: "1kpps", Direction: playbooks.DirectionBoth,
		Offload: playbooks.OffloadOff, Thresholds: playbooks.CheckThresholds{MinMpps: 0.0005},
		FarEnds: map[string]playbooks.FarEnd{"p0": {Serve: addr, Netdev: "e0", TokenFile: tok}, "p1": {Serve: addr, Netdev: "e1", TokenFile: tok}}}
	s := newTestCheck(t, spec, o, &fakeDataplane{})
	out, err := s.Measure(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res := out.(*CheckResult)
	if !res.Pass || len(res.Runs) != 1 || len(res.Reverse) != 1 || !res.Runs[0].Loss.Agree || !res.Reverse[0].Loss.Agree || res.Runs[0].Latency == nil ||
		len(res.FarEnds) != 2 || res.FarEnds[1].Serve != addr || res.FarEnds[1].Netdev != "e1" {
		t.Fatalf("result: %+v", res)
	}
	if len(farCfgs) != 2 || farCfgs[0].Role != bench.RoleLoop || !strings.Contains(farCfgs[0].VDevs[0], "iface=e0") || !strings.Contains(farCfgs[1].VDevs[0], "iface=e1") ||
		farCfgs[0].Lcores != "" || farCfgs[0].Hold != 0 {
		t.Fatalf("far configs: %+v", farCfgs)
	}
	want := []string{"add-flow br0 cookie=0x7269672d63686b,priority=65535,in_port=1,actions=output:2", "del-flows br0 0x7269672d63686b",
		"add-flow br0 cookie=0x7269672d63686b,priority=65535,in_port=2,actions=output:1", "del-flows br0 0x7269672d63686b"}
	if !reflect.DeepEqual(o.calls, want) || o.flows != 0 {
		t.Fatalf("OvS calls %q", o.calls)
	}
	var text bytes.Buffer
	_ = res.WriteText(&text)
	for _, w := range []string{"far end of p0: netdev e0 on the machine of rig bench serve " + addr, "back: in p1, out p0", "check: PASS",
		"far ends (generator: serve " + addr + " at p0's far end, receiver: serve " + addr + " at p1's): sent 1000, received 1000",
		"far ends (generator: serve " + addr + " at p1's far end, receiver: serve " + addr + " at p0's): sent 1000",
		"counts agree: the receiver's rx vs OvS egress tx"} {
		if !strings.Contains(text.String(), w) {
			t.Errorf("text lacks %q:\n%s", w, text.String())
		}
	}
	if strings.Contains(text.String(), "rig: sent") {
		t.Errorf("far ends' counts labelled as rig's own:\n%s", text.String())
	}
	// a port serve does not allow: refused before any flow or far run
	o.calls, farCfgs = nil, nil
	spec.FarEnds["p1"] = playbooks.FarEnd{Serve: addr, Netdev: "e9", TokenFile: tok}
	_, err = newTestCheck(t, spec, o, &fakeDataplane{}).Measure(ctx)
	var p *provision.Problem
	if !errors.As(err, &p) || !strings.Contains(err.Error(), "far ends of ports p0 and p1 (netdev e0 and netdev e9 on the machine of rig bench serve "+addr) || !strings.Contains(p.Fix(), "--allow-netdev e0 --allow-netdev e9") || len(o.calls) != 0 || len(farCfgs) != 0 {
		t.Errorf("port not allowed: %v; calls %q, far runs %d", err, o.calls, len(farCfgs))
	}
}

// Drops of far ends on a serve are the far host's ports', named so.
func TestFarDropRoles(t *testing.T) {
	p := &checkPath{far: &farTraffic{in: farEnd{FarEnd: playbooks.FarEnd{Serve: "a:1"}, Port: "p0"}, out: farEnd{FarEnd: playbooks.FarEnd{Serve: "b:1"}, Port: "p1"}}}
	d := []PortDrop{{Role: "rig's receiver"}, {Role: "ingress"}}
	farDropRoles(p, d)
	if d[0].Role != "the far host's receiver port (b:1, port p1's far end)" || d[1].Role != "ingress" {
		t.Errorf("roles %+v", d)
	}
	local := []PortDrop{{Role: "rig's receiver"}}
	farDropRoles(&checkPath{}, local)
	if local[0].Role != "rig's receiver" {
		t.Errorf("a local path's drop renamed: %+v", local)
	}
}
