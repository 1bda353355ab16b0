package diagnose

import (
	"fmt"
	"strings"
	"testing"

	"rig/internal/host"
	"rig/internal/labinfo"
	"rig/ovs"
	"rig/smartnic"
)

// ovs31Log is an ovs-vswitchd log since its start, each line as OvS 3.1
// writes it (the texts are the strings of Debian's ovs-vswitchd-dpdk 3.1.0:
// lib/netdev-offload.c, lib/dpif-netlink.c, lib/netdev-offload-tc.c).
func ovs31Log(lines ...string) ovs.LogTail {
	out := ovs.LogTail{"2026-12-04T22:58:34.001Z|00001|vlog|INFO|opened log file /var/log/openvswitch/ovs-vswitchd.log"}
	for i, l := range lines {
		out = append(out, "2026-12-04T22:58:36.503Z|"+strings.Repeat("0", 4)+string(rune('1'+i))+"|"+l)
	}
	return out
}

func offloadFixture(t *testing.T, name string) []ovs.DPFlow {
	t.Helper()
	flows, err := ovs.ParseDPFlows(dpflowsFixture(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return flows
}

// The counts and the verdict per port: dp:dpdk full, offloaded:partial,
// dp:ovs; every flow of a port offloaded is "offloaded" with no cause.
func TestAnalyzeOffloadCounts(t *testing.T) {
	flows := offloadFixture(t, "dpdk-offload.txt")
	card := OffloadPort{Name: "p0", Kind: "dpdk 0000:03:00.0", Card: true, ESwitchMode: "switchdev", PCI: "0000:03:00.0"}
	on := map[string]string{"hw-offload": "true"}
	log := ovs31Log("netdev_offload|INFO|netdev: Flow API Enabled", "netdev_offload|INFO|p0: Assigned flow API 'dpdk_flow_api'.")
	r := AnalyzeOffload(OffloadEvidence{Port: card, OtherConfig: on, Log: log, Flows: flows})
	if r.Flows != 3 || r.Offloaded != 2 || r.Partial != 1 || r.NotOffloaded != 0 || r.Packets != 7500012 || r.Datapaths["dpdk"] != 2 ||
		r.Datapaths["ovs"] != 1 || r.Verdict != OffloadVerdictPartial || !r.HWOffload || len(r.FlowList) != 3 {
		t.Fatalf("p0: %+v", r)
	}
	// nothing in the evidence says why the ARP flow is partial
	if len(r.Causes) != 1 || r.Causes[0].Kind != OffloadCauseUnknown || !strings.Contains(r.Causes[0].Fix, "vlog/set netdev_offload_dpdk:file:dbg") {
		t.Errorf("p0 causes: %+v", r.Causes)
	}
	back := AnalyzeOffload(OffloadEvidence{Port: OffloadPort{Name: "pf0hpf", Card: true}, OtherConfig: on, Log: log, Flows: flows})
	if back.Flows != 1 || back.NotOffloaded != 1 || back.Verdict != OffloadVerdictNone {
		t.Errorf("pf0hpf: %+v", back)
	}
	doca := AnalyzeOffload(OffloadEvidence{Port: OffloadPort{Name: "pf0hpf", Card: true}, OtherConfig: on, Log: log, Flows: offloadFixture(t, "doca-offload.txt")})
	if doca.Verdict != OffloadVerdictFull || doca.Offloaded != 1 || doca.Datapaths["doca"] != 1 || len(doca.Causes) != 0 {
		t.Errorf("doca pf0hpf: %+v", doca)
	}
	none := AnalyzeOffload(OffloadEvidence{Port: OffloadPort{Name: "nosuch"}, Flows: flows})
	if none.Verdict != OffloadVerdictNoFlows || none.Flows != 0 || len(none.Causes) != 0 {
		t.Errorf("no flows: %+v", none)
	}
}

// Each cause from its evidence, on the flows of a recorded OvS 3.1 dump
// (a netdev bridge with veth ports: dp:ovs, never offloaded).
func TestAnalyzeOffloadCauses(t *testing.T) {
	flows := offloadFixture(t, "ovs31-netdev-m.txt")
	vhost := OffloadPort{Name: "rdpfa0", Kind: "dpdkvhostuserclient"}
	card := OffloadPort{Name: "rdpfa0", Kind: "dpdk 0000:03:00.0", Card: true, PCI: "0000:03:00.0"}
	enabled := "netdev_offload|INFO|netdev: Flow API Enabled"
	for _, c := range []struct {
		name  string
		port  OffloadPort
		oc    map[string]string
		log   ovs.LogTail
		kinds []string
		want  []string
	}{
		{"hw-offload unset", card, map[string]string{}, ovs31Log(), []string{OffloadCauseOff}, []string{"other_config:hw-offload is not set", "set ovs.config.hw-offload: true"}},
		{"hw-offload false", card, map[string]string{"hw-offload": "false"}, ovs31Log(), []string{OffloadCauseOff}, []string{`other_config:hw-offload is "false"`}},
		{"set after the start", card, map[string]string{"hw-offload": "true"}, ovs31Log("bridge|INFO|bridge br0: using datapath ID 0000"),
			[]string{OffloadCauseNotApplied}, []string{`has no "netdev: Flow API Enabled"`, "restart ovs-vswitchd"}},
		{"tc-policy", card, map[string]string{"hw-offload": "true", "tc-policy": "skip_hw"}, ovs31Log(enabled),
			[]string{OffloadCauseTCPolicy}, []string{"tc-policy is skip_hw"}},
		{"not a representor", vhost, map[string]string{"hw-offload": "true"}, ovs31Log(enabled, "netdev_offload|INFO|rdpfa0: No suitable flow API found."),
			[]string{OffloadCauseNotCard}, []string{"port rdpfa0 is a dpdkvhostuserclient port, not an uplink or representor", "rdpfa0: No suitable flow API found."}},
		{"legacy eSwitch", OffloadPort{Name: "rdpfa0", Card: true, ESwitchMode: "legacy", PCI: "0000:03:00.0"}, map[string]string{"hw-offload": "true"}, ovs31Log(enabled),
			[]string{OffloadCauseLegacy}, []string{"the eSwitch of 0000:03:00.0 is in legacy mode", "devlink dev eswitch set pci/0000:03:00.0 mode switchdev"}},
		{"refused by the driver", card, map[string]string{"hw-offload": "true"},
			ovs31Log(enabled, "dpif_netlink|ERR|failed to offload flow: Invalid argument: p0", "netdev_offload_tc|DBG|can't offload rewrite of IP/IPV6 with ip_proto: 6"),
			[]string{OffloadCauseRefused}, []string{"the NIC driver refused the flow (Invalid argument: p0)", "a set action (IP/IPv6 header rewrite)",
				"failed to offload flow: Invalid argument: p0", "act with: output"}},
		{"lab", OffloadPort{Name: "rdpfa0", Kind: "dpdk net_af_packet_p0,iface=p0", Lab: true}, map[string]string{}, ovs31Log(),
			[]string{OffloadCauseLab, OffloadCauseOff}, []string{"virtual lab's stand-in (dpdk net_af_packet_p0,iface=p0): no mlx5 eSwitch is behind the lab's ports"}},
	} {
		r := AnalyzeOffload(OffloadEvidence{Port: c.port, OtherConfig: c.oc, Log: c.log, Flows: flows})
		var kinds []string
		var text strings.Builder
		for _, k := range r.Causes {
			kinds = append(kinds, k.Kind)
			text.WriteString(k.Cause + " | " + k.Fix + " | " + strings.Join(k.Evidence, " | ") + "\n")
		}
		if r.Verdict != OffloadVerdictNone || r.Flows != 2 || strings.Join(kinds, ",") != strings.Join(c.kinds, ",") {
			t.Errorf("%s: verdict %q, %d flows, causes %v; want %v", c.name, r.Verdict, r.Flows, kinds, c.kinds)
		}
		for _, w := range c.want {
			if !strings.Contains(text.String(), w) {
				t.Errorf("%s: causes lack %q:\n%s", c.name, w, text.String())
			}
		}
	}
}

func TestActionNames(t *testing.T) {
	for in, want := range map[string]string{
		"2":             "output",
		"pf0hpf,br-sfc": "output,output",
		"ct(commit,zone=1,nat(src=10.0.0.1)),recirc(0x2)":   "ct,recirc",
		"set(ipv4(src=10.0.0.2)),push_vlan(vid=10,pcp=0),3": "set,push_vlan,output",
		"drop": "drop",
		"":     "",
	} {
		if got := strings.Join(actionNames(in), ","); got != want {
			t.Errorf("actionNames(%q) = %q, want %q", in, got, want)
		}
	}
}

// What is behind a port, read from the BlueField-2 fixture's sysfs: the
// uplink by PCI address and the host PF representor with the eSwitch's
// mode (switchdev there), a port OVS-DOCA resolves by its netdev, a lab's
// af_packet stand-in, and a vhost-user port (nothing of a card).
func TestPortOffloadFacts(t *testing.T) {
	h := host.New("../../testdata/hosts/bf2-dpu-arm")
	lab := &labinfo.Info{Name: "a", Substitutions: map[string]string{"mlx5": smartnic.AFPacketDriver}}
	dpdk := func(name, devargs string) ovs.Interface {
		return ovs.Interface{Name: name, Type: "dpdk", Options: map[string]string{"dpdk-devargs": devargs}}
	}
	for _, c := range []struct {
		ifc  ovs.Interface
		lab  *labinfo.Info
		want OffloadPort
	}{
		{dpdk("p0", "0000:03:00.0"), nil, OffloadPort{Name: "p0", Kind: "dpdk 0000:03:00.0", Card: true, PCI: "0000:03:00.0", ESwitchMode: "switchdev"}},
		{dpdk("pf0hpf", "0000:03:00.0,representor=[65535]"), nil, OffloadPort{Name: "pf0hpf", Kind: "dpdk 0000:03:00.0,representor=[65535]", Card: true, PCI: "0000:03:00.0", ESwitchMode: "switchdev"}},
		{ovs.Interface{Name: "p0", Type: "dpdk"}, nil, OffloadPort{Name: "p0", Kind: "dpdk", Card: true, PCI: "0000:03:00.0", ESwitchMode: "switchdev"}},
		{dpdk("p0", "net_af_packet_p0,iface=p0,framecnt=8192"), lab, OffloadPort{Name: "p0", Kind: "dpdk net_af_packet_p0,iface=p0,framecnt=8192", Lab: true}},
		{ovs.Interface{Name: "vhu0", Type: "dpdkvhostuserclient"}, lab, OffloadPort{Name: "vhu0", Kind: "dpdkvhostuserclient"}},
	} {
		got := PortOffloadFacts(h, c.lab, c.ifc)
		if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", c.want) {
			t.Errorf("%s: %+v\nwant %+v", c.ifc.Name, got, c.want)
		}
	}
}
