package check

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"

	"rig/bench"
	"rig/bench/search"
	"rig/ovs"
)

// CheckSchemaVersion names the JSON shape of CheckResult.
// v2: the check judges at a stated load (load; no rate is the zero-loss
// search, not a run as fast as possible), a run over its loss budget is
// overloaded and fails, latency is judged only below capacity
// (latencyRuns).
const CheckSchemaVersion = "rig.check/v2"

// CheckResult is what one check measured: one run per frame size, each
// counted twice (rig's dataplane and OvS's port counters) and explained.
type CheckResult struct {
	SchemaVersion string `json:"schemaVersion"`
	Topology      string `json:"topology"`
	Bridge        string `json:"bridge"`
	Transport     string `json:"transport,omitempty"`
	Ingress       string `json:"ingressPort"` // the bridge port traffic enters by
	Egress        string `json:"egressPort"`
	NetNS         string `json:"farEndNetns,omitempty"`
	// Load is what the check offered and judged at
	Load *CheckLoad `json:"load,omitempty"`
	// FarEnds: through-ports, where each port's far end was (a netns here,
	// or a port of another machine's rig bench serve)
	FarEnds []FarEndReport `json:"farEnds,omitempty"`
	Runs    []CheckRun     `json:"runs"`
	// Reverse: direction both, the runs back (in at Egress, out at Ingress)
	Reverse []CheckRun `json:"reverseRuns,omitempty"`
	// LatencyRuns measured latency below capacity (max_p99_us), at
	// load.latencyLoad of the NDR or of what rate: max received
	LatencyRuns []CheckRun `json:"latencyRuns,omitempty"`
	// Search is the zero-loss search (check: {search: ndr}) instead of
	// Runs, and SearchThresholds judge its NDR per frame size
	Search           *search.NDRReport  `json:"search,omitempty"`
	SearchThresholds []ThresholdVerdict `json:"searchThresholds,omitempty"`
	// Offload: whether the datapath flows of the traffic were offloaded
	// (check.offload; nil when off)
	Offload *CheckOffload `json:"offload,omitempty"`
	Pass    bool          `json:"pass"`
	Notes   []string      `json:"notes,omitempty"`
}

// CheckRun is one frame size's measurement.
type CheckRun struct {
	FrameSize   int                `json:"frameSize"`
	DurationS   float64            `json:"durationSeconds"`
	WarmupS     float64            `json:"warmupSeconds"`
	Ports       []bench.PortStats  `json:"ports"` // rig's ports: [0] generator, [1] receiver
	Sent        uint64             `json:"sent"`
	Received    uint64             `json:"received"`
	LossPct     float64            `json:"lossPct"`
	RxMpps      float64            `json:"rxMpps"`
	RxGbps      float64            `json:"rxGbps"`
	LineRatePct float64            `json:"lineRatePct,omitempty"` // only with a real link speed
	LinkGbps    float64            `json:"linkSpeedGbps,omitempty"`
	Latency     *bench.Latency     `json:"latency,omitempty"`
	OVS         []PortDelta        `json:"ovsPorts"`
	Loss        LossAttribution    `json:"loss"`
	PMD         string             `json:"pmdStats,omitempty"`
	Thresholds  []ThresholdVerdict `json:"thresholds"`
	Invalid     string             `json:"invalid,omitempty"` // set: the measurement cannot be right; the run fails
	Warnings    []string           `json:"warnings,omitempty"`
	Pass        bool               `json:"pass"`
	// Overloaded: the run lost more than its loss budget; CapacityMpps is
	// what the path carried then
	Overloaded   string  `json:"overloaded,omitempty"`
	CapacityMpps float64 `json:"capacityMpps,omitempty"`
	// LatencyNote: why this run's latency was not judged (queueing)
	LatencyNote string `json:"latencyNote,omitempty"`
	// LatencyLoad: a latency run's load, as a share of the capacity
	LatencyLoad string `json:"latencyLoad,omitempty"`
	// Drops are the drop counters of the path's ports that counted
	// during the run, each with where it dropped and the fix
	Drops []PortDrop `json:"drops,omitempty"`
}

// PortDelta is one OvS port's counters over the measured interval.
type PortDelta struct {
	Port     string       `json:"port"`
	Role     string       `json:"role"` // ingress | egress
	Counters ovs.Counters `json:"counters"`
}

// rxMissed is the custom counter of frames the NIC could not place in
// the rx queue (DPDK imissed); OvS counts it inside rx_dropped too.
const rxMissed = "rx_missed_errors"

// PathCounts are the two counts of one run: rig's and OvS's, as deltas.
type PathCounts struct {
	Sent, Received uint64       // rig: generator tx, receiver rx
	Ingress        ovs.Counters // OvS ingress port (rx side)
	Egress         ovs.Counters // OvS egress port (tx side)
}

// LossStage is where some frames were lost.
type LossStage struct {
	Where  string `json:"where"`
	Frames int64  `json:"frames"`
	Detail string `json:"detail"`
}

// LossAttribution says where the frames lost between rig's generator and
// receiver went, from OvS's counters, and whether the two counts agree.
type LossAttribution struct {
	Lost   int64       `json:"lost"`
	Stages []LossStage `json:"stages,omitempty"`
	// Agree: rig's rx and OvS's egress tx differ by at most 0.1 %.
	Agree    bool    `json:"countsAgree"`
	GapPct   float64 `json:"rxVsOvsTxGapPct"`
	Verdict  string  `json:"verdict"`
	Mismatch string  `json:"mismatch,omitempty"`
}

// Stage names.
const (
	StageBeforeOVS  = "between rig's generator and OvS"
	StageOVSRxQueue = "in OvS's rx queue"
	StageInsideOVS  = "inside OvS"
	StageOVSTx      = "on OvS's tx to the receiver"
	StageRig        = "in rig's receiver"
)

// AgreeFraction is how far rig's rx count and OvS's egress tx count may
// differ on a clean run: 0.1 %.
const AgreeFraction = 0.001

// AttributeLoss splits the loss between the stages of the path: before
// OvS (sent, never counted by the ingress port), OvS's rx queue (ingress
// rx_dropped, rx_missed_errors, rx_errors), inside OvS (received, neither
// sent nor counted as a tx drop), OvS's tx (egress tx_dropped and
// tx_errors; tx_dropped includes ovs_tx_failure_drops and the other
// ovs_tx_* breakdowns) and rig's receiver (OvS sent, rig did not count).
func AttributeLoss(p PathCounts) LossAttribution {
	a := LossAttribution{Lost: int64(p.Sent) - int64(p.Received)}
	inRx := p.Ingress.RxPackets
	inDrop := p.Ingress.RxDropped + p.Ingress.RxErrors
	outTx := p.Egress.TxPackets
	outDrop := p.Egress.TxDropped + p.Egress.TxErrors
	stages := []LossStage{
		{StageBeforeOVS, int64(p.Sent) - int64(inRx) - int64(inDrop), fmt.Sprintf("rig sent %d, the ingress port counted %d received + %d dropped", p.Sent, inRx, inDrop)},
		{StageOVSRxQueue, int64(inDrop), fmt.Sprintf("ingress rx_dropped %d (of which %s), rx_errors %d", p.Ingress.RxDropped, customList(p.Ingress, []string{rxMissed, "ovs_rx_qos_drops"}), p.Ingress.RxErrors)},
		{StageInsideOVS, int64(inRx) - int64(outTx) - int64(outDrop), fmt.Sprintf("ingress rx %d - egress tx %d - egress tx drops %d (no flow, a drop action, upcall or datapath drops; or frames sent to a vhost-user port before its peer was running, which OvS counts in tx_dropped only)", inRx, outTx, outDrop)},
		{StageOVSTx, int64(outDrop), fmt.Sprintf("egress tx_dropped %d (of which %s), tx_errors %d", p.Egress.TxDropped, customList(p.Egress, ovsTxKeys(p.Egress)), p.Egress.TxErrors)},
		{StageRig, int64(outTx) - int64(p.Received), fmt.Sprintf("OvS egress tx %d, rig received %d", outTx, p.Received)},
	}
	for _, s := range stages {
		if s.Frames != 0 {
			a.Stages = append(a.Stages, s)
		}
	}
	gap := math.Abs(float64(outTx) - float64(p.Received))
	if outTx > 0 {
		a.GapPct = 100 * gap / float64(outTx)
	} else if p.Received > 0 {
		a.GapPct = 100
	}
	a.Agree = gap <= AgreeFraction*float64(max(outTx, p.Received))
	if !a.Agree {
		a.Mismatch = fmt.Sprintf("rig received %d frames, OvS's egress port %s %d: %.3f%% apart (more than %.1f%%); one of the two counts is wrong or frames came from elsewhere",
			p.Received, "sent", outTx, a.GapPct, AgreeFraction*100)
	}
	a.Verdict = lossVerdict(a)
	return a
}

func lossVerdict(a LossAttribution) string {
	if a.Lost == 0 && len(a.Stages) == 0 {
		return "no loss: every frame sent was received, and OvS counted each on the way"
	}
	var worst LossStage
	for _, s := range a.Stages {
		if s.Frames > worst.Frames {
			worst = s
		}
	}
	if worst.Frames <= 0 {
		return fmt.Sprintf("%d frame(s) lost; OvS's counters do not place them (the stages below do not add up to a loss)", a.Lost)
	}
	return fmt.Sprintf("%d frame(s) lost, most %s (%d: %s)", a.Lost, worst.Where, worst.Frames, worst.Detail)
}

// ovsTxKeys are OvS's custom tx drop breakdowns present (ovs_tx_*).
func ovsTxKeys(c ovs.Counters) []string {
	var ks []string
	for k := range c.Custom {
		if strings.HasPrefix(k, "ovs_tx_") {
			ks = append(ks, k)
		}
	}
	sort.Strings(ks)
	return ks
}

// customList renders the custom counters present among keys.
func customList(c ovs.Counters, keys []string) string {
	var parts []string
	for _, k := range keys {
		if v, ok := c.Custom[k]; ok {
			parts = append(parts, fmt.Sprintf("%s %d", k, v))
		}
	}
	if len(parts) == 0 {
		return "no breakdown"
	}
	return strings.Join(parts, ", ")
}

// ThresholdVerdict is one threshold against its measured value.
type ThresholdVerdict struct {
	Name     string  `json:"name"`
	Limit    float64 `json:"limit"`
	Measured float64 `json:"measured"`
	Pass     bool    `json:"pass"`
	Note     string  `json:"note,omitempty"`
}

func (t ThresholdVerdict) String() string {
	s := fmt.Sprintf("%s %g: measured %.4g", t.Name, t.Limit, t.Measured)
	if t.Note != "" {
		s += " (" + t.Note + ")"
	}
	if t.Pass {
		return s + ": pass"
	}
	return s + ": FAIL"
}

// WriteText prints the check for people (the report indents it).
func (r *CheckResult) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "check %s on bridge %s", r.Topology, r.Bridge)
	if r.Transport != "" {
		fmt.Fprintf(w, " (%s)", r.Transport)
	}
	fmt.Fprintf(w, ": in %s, out %s", r.Ingress, r.Egress)
	if r.NetNS != "" {
		fmt.Fprintf(w, ", far ends in netns %s", r.NetNS)
	}
	fmt.Fprintln(w)
	for _, f := range r.FarEnds {
		if f.Serve != "" {
			port := "netdev " + f.Netdev
			switch {
			case f.PCI != "":
				port = "PCI function " + f.PCI
			case f.HostPF != nil:
				port = fmt.Sprintf("its PF%d", *f.HostPF)
			}
			fmt.Fprintf(w, "far end of %s: %s on the machine of rig bench serve %s (%s)\n", f.Port, port, f.Serve, f.Source)
		}
	}
	r.writeLoadText(w)
	for _, run := range r.Runs {
		run.writeText(w, r.senders(r.Ingress, r.Egress))
	}
	if len(r.Reverse) > 0 {
		fmt.Fprintf(w, "back: in %s, out %s\n", r.Egress, r.Ingress)
	}
	for _, run := range r.Reverse {
		run.writeText(w, r.senders(r.Egress, r.Ingress))
	}
	if r.Search != nil {
		r.writeSearchText(w)
	}
	r.writeLatencyText(w)
	if r.Offload != nil {
		r.Offload.writeText(w)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	verdict := "PASS"
	if !r.Pass {
		verdict = "FAIL"
	}
	_, err := fmt.Fprintf(w, "check: %s\n", verdict)
	return err
}

// senders names who sent and received a run's frames in at port in and
// out at out: "rig" (its own ports, or its far ends in a local netns), or
// the far ends' rig bench serves (their counts, not this machine's).
func (r *CheckResult) senders(in, out string) string {
	serve := map[string]string{}
	for _, f := range r.FarEnds {
		serve[f.Port] = f.Serve
	}
	if serve[in] == "" && serve[out] == "" {
		return "rig"
	}
	at := func(port string) string {
		if serve[port] != "" {
			return "serve " + serve[port]
		}
		return "rig here"
	}
	return fmt.Sprintf("far ends (generator: %s at %s's far end, receiver: %s at %s's)", at(in), in, at(out), out)
}

// writeText prints a run; who sent and received its frames (senders).
func (run *CheckRun) writeText(w io.Writer, who string) {
	fmt.Fprintf(w, "%d B frames, %.2f s measured (after %.2f s warm-up): %.3f Mpps, %.3f Gbps through the bridge", run.FrameSize, run.DurationS, run.WarmupS, run.RxMpps, run.RxGbps)
	if run.LinkGbps > 0 {
		fmt.Fprintf(w, ", %.1f%% of %gG line rate", run.LineRatePct, run.LinkGbps)
	}
	fmt.Fprintf(w, "\n  %s: sent %d, received %d, loss %.4f%%", who, run.Sent, run.Received, run.LossPct)
	if l := run.Latency; l != nil {
		fmt.Fprintf(w, ", latency us p50 %.2f p99 %.2f max %.2f", l.P50Us, l.P99Us, l.MaxUs)
		if l.Saturated != "" {
			fmt.Fprintf(w, " (saturated: %s; set check.rate below capacity to measure the path's own latency)", l.Saturated)
		}
	}
	fmt.Fprintln(w)
	if run.Overloaded != "" {
		fmt.Fprintf(w, "  OVERLOADED: %s\n", run.Overloaded)
	}
	if run.LatencyNote != "" {
		fmt.Fprintf(w, "  latency: %s\n", run.LatencyNote)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  ovs port\trole\trx pkts\trx dropped\ttx pkts\ttx dropped\t")
	for _, d := range run.OVS {
		c := d.Counters
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%d\t%d\t\n", d.Port, d.Role, c.RxPackets, c.RxDropped, c.TxPackets, c.TxDropped)
	}
	tw.Flush()
	fmt.Fprintf(w, "  loss: %s\n", run.Loss.Verdict)
	for _, s := range run.Loss.Stages {
		fmt.Fprintf(w, "    %s: %d (%s)\n", s.Where, s.Frames, s.Detail)
	}
	writeDrops(w, run.Drops)
	if run.Loss.Mismatch != "" {
		fmt.Fprintf(w, "  counts disagree: %s\n", run.Loss.Mismatch)
	} else {
		rx := "rig rx"
		if who != "rig" {
			rx = "the receiver's rx"
		}
		fmt.Fprintf(w, "  counts agree: %s vs OvS egress tx %.4f%% apart (within %.1f%%)\n", rx, run.Loss.GapPct, AgreeFraction*100)
	}
	if run.PMD != "" {
		fmt.Fprintf(w, "  pmd: %s\n", run.PMD)
	}
	for _, t := range run.Thresholds {
		fmt.Fprintf(w, "  threshold %s\n", t)
	}
	for _, wn := range run.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", wn)
	}
	if run.Invalid != "" {
		fmt.Fprintf(w, "  INVALID measurement: %s\n", run.Invalid)
	}
}
