package playbooks

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"rig/internal/devargs"
)

// The embedded playbooks that replay the seeds: each parses and
// validates, and says in its header what it mirrors and how to run it.
func TestSeedPlaybooksValidate(t *testing.T) {
	for name, want := range map[string]struct {
		seed    string
		ports   map[string]string // port -> netdev
		bridges int
	}{
		"bf2-dpu":       {"seed 000", map[string]string{"p0": "p0", "pf0hpf": "pf0hpf"}, 1},
		"bf3-dpu":       {"seed 000", map[string]string{"p0": "p0", "pf0hpf": "pf0hpf"}, 1},
		"connectx-host": {"seed 001", map[string]string{"p0": "enp59s0f0np0", "p1": "enp59s0f1np1"}, 1},
		"cloud-vm":      {"seed 003", map[string]string{}, 1},
	} {
		raw, ok := Embedded(name)
		if !ok {
			t.Fatalf("%s not embedded", name)
		}
		pb, err := Load(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		head := string(raw[:strings.Index(string(raw), "\nname:")])
		if !strings.Contains(head, want.seed) || !strings.Contains(head, "rig up -p "+name) || !strings.Contains(pb.Description, want.seed) {
			t.Errorf("%s: header does not say what it mirrors (%s) and how to run it:\n%s", name, want.seed, head)
		}
		if pb.Hugepages == nil || pb.OVS == nil || len(pb.OVS.Bridges) != want.bridges {
			t.Fatalf("%s: sections %+v", name, pb)
		}
		got := map[string]string{}
		for _, p := range pb.OVS.Bridges[0].Ports {
			if p.Devargs != "" {
				t.Errorf("%s: port %s has raw devargs %q; the seeds' ports are named by netdev", name, p.Name, p.Devargs)
			}
			got[p.Name] = p.Netdev
		}
		if !reflect.DeepEqual(got, want.ports) {
			t.Errorf("%s: ports %v, want %v", name, got, want.ports)
		}
		// masks that a 2-CPU VM has (CPU 0 and 1)
		if m := pb.OVS.Config.PMDCPUMask; m != "0x2" {
			t.Errorf("%s: pmd-cpu-mask %q", name, m)
		}
	}
	if pb, _ := Load("bf2-dpu"); pb.MST == nil || pb.Mode == nil || pb.RDMA == nil || len(pb.RDMA.Ports) != 2 {
		t.Errorf("bf2-dpu lost mst/mode/rdma: %+v", pb)
	}
}

// The guide's two mlx5 devargs profiles, exactly as seed 001 gives them:
// the inline one in the ports, the non-inline one in the header.
func TestConnectXHostProfiles(t *testing.T) {
	const inline = "mprq_en=1,rxqs_min_mprq=1,rxq_cqe_comp_en=1,rxq_pkt_pad_en=1,txq_inline_max=1024,txq_inline_mpw=1024,txqs_min_inline=1,txq_mpw_en=1"
	const nonInline = "mprq_en=0,rxqs_min_mprq=1,rxq_cqe_comp_en=1,rxq_pkt_pad_en=1,txq_inline_max=0,txq_inline_mpw=0,txqs_min_inline=1,txq_mpw_en=1"
	pb, err := Load("connectx-host")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pb.OVS.Bridges[0].Ports {
		if p.MLX5Args != inline || p.NRxq != 3 {
			t.Errorf("port %s: mlx5_args %q n_rxq %d", p.Name, p.MLX5Args, p.NRxq)
		}
	}
	raw, _ := Embedded("connectx-host")
	if !strings.Contains(string(raw), "#     "+nonInline+"\n") || CheckMLX5Args(nonInline) != "" {
		t.Errorf("non-inline profile missing or invalid")
	}
}

// Each seed playbook's check: the topology and ports the story runs (in
// a lab, through-ports from the far ends in the wire netns), ports that
// are the bridge's own, a stated load and thresholds that can fail, on
// the card (from the seeds) and in the lab (lab figures), and a header
// that says where each number comes from (issue 30).
func TestSeedPlaybookCheckSections(t *testing.T) {
	lab := CheckThresholds{MaxLossPct: 1, MaxP99Us: 250000}
	for name, want := range map[string]struct {
		topology  string
		ports     []string
		load      string // on the card (or VM)
		th        CheckThresholds
		lab       *CheckThresholds // nil: no lab section
		hwOffload string
		header    []string
	}{
		"bf2-dpu":       {TopologyThroughPorts, []string{"p0", "pf0hpf"}, LoadNDR, CheckThresholds{MinMpps: 6}, &lab, "true", []string{"seed 000", "lab figures", "12.6 Mpps"}},
		"bf3-dpu":       {TopologyThroughPorts, []string{"p0", "pf0hpf"}, LoadNDR, CheckThresholds{MinMpps: 6}, &lab, "true", []string{"seed 000", "lab figures", "12.6 Mpps"}},
		"connectx-host": {TopologyThroughPorts, []string{"p0", "p1"}, LoadNDR, CheckThresholds{MinLineRatePct: 10}, &lab, "false", []string{"Seed 001", "lab figures", "148.8 Mpps"}},
		"cloud-vm":      {TopologyThroughBridge, nil, LoadMax, CheckThresholds{MinMpps: 0.5, MaxLossPct: 2}, nil, "false", []string{"# Thresholds (check): ", "loss\n# budget"}},
	} {
		pb, err := Load(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		c := pb.Check
		if c == nil {
			t.Fatalf("%s: no check section", name)
		}
		if c.TopologyOrDefault() != want.topology || !reflect.DeepEqual(c.Ports, want.ports) {
			t.Errorf("%s: check %s ports %v, want %s %v", name, c.TopologyOrDefault(), c.Ports, want.topology, want.ports)
		}
		bridgePorts := map[string]bool{}
		for _, p := range pb.OVS.Bridges[0].Ports {
			bridgePorts[p.Name] = true
		}
		for _, p := range c.Ports {
			if !bridgePorts[p] {
				t.Errorf("%s: check port %s is not a port of bridge %s", name, p, pb.OVS.Bridges[0].Name)
			}
		}
		if c.FarEndNetNS != "" {
			t.Errorf("%s: far_end_netns %q: left unset, a lab fills in its wire netns", name, c.FarEndNetNS)
		}
		if !reflect.DeepEqual(c.Sizes(), []int{64}) || c.WarmupOrDefault().String() != "1s" || c.Thresholds != want.th || c.LoadKind() != want.load || !c.LoadNamed() && want.load != LoadNDR {
			t.Errorf("%s: check sizes %v after %v, load %s, thresholds %+v", name, c.Sizes(), c.WarmupOrDefault(), c.LoadKind(), c.Thresholds)
		}
		if want.load == LoadNDR && (c.NDR.MaxTrialsOrDefault() > 12 || c.DurationOrDefault().Seconds() > 5) {
			t.Errorf("%s: the card's search: %d trials of %v, want at most 12 of 5s", name, c.NDR.MaxTrialsOrDefault(), c.DurationOrDefault())
		}
		switch l := c.InLab(); {
		case want.lab == nil && c.Lab != nil:
			t.Errorf("%s: a lab section %+v, want none", name, c.Lab)
		case want.lab != nil && (c.Lab == nil || l.LoadKind() != LoadRate || l.Thresholds != *want.lab || l.Rate != "20kpps" || l.DurationOrDefault().Seconds() > 2):
			t.Errorf("%s: in a lab: load %s %s, %v, thresholds %+v; want a fixed rate, at most 2s, thresholds %+v", name, l.LoadKind(), l.Rate, l.DurationOrDefault(), l.Thresholds, *want.lab)
		}
		got := ""
		if h := pb.OVS.Config.HWOffload; h != nil {
			got = fmt.Sprint(*h)
		}
		if got != want.hwOffload || c.OffloadOrDefault() != OffloadPreferred {
			t.Errorf("%s: hw-offload %q, offload %s; want %q, preferred", name, got, c.OffloadOrDefault(), want.hwOffload)
		}
		raw, _ := Embedded(name)
		for _, h := range want.header {
			if !strings.Contains(string(raw), h) {
				t.Errorf("%s: the header does not say where its numbers come from: no %q", name, h)
			}
		}
	}
}

// FuzzCheckMLX5Args: never panics; what it accepts, appended to a PCI
// address, is valid devargs syntax and names no representor.
func FuzzCheckMLX5Args(f *testing.F) {
	for _, s := range []string{"txq_inline_max=1024", "mprq_en=1,rxqs_min_mprq=1", "representor=[0]", "a", "a=,b=[1,2]", ",", "x=1,,y=2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, a string) {
		if CheckMLX5Args(a) != "" {
			return
		}
		d := "0000:03:00.0," + a
		if msg := devargs.Check(d); msg != "" {
			t.Fatalf("%q accepted, but %q: %s", a, d, msg)
		}
		if strings.Contains(","+a, ",representor=") {
			t.Fatalf("%q accepted with a representor", a)
		}
	})
}
