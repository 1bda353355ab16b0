package ovs

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// PMD output forms ParsePMDStats reads.
const (
	// PMDFormStats is `dpif-netdev/pmd-stats-show` of OvS up to 3.7.
	PMDFormStats = "pmd-stats-show"
	// PMDFormPerf is `dpif-netdev/pmd-perf-show`, which pmd-stats-show
	// became an alias of in OvS 4.0-dev.
	PMDFormPerf = "pmd-perf-show"
)

// PMDStats is one datapath thread's counters since the last
// pmd-stats-clear (or its start).
type PMDStats struct {
	Thread string `json:"thread"` // "pmd thread numa_id 0 core_id 1" or "main thread"
	NUMAID int    `json:"numaId"`
	CoreID int    `json:"coreId"`
	Main   bool   `json:"main"`
	Form   string `json:"form"` // PMDFormStats or PMDFormPerf

	RxPackets      uint64 `json:"rxPackets"`
	TxPackets      uint64 `json:"txPackets"` // pmd-perf-show only
	Recirculations uint64 `json:"recirculations"`
	EMCHits        uint64 `json:"emcHits"`
	SMCHits        uint64 `json:"smcHits"`
	MegaflowHits   uint64 `json:"megaflowHits"`
	// Upcalls are misses handled by an upcall; LostUpcalls are misses whose
	// upcall failed: packets dropped inside OvS.
	Upcalls     uint64 `json:"upcalls"`
	LostUpcalls uint64 `json:"lostUpcalls"`

	IdleCycles       uint64  `json:"idleCycles"`
	ProcessingCycles uint64  `json:"processingCycles"`
	UsedCycles       uint64  `json:"usedCycles"` // idle + processing (pmd-perf-show: "Used TSC cycles")
	IdlePct          float64 `json:"idlePct"`
	ProcessingPct    float64 `json:"processingPct"`
	// AvgCyclesPerPacket is used cycles per received packet;
	// AvgProcessingCyclesPerPacket counts only busy (processing) cycles.
	AvgCyclesPerPacket           float64 `json:"avgCyclesPerPacket"`
	AvgProcessingCyclesPerPacket float64 `json:"avgProcessingCyclesPerPacket"`

	// Unknown names the fields the output did not give (json names):
	// pmd-stats-show omits the cycle lines of a thread that has not run and
	// the per-packet lines when it received nothing; pmd-perf-show has no
	// idle/processing cycle counts and no main thread.
	Unknown []string `json:"unknown,omitempty"`
}

var (
	pmdHeader  = regexp.MustCompile(`^pmd thread numa_id (-?\d+) core_id (-?\d+):$`)
	leadNumber = regexp.MustCompile(`^(-?[0-9]+(?:\.[0-9]+)?)`)
	parenPct   = regexp.MustCompile(`\(\s*([0-9]+(?:\.[0-9]+)?)\s*%`)
	cyclesPkt  = regexp.MustCompile(`([0-9]+(?:\.[0-9]+)?) cycles/pkt`)
)

// ParsePMDStats parses `ovs-appctl dpif-netdev/pmd-stats-show` in both
// forms (hardware-formats.md §16): the OvS ≤3.7 one ("  packets received:
// N", "  idle cycles: N (x%)", ...) and the pmd-perf-show one ("  Rx
// packets: N (K Kpps, C cycles/pkt)", "  - Used TSC cycles: N (x % of
// total cycles)", ...). Lines it does not know are skipped; a thread
// header or a known line it cannot read is an error.
func ParsePMDStats(out []byte) ([]PMDStats, error) {
	var res []PMDStats
	var cur *PMDStats
	seen := map[string]bool{}
	done := func() {
		if cur != nil {
			cur.finish(seen)
			res = append(res, *cur)
		}
		seen = map[string]bool{}
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for ln := 1; sc.Scan(); ln++ {
		t := strings.TrimSpace(sc.Text())
		if m := pmdHeader.FindStringSubmatch(t); m != nil {
			done()
			numa, err1 := strconv.Atoi(m[1])
			core, err2 := strconv.Atoi(m[2])
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("pmd stats: line %d: bad thread header %q", ln, t)
			}
			cur = &PMDStats{Thread: strings.TrimSuffix(t, ":"), NUMAID: numa, CoreID: core}
			continue
		}
		if t == "main thread:" {
			done()
			cur = &PMDStats{Thread: "main thread", NUMAID: -1, CoreID: -1, Main: true}
			continue
		}
		if cur == nil || t == "" {
			continue // "Time:", "Measurement duration:", blank lines
		}
		if err := cur.line(t, seen); err != nil {
			return nil, fmt.Errorf("pmd stats: line %d (%s): %w", ln, cur.Thread, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("pmd stats: %w", err)
	}
	done()
	if len(res) == 0 {
		return nil, fmt.Errorf("pmd stats: no thread in the output (no \"pmd thread numa_id N core_id M:\" or \"main thread:\" header)")
	}
	return res, nil
}

// pmdKeys maps a line's key (both forms) to the field it fills.
var pmdKeys = map[string]string{
	"packets received": "rxPackets", "Rx packets": "rxPackets",
	"Tx packets":            "txPackets",
	"packet recirculations": "recirculations",
	"emc hits":              "emcHits", "- EMC hits": "emcHits",
	"smc hits": "smcHits", "- SMC hits": "smcHits",
	"megaflow hits": "megaflowHits", "- Megaflow hits": "megaflowHits",
	"miss with success upcall": "upcalls", "- Upcalls": "upcalls",
	"miss with failed upcall": "lostUpcalls", "- Lost upcalls": "lostUpcalls",
	"idle cycles":                      "idleCycles",
	"processing cycles":                "processingCycles",
	"avg cycles per packet":            "avgCyclesPerPacket",
	"avg processing cycles per packet": "avgProcessingCyclesPerPacket",
	"- Used TSC cycles":                "usedCycles",
	"- idle iterations":                "idlePct",
	"- busy iterations":                "processingPct",
}

// line reads one "key: value" line into s.
func (s *PMDStats) line(t string, seen map[string]bool) error {
	k, v, ok := strings.Cut(t, ":")
	if !ok {
		return nil
	}
	field, ok := pmdKeys[strings.TrimSpace(k)]
	if !ok {
		return nil
	}
	if strings.HasPrefix(k, "-") || k == "Rx packets" || k == "Tx packets" {
		s.Form = PMDFormPerf
	}
	v = strings.TrimSpace(v)
	num := leadNumber.FindString(v)
	if num == "" {
		return fmt.Errorf("%s: %q is not a number", k, v)
	}
	seen[field] = true
	switch field {
	case "idlePct", "processingPct":
		m := parenPct.FindStringSubmatch(v)
		if m == nil {
			return fmt.Errorf("%s: no percentage in %q", k, v)
		}
		return s.setFloat(field, m[1])
	case "avgCyclesPerPacket", "avgProcessingCyclesPerPacket":
		return s.setFloat(field, num)
	}
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		return fmt.Errorf("%s: %q is not a counter", k, v)
	}
	*s.counter(field) = n
	switch field {
	case "idleCycles", "processingCycles":
		if m := parenPct.FindStringSubmatch(v); m != nil {
			pct := strings.TrimSuffix(field, "Cycles") + "Pct"
			seen[pct] = true
			return s.setFloat(pct, m[1])
		}
	case "rxPackets":
		if m := cyclesPkt.FindStringSubmatch(v); m != nil {
			seen["avgProcessingCyclesPerPacket"] = true
			return s.setFloat("avgProcessingCyclesPerPacket", m[1])
		}
	}
	return nil
}

func (s *PMDStats) counter(field string) *uint64 {
	switch field {
	case "rxPackets":
		return &s.RxPackets
	case "txPackets":
		return &s.TxPackets
	case "recirculations":
		return &s.Recirculations
	case "emcHits":
		return &s.EMCHits
	case "smcHits":
		return &s.SMCHits
	case "megaflowHits":
		return &s.MegaflowHits
	case "upcalls":
		return &s.Upcalls
	case "lostUpcalls":
		return &s.LostUpcalls
	case "idleCycles":
		return &s.IdleCycles
	case "processingCycles":
		return &s.ProcessingCycles
	}
	return &s.UsedCycles
}

func (s *PMDStats) setFloat(field, v string) error {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return fmt.Errorf("%s: %q is not a number", field, v)
	}
	switch field {
	case "idlePct":
		s.IdlePct = f
	case "processingPct":
		s.ProcessingPct = f
	case "avgCyclesPerPacket":
		s.AvgCyclesPerPacket = f
	default:
		s.AvgProcessingCyclesPerPacket = f
	}
	return nil
}

// finish sets the form, derives what the form implies and lists the
// fields the output did not give.
func (s *PMDStats) finish(seen map[string]bool) {
	if s.Form == "" {
		s.Form = PMDFormStats
	}
	if s.Form == PMDFormStats && seen["idleCycles"] && seen["processingCycles"] {
		s.UsedCycles = s.IdleCycles + s.ProcessingCycles
		seen["usedCycles"] = true
	}
	if s.Form == PMDFormPerf && seen["usedCycles"] && s.RxPackets > 0 {
		s.AvgCyclesPerPacket = float64(s.UsedCycles) / float64(s.RxPackets)
		seen["avgCyclesPerPacket"] = true
	}
	fields := []string{"rxPackets", "recirculations", "emcHits", "smcHits", "megaflowHits", "upcalls", "lostUpcalls",
		"idleCycles", "processingCycles", "usedCycles", "idlePct", "processingPct", "avgCyclesPerPacket", "avgProcessingCyclesPerPacket"}
	fields = append(fields, "txPackets") // pmd-stats-show has no Tx line
	for _, f := range fields {
		if !seen[f] {
			s.Unknown = append(s.Unknown, f)
		}
	}
}

// PMDStats reads `ovs-appctl dpif-netdev/pmd-stats-show`.
func (c *Client) PMDStats(ctx context.Context) ([]PMDStats, error) {
	out, err := c.Appctl(ctx, "dpif-netdev/pmd-stats-show")
	if err != nil {
		return nil, err
	}
	st, err := ParsePMDStats(out)
	if err != nil {
		return nil, fmt.Errorf("ovs: ovs-vswitchd: %w", err)
	}
	return st, nil
}

// ClearPMDStats zeroes the PMD counters (`dpif-netdev/pmd-stats-clear`).
func (c *Client) ClearPMDStats(ctx context.Context) error {
	_, err := c.Appctl(ctx, "dpif-netdev/pmd-stats-clear")
	return err
}
