package bench

import (
	"fmt"
	"io"
	"math"
	"sort"
	"text/tabwriter"
)

// SchemaVersion of the JSON result (the project's "rig.<thing>/v<N>").
const SchemaVersion = "rig.bench/v1"

// FrameSizeNotMeasured is Result.FrameSizeSource of an io forwarder's run.
const FrameSizeNotMeasured = "not measured"

// IONoBytes says why an io forwarder's bytes are not reported.
const IONoBytes = "io mode reads no frame (as testpmd's io): bytes, Gbps, % of line and the frame size are not measured, only packets; --fwd-mode mac counts bytes (it writes each frame's MACs, which costs some rate)"

// Result is what one run measured.
type Result struct {
	SchemaVersion   string      `json:"schemaVersion"`
	Role            Role        `json:"mode"`
	FwdMode         string      `json:"fwdMode,omitempty"`
	MaxRate         string      `json:"maxRate,omitempty"`         // fwd --max-rate
	FrameSize       int         `json:"frameSize"`                 // bytes, FCS included; 0: unknown (nothing received)
	FrameSizeSource string      `json:"frameSizeSource,omitempty"` // "flag" (--size), "measured" (average of received/replayed frames) or "not measured" (an io forwarder)
	DurationS       float64     `json:"durationSeconds"`
	SendS           float64     `json:"sendSeconds,omitempty"` // gen/loop: first to last accepted burst of the generators
	LinkSpeedGbps   float64     `json:"linkSpeedGbps,omitempty"`
	LinkSpeedSource string      `json:"linkSpeedSource,omitempty"` // flag or port
	Memory          string      `json:"memory"`
	Cores           int         `json:"cores"`
	PinnedGo        bool        `json:"pinnedGoThreads"`
	Ports           []PortStats `json:"ports"`
	Sent            uint64      `json:"sent"`
	Received        uint64      `json:"received"`
	Lost            int64       `json:"lost"`      // loop: sent - received after draining
	SeqGaps         uint64      `json:"seqGaps"`   // frames missing in the sequence
	Reordered       uint64      `json:"reordered"` // frames older than expected
	Unstamped       uint64      `json:"unstamped"` // received frames without a rig stamp
	// Foreign: frames the receivers got that are not rig's (no rig
	// signature: ARP, IPv6 ND, LLDP, STP a real link carries); not in
	// Received, loss, order or latency, and no reason for Invalid.
	Foreign     uint64   `json:"foreign,omitempty"`
	Latency     *Latency `json:"latency,omitempty"`
	Samples     []Sample `json:"samples,omitempty"`
	Interrupted bool     `json:"interrupted,omitempty"`
	LatWarmupS  float64  `json:"-"`
	Warnings    []string `json:"warnings,omitempty"`
	// Invalid says why the numbers cannot be right (received more than
	// sent, frames without rig's stamp, the asked rate not reached, a link
	// lost during the run); empty: a measurement. rig exits 5 when set.
	Invalid []string `json:"invalid,omitempty"`
	// Profile is the named profile the run's settings came from.
	Profile string `json:"profile,omitempty"`
	// Peer is the far side of a two-host run (rig bench gen|loop --peer):
	// its ports are among Ports, with Host "far".
	Peer      *PeerSide `json:"peer,omitempty"`
	LinkDrops []string  `json:"-"` // ports whose link went down while the run ran (Judge lists them)
	Captured  []Frame   `json:"-"`
}

// Frame is one captured frame (tests, --capture).
type Frame struct {
	Data []byte
	Len  uint32
}

// PortStats is per-port totals and rates.
type PortStats struct {
	Name    string `json:"name"`
	Port    uint16 `json:"port"`
	Driver  string `json:"driver"`
	TxPkts  uint64 `json:"txPackets"`
	TxBytes uint64 `json:"txBytes"`
	RxPkts  uint64 `json:"rxPackets"`
	RxBytes uint64 `json:"rxBytes"`
	Drops   uint64 `json:"drops"`
	Policed uint64 `json:"policed,omitempty"` // fwd --max-rate: received frames dropped over the cap
	// TxKicks: af_packet only: kicks of its sockets after a tx, while idle,
	// that sent frames the PMD's own kick had left queued (EAGAIN/ENOBUFS)
	TxKicks       uint64  `json:"txKicks,omitempty"`
	TxMpps        float64 `json:"txMpps"`
	RxMpps        float64 `json:"rxMpps"`
	TxGbps        float64 `json:"txGbps"`   // L2, FCS included
	TxGbpsL1      float64 `json:"txGbpsL1"` // on wire: + preamble, SFD, IFG
	RxGbps        float64 `json:"rxGbps"`
	RxGbpsL1      float64 `json:"rxGbpsL1"`
	TxLineRatePct float64 `json:"txLineRatePct,omitempty"`
	RxLineRatePct float64 `json:"rxLineRatePct,omitempty"`
	// BytesNotMeasured: the port's frames went through an io forwarder,
	// which reads no frame (as testpmd's io mode): its bytes, Gbps and %
	// of line are not measured (0 in JSON, "-" in text), only packets
	BytesNotMeasured bool `json:"bytesNotMeasured,omitempty"`
	// Origin: the port was named by its netdev, with this role.
	Origin *PortOrigin `json:"origin,omitempty"`
	// Host is "near" or "far" in a two-host run, the address of the rig
	// bench serve that ran it for a check's far ends on two machines; ""
	// otherwise.
	Host string `json:"host,omitempty"`
	// DropCounters: the port's own drop counters that counted during the
	// run (imissed, ierrors, oerrors, rx_nombuf, and DropXstats), by name
	DropCounters map[string]uint64 `json:"dropCounters,omitempty"`
}

// Latency is from the TSC stamps (generator to receiver), microseconds.
type Latency struct {
	Samples uint64  `json:"samples"`
	MinUs   float64 `json:"minUs"`
	AvgUs   float64 `json:"avgUs"`
	P50Us   float64 `json:"p50Us"`
	P90Us   float64 `json:"p90Us"`
	P99Us   float64 `json:"p99Us"`
	P999Us  float64 `json:"p999Us"`
	MaxUs   float64 `json:"maxUs"`
	// Histogram is the distribution the percentiles come from (merged
	// over every rx unit); the percentiles are its buckets' highest values
	Histogram *LatencyHistogram `json:"histogram,omitempty"`
	// WarmupExcludedS: samples of the first seconds after the first frame
	// were dropped; 0: the run ended before the warm-up, all are included
	WarmupExcludedS float64 `json:"warmupExcludedSeconds"`
	// the load it was measured at (LatencyLoad): the receiver's rate, the
	// generator's (loop), % of line when the link speed is known, and
	// why the path was saturated ("" when it was not)
	LoadMpps        float64 `json:"loadMpps"`
	OfferedMpps     float64 `json:"offeredMpps,omitempty"`
	LoadLineRatePct float64 `json:"loadLineRatePct,omitempty"`
	Saturated       string  `json:"saturated,omitempty"`
	// --latency-load: the path's capacity (what it delivered to a
	// generator without a rate limit, in a probe run before this one)
	// and the fraction of it the generator was asked to offer
	CapacityMpps   float64 `json:"capacityMpps,omitempty"`
	LoadOfCapacity string  `json:"loadOfCapacity,omitempty"`
}

// Sample is one live interval.
type Sample struct {
	T      float64   `json:"t"`
	TxMpps []float64 `json:"txMpps"`
	RxMpps []float64 `json:"rxMpps"`
}

// Gbps returns L2 (with FCS) and L1 bit rates for pkts frames of bytes
// total (FCS not included, as DPDK counts).
func Gbps(pkts, bytes uint64, secs float64) (l2, l1 float64) {
	if secs <= 0 {
		return 0, 0
	}
	l2 = float64(bytes+FCSLen*pkts) * 8 / secs / 1e9
	l1 = float64(bytes+(FCSLen+WireOverhead)*pkts) * 8 / secs / 1e9
	return l2, l1
}

// PrintSummary writes the human summary table.
func (r *Result) PrintSummary(w io.Writer) {
	fmt.Fprintf(w, "rig bench %s: %.2f s, %s, %d core(s), memory %s", r.Role, r.DurationS, r.frameNote(), r.Cores, r.Memory)
	if r.FwdMode != "" {
		fmt.Fprintf(w, ", fwd %s", r.FwdMode)
	}
	if r.LinkSpeedGbps > 0 {
		fmt.Fprintf(w, ", link %gG (%s)", r.LinkSpeedGbps, r.LinkSpeedSource)
	}
	if r.Profile != "" {
		fmt.Fprintf(w, ", profile %s", r.Profile)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "port\tdriver\ttx pkts\ttx Mpps\ttx Gbps\trx pkts\trx Mpps\trx Gbps\trx L1 Gbps\t% line\tdrops\t")
	for _, p := range r.Ports {
		pct := "-"
		if r.LinkSpeedGbps > 0 {
			pct = fmt.Sprintf("%.1f", math.Max(p.TxLineRatePct, p.RxLineRatePct))
		}
		txG, rxG, rxL1 := fmt.Sprintf("%.3f", p.TxGbps), fmt.Sprintf("%.3f", p.RxGbps), fmt.Sprintf("%.3f", p.RxGbpsL1)
		if p.BytesNotMeasured {
			txG, rxG, rxL1, pct = "-", "-", "-", "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.3f\t%s\t%d\t%.3f\t%s\t%s\t%s\t%d\t\n", p.DisplayName(), p.Driver, p.TxPkts, p.TxMpps, txG, p.RxPkts, p.RxMpps, rxG, rxL1, pct, p.Drops)
	}
	tw.Flush()
	r.printPortOrigins(w)
	r.printPeer(w)
	r.printPoliced(w)
	if r.Role == RoleLoop || r.Role == RoleRx || r.Peer != nil {
		fmt.Fprintf(w, "sent %d, received %d, lost %d, sequence gaps %d, reordered %d, unstamped %d\n", r.Sent, r.Received, r.Lost, r.SeqGaps, r.Reordered, r.Unstamped)
	}
	if r.Foreign > 0 {
		fmt.Fprintln(w, r.ForeignNote())
	}
	if l := r.Latency; l != nil {
		fmt.Fprintf(w, "latency us: min %.2f avg %.2f p50 %.2f p90 %.2f p99 %.2f p99.9 %.2f max %.2f (%d samples, %s; %s)\n",
			l.MinUs, l.AvgUs, l.P50Us, l.P90Us, l.P99Us, l.P999Us, l.MaxUs, l.Samples, l.warmupNote(), l.loadNote())
		if l.P99Us > 0 && l.MaxUs > 100*l.P99Us {
			fmt.Fprintf(w, "latency note: max %.2f us is an outlier (over 100x p99): one frame delayed, e.g. by a preempted lcore; see p99\n", l.MaxUs)
		}
	}
	for _, wn := range r.Warnings {
		fmt.Fprintf(w, "warning: %s\n", wn)
	}
	r.printInvalid(w)
}

func (r *Result) frameNote() string {
	switch {
	case r.FrameSizeSource == FrameSizeNotMeasured:
		return "frame size not measured (io mode)"
	case r.FrameSizeSource == "measured" && r.FrameSize == 0:
		return "frame size unknown (no frames)"
	case r.FrameSizeSource == "measured":
		return fmt.Sprintf("%d B frames (measured average)", r.FrameSize)
	}
	return fmt.Sprintf("%d B frames", r.FrameSize)
}

func (l *Latency) warmupNote() string {
	if l.WarmupExcludedS > 0 {
		return fmt.Sprintf("the first %.2f s after the first frame excluded as warm-up", l.WarmupExcludedS)
	}
	return "warm-up included: the run ended before it"
}

// median of a slice (copied).
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// PortRates turns packet and byte counts into Mpps, Gbps and % of line rate.
func PortRates(ps []PortStats, secs, linkBps float64) {
	for i := range ps {
		p := &ps[i]
		if secs > 0 {
			p.TxMpps = float64(p.TxPkts) / secs / 1e6
			p.RxMpps = float64(p.RxPkts) / secs / 1e6
		}
		if p.BytesNotMeasured {
			continue
		}
		p.TxGbps, p.TxGbpsL1 = Gbps(p.TxPkts, p.TxBytes, secs)
		p.RxGbps, p.RxGbpsL1 = Gbps(p.RxPkts, p.RxBytes, secs)
		if linkBps > 0 {
			p.TxLineRatePct = p.TxGbpsL1 * 1e9 / linkBps * 100
			p.RxLineRatePct = p.RxGbpsL1 * 1e9 / linkBps * 100
		}
	}
}

// ForeignNote says how many frames the receivers ignored as not rig's.
func (r *Result) ForeignNote() string {
	return fmt.Sprintf("%d foreign frames ignored (not rig's IPv4/UDP: ARP, IPv6 ND, LLDP, STP a link carries; not counted as received, nor in loss, order or latency)", r.Foreign)
}
