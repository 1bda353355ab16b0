package check

import (
	"fmt"
	"io"
	"regexp"
	"sort"

	"rig/bench"
)

// Where a lost frame died, by the ports' own drop counters: OvS's
// Interface statistics of the path's ports carry the DPDK port's
// generic xstats (rx_missed_errors = imissed, rx_mbuf_allocation_errors =
// rx_nombuf) and, on a card, the mlx5 PMD's xstats that mean a drop
// (hardware-formats.md §21.2, §21.6), besides OvS's own ovs_*_drops
// (§16). Each counter that moved during the run is named with its stage
// and the fix; so is each drop counter of rig's own ports (the ethdev
// stats imissed, rx_nombuf, ierrors, oerrors and the same xstats, which
// the dataplane reads before it closes them). DPDK 22.11's af_packet and
// vhost count none of their drops (§21.5): a lab's loss shows in the
// stage arithmetic only.

// PortDrop is one drop counter of one port that counted during a run.
type PortDrop struct {
	Port    string `json:"port"`
	Role    string `json:"role"` // ingress | egress
	Counter string `json:"counter"`
	Frames  uint64 `json:"frames"`
	Stage   string `json:"stage"`
	Fix     string `json:"fix"`
}

// dropKind is what a drop counter means (§21.6).
type dropKind struct {
	re         *regexp.Regexp
	stage, fix string
}

var dropKinds = []dropKind{
	{regexp.MustCompile(`^(rx_missed_errors|rx_out_of_buffer)$`),
		"the port's NIC ran out of rx descriptors (imissed): its poller (OvS's PMD thread) did not empty the rx queue fast enough",
		"give OvS more PMD cores (ovs.config.pmd-cpu-mask) or rx queues (n_rxq), a larger rx ring (n_rxq_desc), and keep the PMD CPUs isolated (isolcpus, rig doctor)"},
	{regexp.MustCompile(`^(rx_mbuf_allocation_errors|rx_nombuf)$`),
		"the port ran out of buffers (rx_nombuf): its mempool was empty when the PMD refilled the rx ring",
		"give OvS more hugepage memory (ovs.config.dpdk-socket-mem) so its mempools are larger, and look for mbufs held elsewhere (a slow tx port)"},
	{regexp.MustCompile(`^(rx_phy_discard_packets|rx_prio[0-7]_buf_discard_packets|rx_prio[0-7]_cong_discard_packets)$`),
		"the uplink's PHY discarded: the NIC port's receive buffer was full (the card could not move frames to memory fast enough)",
		"check the PCIe link (width and speed at their maximum) and NUMA locality, use mprq_en=1 and rxq_cqe_comp_en=1 for small frames, enable flow control, or offer less"},
	{regexp.MustCompile(`^(rx_phy_crc_errors|rx_phy_symbol_errors)$`),
		"on the wire: the port's PHY received frames with FCS or symbol errors",
		"replace or reseat the cable or transceiver, check FEC and the peer; no host setting fixes this"},
	{regexp.MustCompile(`^rx_phy_in_range_len_errors$`),
		"the port's MAC length check",
		"match the MTU with the peer's"},
	{regexp.MustCompile(`^tx_phy_discard_packets$`),
		"the uplink's PHY discarded on transmit: link down, head-of-line blocking or pause frames from the peer",
		"check the link state (link_down_events_phy) and pause counters (rx_pause_ctrl_phy), and the peer's congestion"},
	{regexp.MustCompile(`^tx_phy_errors$`),
		"the port's transmit: a frame longer than the MTU",
		"fix the MTU (mtu_request) or the segment size"},
	{regexp.MustCompile(`^rx_q[0-9]+_errors$`),
		"the port's rx queue dropped (completion errors or no buffers on refill)",
		"see rx_mbuf_allocation_errors and the PMD's log for error completions"},
	{regexp.MustCompile(`^ovs_tx_failure_drops$`),
		"OvS's transmit to the port: its tx queue was full (the port took fewer frames than OvS sent)",
		"a larger tx ring (n_txq_desc), a faster receiver behind the port, or for vhost-user a higher tx-retries-max"},
	{regexp.MustCompile(`^ovs_tx_mtu_exceeded_drops$`),
		"OvS's transmit: frames longer than the port's MTU",
		"raise the port's mtu_request"},
	{regexp.MustCompile(`^(ovs_tx_qos_drops|ovs_rx_qos_drops)$`),
		"OvS's QoS policer on the port",
		"raise or remove the port's qos or ingress_policing_rate"},
	{regexp.MustCompile(`^ovs_tx_invalid_hwol_drops$`),
		"OvS's transmit: frames with invalid hardware offload flags",
		"see ovs-vswitchd's log; disable the port's tx offloads"},
}

// portDrops lists the drop counters of the path's OvS ports (the deltas
// in ds) and of rig's own ports (ports: [0] generator, [1] receiver,
// their counters since the run's process opened them) that moved during
// the run, biggest first.
func portDrops(ds []PortDelta, ports []bench.PortStats) []PortDrop {
	var out []PortDrop
	for _, d := range ds {
		out = append(out, dropsOf(d.Port, d.Role, d.Counters.Custom, false)...)
	}
	for i, p := range ports {
		role := "rig's generator"
		if i > 0 {
			role = "rig's receiver"
		}
		out = append(out, dropsOf(p.Name, role, p.DropCounters, true)...)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Frames != out[j].Frames {
			return out[i].Frames > out[j].Frames
		}
		return out[i].Port+out[i].Counter < out[j].Port+out[j].Counter
	})
	return out
}

// ethdevNames are the ethdev stats fields by their xstats names.
var ethdevNames = map[string]string{"imissed": "rx_missed_errors", "rx_nombuf": "rx_mbuf_allocation_errors", "ierrors": "rx_errors", "oerrors": "tx_errors"}

// rigFix is the fix where rig's own port dropped: rig's dataplane, not
// OvS, is to change.
var rigFix = map[string]string{
	"rx_missed_errors":          "give rig's dataplane more cores (check.cores) on CPUs OvS's PMD threads do not use, or offer less",
	"rx_mbuf_allocation_errors": "rerun the check; rig sizes its mempool to its rings, so a repeat is a rig bug to report",
	"rx_errors":                 "see the PMD's log for error completions on rig's receiver",
	"tx_errors":                 "see the PMD's log: rig's generator's port could not send what it built",
}

func dropsOf(port, role string, counters map[string]uint64, rig bool) []PortDrop {
	var out []PortDrop
	for name, v := range counters {
		if v == 0 {
			continue
		}
		key := name
		if alias, ok := ethdevNames[name]; ok && rig {
			key = alias
		}
		if rig && (key == "rx_errors" || key == "tx_errors") {
			fix := rigFix[key]
			stage := "rig's generator's port failed to transmit (oerrors)"
			if key == "rx_errors" {
				stage = "rig's receiver's port dropped erroneous frames (ierrors)"
			}
			out = append(out, PortDrop{Port: port, Role: role, Counter: name, Frames: v, Stage: stage, Fix: fix})
			continue
		}
		for _, k := range dropKinds {
			if !k.re.MatchString(key) {
				continue
			}
			d := PortDrop{Port: port, Role: role, Counter: name, Frames: v, Stage: k.stage, Fix: k.fix}
			if rig {
				switch key {
				case "rx_missed_errors", "rx_out_of_buffer":
					d.Stage = "the receiver's NIC ran out of buffers (imissed): rig's receiver did not empty its rx queue fast enough"
				case "rx_mbuf_allocation_errors":
					d.Stage = "rig's receiver ran out of mbufs (rx_nombuf): its mempool was empty when the PMD refilled the rx ring"
				}
				if f, ok := rigFix[key]; ok {
					d.Fix = f
				}
			}
			out = append(out, d)
			break
		}
	}
	return out
}

// dropsVerdict is the loss verdict with the ports' own counters: the
// biggest names the stage.
func dropsVerdict(a LossAttribution, drops []PortDrop) string {
	if len(drops) == 0 {
		return a.Verdict
	}
	d := drops[0]
	return fmt.Sprintf("%s; port %s's %s counted %d: %s", a.Verdict, d.Port, d.Counter, d.Frames, d.Stage)
}

func writeDrops(w io.Writer, drops []PortDrop) {
	for _, d := range drops {
		fmt.Fprintf(w, "    port %s (%s) %s %d: %s\n      fix: %s\n", d.Port, d.Role, d.Counter, d.Frames, d.Stage, d.Fix)
	}
}
