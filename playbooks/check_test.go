package playbooks

import (
	"strings"
	"testing"
	"time"
)

const checkOVS = `ovs:
  bridges:
    - name: br0
      ports:
        - name: p0
          devargs: net_null0
        - name: pf0hpf
          devargs: net_null1
`

func TestParseCheckDefaults(t *testing.T) {
	pb, err := Parse("c.yaml", []byte(checkOVS+"check:\n  thresholds: {min_mpps: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := pb.Check
	if c.TopologyOrDefault() != TopologyThroughBridge || c.TransportOrDefault() != TransportVhostUser || c.BridgeIn(pb.OVS) != "br0" {
		t.Fatalf("defaults: %+v", c)
	}
	if s := c.Sizes(); len(s) != 1 || s[0] != 64 {
		t.Fatalf("sizes %v", s)
	}
	if c.DurationOrDefault() != 5*time.Second || c.WarmupOrDefault() != time.Second || c.FlowsOrDefault() != 1 || c.CoresOrDefault() != 1 {
		t.Fatalf("defaults: %v %v %d %d", c.DurationOrDefault(), c.WarmupOrDefault(), c.FlowsOrDefault(), c.CoresOrDefault())
	}
	if c.Thresholds.MinMpps != 1 {
		t.Fatalf("thresholds %+v", c.Thresholds)
	}
}

func TestParseCheckThroughPorts(t *testing.T) {
	pb, err := Parse("c.yaml", []byte(checkOVS+"check:\n  topology: through-ports\n  ports: [p0, pf0hpf]\n  far_end_netns: wire\n  frame_sizes: [64, 1518]\n  warmup: 0s\n  rate: 50%\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := pb.Check
	if c.Ports[1] != "pf0hpf" || c.FarEndNetNS != "wire" || len(c.Sizes()) != 2 || c.WarmupOrDefault() != 0 || c.Rate != "50%" {
		t.Fatalf("%+v", c)
	}
}

// Every field's errors, with file:line and field path.
func TestParseCheckErrors(t *testing.T) {
	cases := []struct{ name, doc, want string }{
		{"topology", checkOVS + "check:\n  topology: around\n", `c.yaml:10: check.topology: want through-bridge`},
		{"several bridges", "ovs:\n  bridges:\n    - name: a\n    - name: b\ncheck:\n  duration: 1s\n", "c.yaml:5: check.bridge: the ovs section has 2 bridges (a, b); name the one to check"},
		{"no ovs no bridge", "check:\n  duration: 1s\n", "c.yaml:1: check.bridge: no bridge to check"},
		{"bad bridge", "check:\n  bridge: \"br 0\"\n", `c.yaml:2: check.bridge: want a bridge name`},
		{"transport", checkOVS + "check:\n  transport: tcp\n", `c.yaml:10: check.transport: want vhost-user (default) or memif, got "tcp"`},
		{"ports on through-bridge", checkOVS + "check:\n  ports: [p0, pf0hpf]\n", "c.yaml:10: check.ports: only through-ports takes ports"},
		{"netns on through-bridge", checkOVS + "check:\n  far_end_netns: wire\n", "c.yaml:10: check.far_end_netns: only through-ports"},
		{"transport on through-ports", checkOVS + "check:\n  topology: through-ports\n  transport: memif\n  ports: [p0, pf0hpf]\n", "c.yaml:11: check.transport: only through-bridge takes a transport"},
		{"one port", checkOVS + "check:\n  topology: through-ports\n  ports: [p0]\n", "c.yaml:11: check.ports: through-ports needs exactly two ports"},
		{"same port", checkOVS + "check:\n  topology: through-ports\n  ports: [p0, p0]\n", "c.yaml:11: check.ports[1]: same port as ports[0]"},
		{"unknown port", checkOVS + "check:\n  topology: through-ports\n  ports: [p0, p9]\n", `c.yaml:11: check.ports[1]: bridge br0 in the ovs section has no port "p9"`},
		{"rig port", "check:\n  bridge: b\n  topology: through-ports\n  ports: [rig-chk-in, p1]\n", `c.yaml:4: check.ports[0]: "rig-chk-in" is a temporary port`},
		{"netns", checkOVS + "check:\n  topology: through-ports\n  ports: [p0, pf0hpf]\n  far_end_netns: ../x\n", `c.yaml:12: check.far_end_netns: want a network namespace name`},
		{"frame size", checkOVS + "check:\n  frame_size: 63\n", "c.yaml:10: check.frame_size: want 64..9000 bytes (FCS included), got 63"},
		{"frame sizes", checkOVS + "check:\n  frame_sizes: [64, 9001]\n", "c.yaml:10: check.frame_sizes[1]: want 64..9000 bytes"},
		{"both sizes", checkOVS + "check:\n  frame_size: 64\n  frame_sizes: [64]\n", "c.yaml:11: check.frame_sizes: give frame_size or frame_sizes, not both"},
		{"duration", checkOVS + "check:\n  duration: 5\n", `c.yaml:10: check.duration: want a duration (e.g. 5s), got "5"`},
		{"short duration", checkOVS + "check:\n  duration: 1ms\n", "c.yaml:10: check.duration: want at least 100ms, got 1ms"},
		{"long duration", checkOVS + "check:\n  duration: 2h\n", "c.yaml:10: check.duration: want at most 1h0m0s, got 2h"},
		{"warmup", checkOVS + "check:\n  warmup: -1s\n", "c.yaml:10: check.warmup: want at least 0s, got -1s"},
		{"rate", checkOVS + "check:\n  rate: fast\n", `c.yaml:10: check.rate: want "" (the zero-loss search), a rate like 1Mpps`},
		{"rate pct", checkOVS + "check:\n  rate: 150%\n", "c.yaml:10: check.rate: want more than 0 (and at most 100%), got 150%"},
		{"rate zero", checkOVS + "check:\n  rate: 0Mpps\n", "c.yaml:10: check.rate: want more than 0"},
		{"flows", checkOVS + "check:\n  flows: -1\n", "c.yaml:10: check.flows: want 1..64512 distinct 5-tuples, got -1"},
		{"cores", checkOVS + "check:\n  cores: 100\n", "c.yaml:10: check.cores: want 1..64 dataplane cores, got 100"},
		{"threshold", checkOVS + "check:\n  thresholds:\n    max_loss_pct: 101\n", "c.yaml:11: check.thresholds.max_loss_pct: want 0 (not checked) up to 100, got 101"},
		{"threshold neg", checkOVS + "check:\n  thresholds:\n    min_mpps: -1\n", "c.yaml:11: check.thresholds.min_mpps: want 0 (not checked) up to 10000, got -1"},
		{"threshold type", checkOVS + "check:\n  thresholds:\n    max_p99_us: lots\n", `c.yaml:11: check.thresholds.max_p99_us: want a number, got "lots"`},
		{"unknown key", checkOVS + "check:\n  size: 64\n", "c.yaml:10: check.size: unknown field"},
	}
	for _, c := range cases {
		_, err := Parse("c.yaml", []byte(c.doc))
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %q\nwant substring %q", c.name, err, c.want)
		}
	}
}

// check.offload: preferred by default; off, preferred and required taken;
// anything else refused with file:line and the three values.
func TestParseCheckOffload(t *testing.T) {
	for doc, want := range map[string]string{"": OffloadPreferred, "  offload: off\n": OffloadOff, "  offload: required\n": OffloadRequired, "  offload: preferred\n": OffloadPreferred} {
		pb, err := Parse("c.yaml", []byte(checkOVS+"check:\n"+doc+"  thresholds: {min_mpps: 1}\n"))
		if err != nil {
			t.Fatalf("%q: %v", doc, err)
		}
		if got := pb.Check.OffloadOrDefault(); got != want {
			t.Errorf("%q: offload %q, want %q", doc, got, want)
		}
	}
	_, err := Parse("c.yaml", []byte(checkOVS+"check:\n  offload: yes-please\n"))
	if err == nil || !strings.Contains(err.Error(), "c.yaml:10: check.offload: want off, preferred (report whether the check's flows were offloaded) or required (fail unless they were), got") {
		t.Errorf("bad offload: %v", err)
	}
}
