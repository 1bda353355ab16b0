package diagnose

import (
	"fmt"
	"sort"
	"strings"

	"rig/internal/devargs"
	"rig/internal/labinfo"
	"rig/ovs"
	"rig/smartnic"
)

// Whether the datapath flows that carried a port's traffic were offloaded
// to the NIC, and when not, why, from the evidence an ovs-vswitchd gives:
// its other_config, its log since the last start and the flows themselves.
// The log texts are OvS 3.1's (the strings of Debian's ovs-vswitchd-dpdk
// 3.1.0; upstream sources named at each).

// Log texts of OvS 3.1 that say what happened to hardware offload.
const (
	// lib/netdev-offload.c netdev_set_flow_api_enabled, once hw-offload is
	// true (at start, or when the key is set while it runs): with a
	// thread count since 2.17 ("netdev: Flow API Enabled, using 1 thread").
	logFlowAPIEnabled = "netdev: Flow API Enabled"
	// lib/netdev-offload.c netdev_assign_flow_api: "<port>: Assigned flow
	// API 'dpdk_flow_api'." / "<port>: No suitable flow API found."
	logAssignedFlowAPI = ": Assigned flow API '"
	logNoFlowAPI       = ": No suitable flow API found."
	// lib/dpif-netlink.c parse_flow_put (kernel datapath, tc): "failed to
	// offload flow: <strerror>: <netdev>", at ERR level except ENOSPC and
	// EOPNOTSUPP (debug level: not in the log by default).
	logFailedOffload = "failed to offload flow: "
)

// logActionRefusals are OvS 3.1's lines for an action or match it could
// not put into the NIC (lib/netdev-offload-tc.c netdev_tc_flow_put and its
// helpers; lib/netdev-offload-dpdk.c parse_flow_actions logs
// "Unsupported action type %d" at debug level), with what they refused.
var logActionRefusals = []struct{ text, what string }{
	{"Unsupported action type ", "an action type the offload layer does not take"},
	{"Unknown or unsupported action type.", "an action type the offload layer does not take"},
	{"Unsupported action list - cannot process in the order specified.", "the order of the flow's actions"},
	{"can't offload rewrite of IP/IPV6 with ip_proto", "a set action (IP/IPv6 header rewrite)"},
	{"offloading attribute regs[", "a match on OvS registers (recirculation, conntrack)"},
	{"cannot be offloaded.", "an output to a port of another kind (\"Output to port '...' cannot be offloaded\")"},
	{"Flow API provider mismatch between ingress", "an output between ports of different flow APIs (tc and rte_flow)"},
}

// OffloadPort is the port whose traffic is judged, and what rig knows of
// what is behind it.
type OffloadPort struct {
	Name    string   // its OvS interface name, as dump-flows -m prints in_port
	Aliases []string // other in_port forms: its datapath port number
	Kind    string   // what it is, for messages: "dpdkvhostuserclient", "dpdk net_af_packet0,iface=p0", "dpdk 0000:03:00.0"
	// Card: an uplink or representor of an mlx5 eSwitch (the only ports
	// hardware offload can take); Lab: a virtual lab's stand-in for one
	// (net_af_packet on a veth); ESwitchMode: the card's eSwitch mode when
	// known ("switchdev", "legacy"), "" when not read.
	Card        bool
	Lab         bool
	ESwitchMode string
	PCI         string // the card function behind it, when Card
}

// PortOffloadFacts is what is behind a bridge's interface for offload
// (OffloadPort less its aliases): a virtual lab's af_packet stand-in (lab
// is the lab's record, nil outside one), the card's uplink or representor
// (a PCI address in its devargs, or, without devargs, a netdev of
// mlx5_core as OVS-DOCA resolves ports by name) with its eSwitch's mode,
// or something else (a vhost-user, memif, tap or kernel port).
func PortOffloadFacts(h ovs.Host, lab *labinfo.Info, ifc ovs.Interface) OffloadPort {
	args := ifc.Devargs()
	port := OffloadPort{Name: ifc.Name, Kind: strings.TrimSpace(ifc.Type + " " + args)}
	if lab != nil && strings.HasPrefix(args, smartnic.AFPacketDriver) {
		port.Lab = true
		return port
	}
	bdf, isPCI := devargs.PCI(args)
	if !isPCI && args == "" {
		if f, err := smartnic.ReadNetdevFunction(h, ifc.Name); err == nil && f.Driver == "mlx5_core" && f.BDF != "" {
			bdf, isPCI = f.BDF, true
		}
	}
	if isPCI {
		port.Card, port.PCI = true, bdf
		port.ESwitchMode = eswitchMode(h, bdf)
	}
	return port
}

// eswitchMode is the eSwitch mode the netdevs of PCI function bdf show
// (compat/devlink/mode), "" when none does.
func eswitchMode(h ovs.Host, bdf string) string {
	dir := "/sys/bus/pci/devices/" + bdf + "/net"
	ents, _ := h.ReadDir(dir)
	for _, e := range ents {
		if b, err := h.ReadFile(dir + "/" + e.Name() + "/compat/devlink/mode"); err == nil {
			return strings.TrimSpace(string(b))
		}
	}
	return ""
}

// OffloadCause is one reason flows were not offloaded.
type OffloadCause struct {
	Kind     string   `json:"kind"`
	Cause    string   `json:"cause"`
	Fix      string   `json:"fix"`
	Evidence []string `json:"evidence,omitempty"`
}

// Offload cause kinds (OffloadCause.Kind, stable ids in JSON).
const (
	OffloadCauseLab        = "virtual-lab"
	OffloadCauseOff        = "hw-offload-off"
	OffloadCauseNotApplied = "hw-offload-not-applied"
	OffloadCauseTCPolicy   = "tc-policy-skip-hw"
	OffloadCauseNotCard    = "port-not-on-card"
	OffloadCauseLegacy     = "eswitch-legacy"
	OffloadCauseRefused    = "offload-refused"
	OffloadCauseUnknown    = "not-said"
)

// Offload verdicts (OffloadReport.Verdict).
const (
	OffloadVerdictFull    = "offloaded"
	OffloadVerdictPartial = "partially offloaded"
	OffloadVerdictNone    = "not offloaded"
	OffloadVerdictNoFlows = "no datapath flow seen"
)

// OffloadFlow is one datapath flow of the port's traffic, as reported.
type OffloadFlow struct {
	UFID     string           `json:"ufid,omitempty"`
	Packets  uint64           `json:"packets"`
	Offload  ovs.OffloadState `json:"offload"`
	Datapath string           `json:"datapath,omitempty"`
	Actions  string           `json:"actions"`
}

// OffloadReport is what the datapath did with one port's traffic.
type OffloadReport struct {
	Port      string `json:"port"`
	HWOffload bool   `json:"hwOffload"` // other_config:hw-offload is true
	// Flows and Packets count the datapath flows in at the port (the
	// first match of its packets; recirculated ones apart in
	// Recirculated) and their packets since OvS made them; Offloaded,
	// Partial and NotOffloaded split Flows.
	Flows        int            `json:"flows"`
	Packets      uint64         `json:"packets"`
	Offloaded    int            `json:"offloaded"`
	Partial      int            `json:"partial"`
	NotOffloaded int            `json:"notOffloaded"`
	Recirculated int            `json:"recirculated,omitempty"`
	Datapaths    map[string]int `json:"datapaths"` // dp: layer -> flows ("" when not printed)
	FlowList     []OffloadFlow  `json:"flowList"`
	Verdict      string         `json:"verdict"`
	Causes       []OffloadCause `json:"causes,omitempty"`
}

// OffloadEvidence is what AnalyzeOffload reads.
type OffloadEvidence struct {
	Port        OffloadPort
	OtherConfig map[string]string
	Log         ovs.LogTail // ovs-vswitchd's log since its last start
	Flows       []ovs.DPFlow
}

// AnalyzeOffload says whether the flows in at ev.Port were offloaded and,
// for those that were not, every cause the evidence shows (none found:
// one "not said" cause with how to make OvS say).
func AnalyzeOffload(ev OffloadEvidence) OffloadReport {
	p := ev.Port
	s := ovs.SummarizeDPFlows(ev.Flows, append([]string{p.Name}, p.Aliases...)...)
	r := OffloadReport{Port: p.Name, HWOffload: ev.OtherConfig["hw-offload"] == "true", Flows: s.Total.Flows, Packets: s.Total.Packets,
		Offloaded: s.ByOffload[ovs.OffloadFull].Flows, Partial: s.ByOffload[ovs.OffloadPartial].Flows, Recirculated: s.Recirculated.Flows,
		Datapaths: map[string]int{}, FlowList: []OffloadFlow{}}
	r.NotOffloaded = r.Flows - r.Offloaded - r.Partial
	for dp, c := range s.ByDatapath {
		r.Datapaths[dp] = c.Flows
	}
	for _, f := range s.Flows {
		r.FlowList = append(r.FlowList, OffloadFlow{UFID: f.UFID, Packets: f.Packets, Offload: f.Offload, Datapath: f.Datapath, Actions: f.Actions})
	}
	switch {
	case r.Flows == 0:
		r.Verdict = OffloadVerdictNoFlows // nothing to explain: no flow of the port's (expired, or its traffic never came)
		return r
	case r.Offloaded == r.Flows:
		r.Verdict = OffloadVerdictFull
		return r
	case r.Offloaded+r.Partial > 0:
		r.Verdict = OffloadVerdictPartial
	default:
		r.Verdict = OffloadVerdictNone
	}
	r.Causes = offloadCauses(ev, s)
	return r
}

// offloadCauses reads why the port's flows were not (all) offloaded.
func offloadCauses(ev OffloadEvidence, s ovs.DPFlowSummary) []OffloadCause {
	p, oc := ev.Port, ev.OtherConfig
	var out []OffloadCause
	if p.Lab {
		out = append(out, OffloadCause{Kind: OffloadCauseLab,
			Cause: fmt.Sprintf("port %s is a virtual lab's stand-in (%s): no mlx5 eSwitch is behind the lab's ports, so OvS has no NIC to offload its flows to", p.Name, p.Kind),
			Fix:   "the truth in a lab is \"not offloaded\"; run the check on the card (rig up on the BlueField's Arm) to judge offload"})
	}
	if oc["hw-offload"] != "true" {
		out = append(out, OffloadCause{Kind: OffloadCauseOff,
			Cause: fmt.Sprintf("other_config:hw-offload is %s: OvS keeps every flow in its own datapath", quoteOr(oc["hw-offload"], "not set")),
			Fix:   "set ovs.config.hw-offload: true in the playbook and run rig up (it restarts ovs-vswitchd), or ovs-vsctl set Open_vSwitch . other_config:hw-offload=true and restart ovs-vswitchd"})
	} else if len(ev.Log) > 0 && len(matching(ev.Log, 1, logFlowAPIEnabled)) == 0 {
		out = append(out, OffloadCause{Kind: OffloadCauseNotApplied,
			Cause: "other_config:hw-offload is true, but ovs-vswitchd's log since its last start has no \"" + logFlowAPIEnabled + "\": the setting did not take effect (set after the start, on an OvS that reads it only then)",
			Fix:   "restart ovs-vswitchd (rig up restarts it when it sets hw-offload; systemctl restart openvswitch-switch)"})
	}
	if pol := oc["tc-policy"]; pol == "skip_hw" {
		out = append(out, OffloadCause{Kind: OffloadCauseTCPolicy,
			Cause: "other_config:tc-policy is skip_hw: tc flower rules stay in software, never in the NIC",
			Fix:   "remove tc-policy (its default, none, lets the kernel choose) or set it to skip_sw, then restart ovs-vswitchd"})
	}
	if !p.Card && !p.Lab {
		c := OffloadCause{Kind: OffloadCauseNotCard,
			Cause: fmt.Sprintf("port %s is a %s port, not an uplink or representor of an mlx5 eSwitch: OvS has no flow API that takes it", p.Name, p.Kind),
			Fix:   "offload happens between the card's uplinks and representors (p0, pf0hpf, pf0vfN); measure through those ports (check.topology: through-ports)"}
		c.Evidence = matching(ev.Log, 1, p.Name+logNoFlowAPI)
		out = append(out, c)
	}
	if p.Card && p.ESwitchMode == "legacy" {
		out = append(out, OffloadCause{Kind: OffloadCauseLegacy,
			Cause: fmt.Sprintf("the eSwitch of %s is in legacy mode: flows are offloaded between representors, which exist only in switchdev mode", orDefault(p.PCI, "the port's card")),
			Fix:   "set sriov.eswitch: switchdev in the playbook and run rig up (or devlink dev eswitch set pci/" + orDefault(p.PCI, "<bdf>") + " mode switchdev), then restart ovs-vswitchd"})
	}
	if c, ok := refusedCause(ev.Log, p, s); ok {
		out = append(out, c)
	}
	if len(out) == 0 {
		out = append(out, OffloadCause{Kind: OffloadCauseUnknown,
			Cause: "OvS says no reason in its log: it logs why a flow was not offloaded at debug level only",
			Fix:   "ovs-appctl vlog/set netdev_offload_dpdk:file:dbg netdev_offload_tc:file:dbg dpif_netdev:file:dbg, rerun the check and read ovs-vswitchd.log"})
	}
	return out
}

// refusedCause quotes the log's refusals of the port's flows (a failed
// offload, an action or match the offload layer does not take) and names
// the actions of the flows that were not offloaded.
func refusedCause(log ovs.LogTail, p OffloadPort, s ovs.DPFlowSummary) (OffloadCause, bool) {
	var ev, what []string
	for _, l := range matching(log, 3, logFailedOffload) {
		ev = append(ev, l)
		what = append(what, "the NIC driver refused the flow ("+strings.TrimSpace(logMessageText(l, logFailedOffload))+")")
	}
	for _, r := range logActionRefusals {
		for _, l := range matching(log, 2, r.text) {
			ev = append(ev, l)
			what = append(what, r.what)
		}
	}
	if len(ev) == 0 {
		return OffloadCause{}, false
	}
	var acts []string
	for _, f := range s.Flows {
		if f.Offload != ovs.OffloadFull {
			acts = append(acts, actionNames(f.Actions)...)
		}
	}
	acts = dedupSorted(acts)
	cause := "ovs-vswitchd logged that it could not offload: " + strings.Join(dedupSorted(what), "; ")
	if len(acts) > 0 {
		cause += fmt.Sprintf("; the flows of port %s that stayed in software act with: %s", p.Name, strings.Join(acts, ", "))
	}
	return OffloadCause{Kind: OffloadCauseRefused, Cause: cause, Evidence: ev,
		Fix: "see the quoted lines: change the flows so their actions are ones the NIC offloads (output, drop, vlan push/pop, tunnel encap/decap; ct and header rewrites need a card and driver that offload them), or accept the software path for them"}, true
}

// actionNames are the names of a datapath flow's actions: "ct" of
// "ct(commit,zone=1)", "set" of "set(ipv4(...))", "output" for a bare
// port number or name.
func actionNames(actions string) []string {
	var out []string
	depth, start := 0, 0
	flush := func(end int) {
		a := strings.TrimSpace(actions[start:end])
		if a == "" {
			return
		}
		name, _, _ := strings.Cut(a, "(")
		if !strings.Contains(a, "(") {
			name = "output"
			if a == "drop" {
				name = "drop"
			}
		}
		out = append(out, name)
	}
	for i, c := range actions {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				flush(i)
				start = i + 1
			}
		}
	}
	flush(len(actions))
	return out
}

// logMessageText is what follows after in a log line's message.
func logMessageText(line, after string) string {
	if _, rest, ok := strings.Cut(line, after); ok {
		return rest
	}
	return logMessage(line)
}

func dedupSorted(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

func quoteOr(v, none string) string {
	if v == "" {
		return none
	}
	return fmt.Sprintf("%q", v)
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
