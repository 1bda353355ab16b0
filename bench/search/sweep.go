package search

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"rig/bench"
	"rig/internal/cpuset"
)

// `rig bench sweep`: one run per cell of the cartesian product of its axes
// (frame sizes, worker cores, queues, burst, descriptors, rate), each in
// its own child process (EAL once per process), collected into one table
// like seed 002's, JSON, CSV and plots.

// SweepSchemaVersion of the sweep's JSON document.
const SweepSchemaVersion = "rig.bench.sweep/v1"

// SweepAxes are the values each axis takes; every combination is a cell.
type SweepAxes struct {
	Sizes  []int    `json:"sizes"`  // frame bytes, FCS included
	Cores  []int    `json:"cores"`  // worker lcores
	Queues []int    `json:"queues"` // rx and tx queues per port
	Bursts []int    `json:"bursts"`
	Descs  []int    `json:"descs"` // rx and tx descriptors per queue
	Rates  []string `json:"rates"` // generator --rate; "" or "max": as fast as possible
}

// Cell statuses.
const (
	CellMeasured = "measured"
	CellInvalid  = "invalid" // the run's numbers cannot be right (Result.Invalid)
	CellNotRun   = "not run" // not meaningful here (more workers than CPUs), or interrupted
	CellFailed   = "failed"  // the run failed (Error)
)

// SweepCell is one run of a sweep.
type SweepCell struct {
	N         int    `json:"n"` // 1-based, in table order
	FrameSize int    `json:"frameSize"`
	Burst     int    `json:"burst"`
	Cores     int    `json:"cores"`
	Queues    int    `json:"queues"`
	Desc      int    `json:"descriptors"`
	Rate      string `json:"rate,omitempty"` // "": as fast as possible
	Lcores    string `json:"lcores,omitempty"`
	Status    string `json:"status"`
	// TimeSliced says how the run's workers shared CPUs: run only when
	// forced (--force), its numbers measure the scheduler, not the path
	TimeSliced  string  `json:"timeSliced,omitempty"`
	Mpps        float64 `json:"mpps"`   // the role's measured direction: rx for loop/rx, tx for gen/fwd
	Gbps        float64 `json:"gbps"`   // L2, FCS included
	GbpsL1      float64 `json:"gbpsL1"` // on the wire
	LineRatePct float64 `json:"lineRatePct,omitempty"`
	// FarMpps, FarGbps (two hosts, --peer): what the far side carried,
	// over the near side's interval: a generator's frames the far host
	// received, a loop's frames the far forwarder sent back
	FarMpps float64 `json:"farMpps,omitempty"`
	FarGbps float64 `json:"farGbps,omitempty"`
	// GbpsNotMeasured, FarGbpsNotMeasured: the frames went through an io
	// forwarder (this side's, the far one's), which counts no bytes
	GbpsNotMeasured    bool          `json:"gbpsNotMeasured,omitempty"`
	FarGbpsNotMeasured bool          `json:"farGbpsNotMeasured,omitempty"`
	Sent               uint64        `json:"sent,omitempty"`
	Received           uint64        `json:"received,omitempty"`
	Lost               int64         `json:"lost,omitempty"`
	Invalid            []string      `json:"invalid,omitempty"`
	Note               string        `json:"note,omitempty"` // why not run
	Error              string        `json:"error,omitempty"`
	Result             *bench.Result `json:"result,omitempty"`
	cfg                *bench.Config
}

// Sweep is the whole sweep: its axes, the CPUs it could use, and a cell per
// combination.
type Sweep struct {
	SchemaVersion   string     `json:"schemaVersion"`
	Role            bench.Role `json:"mode"`
	Axes            SweepAxes  `json:"axes"`
	DurationS       float64    `json:"durationSeconds"` // per cell
	UsableCPUs      string     `json:"usableCPUs,omitempty"`
	LinkSpeedGbps   float64    `json:"linkSpeedGbps,omitempty"`
	LinkSpeedSource string     `json:"linkSpeedSource,omitempty"`
	// Peer is the far host of a two-host sweep (--peer): each cell ran its
	// far side there (FarRole), and each cell's result holds both sides'
	// ports
	Peer    string      `json:"peer,omitempty"`
	FarRole bench.Role  `json:"farMode,omitempty"`
	Cells   []SweepCell `json:"cells"`
	Plots   []string    `json:"plots,omitempty"`
}

// SweepSpec is a sweep to plan: the base run, the axes, the CPUs this
// process may use (nil: unknown, not checked) and whether cells with more
// workers than CPUs run anyway.
type SweepSpec struct {
	Base   bench.Config
	Axes   SweepAxes
	CPUs   []int
	Force  bool
	Stderr io.Writer // progress lines; nil: none
	// Peer is the far host (HOST:PORT) each cell's far side runs on (the
	// RunFunc does it: peer.Peer.Trial); "": one host
	Peer string
}

// withDefaults gives every empty axis the base run's value.
func (a SweepAxes) withDefaults(base bench.Config) SweepAxes {
	d := bench.DefaultConfig(base.Role)
	pick := func(v []int, b, def int) []int {
		if len(v) > 0 {
			return v
		}
		if b > 0 {
			return []int{b}
		}
		return []int{def}
	}
	a.Sizes = pick(a.Sizes, base.FrameSize, d.FrameSize)
	a.Cores = pick(a.Cores, base.Cores, d.Cores)
	a.Queues = pick(a.Queues, base.RxQ, d.RxQ)
	a.Bursts = pick(a.Bursts, base.Burst, d.Burst)
	a.Descs = pick(a.Descs, base.RxD, d.RxD)
	if len(a.Rates) == 0 {
		a.Rates = []string{base.Rate}
	}
	a.Rates = append([]string(nil), a.Rates...)
	for i, r := range a.Rates {
		if r == "" || strings.EqualFold(strings.TrimSpace(r), "max") {
			a.Rates[i] = "max"
		}
	}
	return a
}

// check refuses an axis value below 1 (the run's own validation would take
// a zero for its default).
func (a SweepAxes) check() error {
	for _, ax := range []struct {
		flag string
		v    []int
	}{{"--size", a.Sizes}, {"--cores", a.Cores}, {"--queues", a.Queues}, {"--burst", a.Bursts}, {"--desc", a.Descs}} {
		for _, v := range ax.v {
			if v < 1 {
				return fmt.Errorf("sweep: %s %d: want 1 or more", ax.flag, v)
			}
		}
	}
	return nil
}

// PlanSweep lays the cells out (size, then queues, burst, descriptors,
// rate, cores: a core-count curve is contiguous) and validates each
// cell's configuration before anything runs: a bad value is a usage error.
func PlanSweep(s SweepSpec) (*Sweep, error) {
	if s.Base.Role == "" {
		s.Base.Role = bench.RoleLoop
	}
	ax := s.Axes.withDefaults(s.Base)
	if err := ax.check(); err != nil {
		return nil, err
	}
	sw := &Sweep{SchemaVersion: SweepSchemaVersion, Role: s.Base.Role, Axes: ax, DurationS: s.Base.Duration.Seconds()}
	if s.Peer != "" {
		fr, err := bench.FarRole(s.Base.Role)
		if err != nil {
			return nil, fmt.Errorf("sweep --role %s: %w", s.Base.Role, err)
		}
		sw.Peer, sw.FarRole = s.Peer, fr
	}
	if s.CPUs != nil {
		sw.UsableCPUs = cpuset.FormatList(s.CPUs)
	}
	for _, size := range ax.Sizes {
		for _, q := range ax.Queues {
			for _, b := range ax.Bursts {
				for _, d := range ax.Descs {
					for _, r := range ax.Rates {
						for _, cores := range ax.Cores {
							cell := SweepCell{N: len(sw.Cells) + 1, FrameSize: size, Burst: b, Cores: cores, Queues: q, Desc: d, Rate: strings.TrimSuffix(r, "max")}
							if err := planCell(&cell, s); err != nil {
								return nil, fmt.Errorf("sweep cell %d (%s): %w", cell.N, cell.Label(), err)
							}
							sw.Cells = append(sw.Cells, cell)
						}
					}
				}
			}
		}
	}
	return sw, nil
}

// planCell sets the cell's configuration, or marks it not run when its
// workers would outnumber the CPUs (unless forced: then they share them).
func planCell(cell *SweepCell, s SweepSpec) error {
	c := s.Base
	c.FrameSize, c.Burst, c.Cores, c.RxQ, c.TxQ, c.RxD, c.TxD, c.Rate = cell.FrameSize, cell.Burst, cell.Cores, cell.Queues, cell.Queues, cell.Desc, cell.Desc, cell.Rate
	lc, sliced, ok := cellLcores(cell.Cores, s.CPUs, s.Force)
	c.Lcores, cell.Lcores, cell.TimeSliced = lc, lc, sliced
	if !ok {
		cell.Status = CellNotRun
		cell.Note = fmt.Sprintf("--cores %d needs %d CPUs (lcore 0 runs Go, each worker its own CPU); this process may use %d (%s): its workers would be time-sliced, so the numbers would measure the scheduler; --force runs it anyway, marked",
			cell.Cores, cell.Cores+1, len(s.CPUs), cpuset.FormatList(s.CPUs))
		c.Cores, c.Lcores = 1, "" // still check the rest of the cell
	}
	v := c
	v.Defaults() // a zero field means its default, as in the child
	if err := v.Validate(); err != nil {
		return err
	}
	if ok {
		cell.cfg = &c
	}
	return nil
}

// Label names a cell in messages.
func (c SweepCell) Label() string {
	rate := c.Rate
	if rate == "" {
		rate = "max"
	}
	return fmt.Sprintf("%d B, burst %d, %d core(s), %d queue(s), %d descriptors, rate %s", c.FrameSize, c.Burst, c.Cores, c.Queues, c.Desc, rate)
}

// RunSweep runs every planned cell in order, one run each. A cell whose run
// fails is marked failed and the sweep goes on; an interrupt marks the
// cells left not run.
func RunSweep(ctx context.Context, sw *Sweep, run bench.RunFunc, stderr io.Writer) {
	for i := range sw.Cells {
		cell := &sw.Cells[i]
		if cell.cfg == nil {
			continue
		}
		if ctx.Err() != nil {
			cell.Status, cell.Note = CellNotRun, "interrupted before this cell"
			continue
		}
		start := time.Now()
		res, err := run(ctx, *cell.cfg)
		cell.record(sw, res, err)
		if stderr != nil {
			fmt.Fprintf(stderr, "sweep cell %d/%d (%s): %s (%.1f s)\n", cell.N, len(sw.Cells), cell.Label(), cell.summary(), time.Since(start).Seconds())
		}
	}
}

// record fills a cell from its run.
func (c *SweepCell) record(sw *Sweep, r *bench.Result, err error) {
	if err != nil {
		c.Status, c.Error = CellFailed, bench.ErrorWithFix(err)
		return
	}
	if r.Interrupted {
		c.Status, c.Note = CellNotRun, "interrupted during this cell"
		return
	}
	c.Result = r
	c.Status = CellMeasured
	if len(r.Invalid) > 0 {
		c.Status, c.Invalid = CellInvalid, r.Invalid
	}
	c.Mpps, c.Gbps, c.GbpsL1, c.LineRatePct = roleRates(r)
	c.FarMpps, c.FarGbps = farRates(r)
	for _, p := range r.Ports {
		if p.BytesNotMeasured && p.Host == "far" {
			c.FarGbpsNotMeasured = true
		} else if p.BytesNotMeasured {
			c.GbpsNotMeasured = true
		}
	}
	c.Sent, c.Received, c.Lost = r.Sent, r.Received, r.Lost
	if sw.LinkSpeedGbps == 0 && r.LinkSpeedGbps > 0 {
		sw.LinkSpeedGbps, sw.LinkSpeedSource = r.LinkSpeedGbps, r.LinkSpeedSource
	}
}

// summary is a cell's outcome in one phrase.
func (c *SweepCell) summary() string {
	switch c.Status {
	case CellMeasured:
		gbps := fmt.Sprintf("%.3f Gbps", c.Gbps)
		if c.GbpsNotMeasured {
			gbps = "Gbps not measured (io)"
		}
		if c.Result != nil && c.Result.Peer != nil {
			return fmt.Sprintf("%.3f Mpps, %s; far side %.3f Mpps; lost %d", c.Mpps, gbps, c.FarMpps, c.Lost)
		}
		return fmt.Sprintf("%.3f Mpps, %s", c.Mpps, gbps)
	case CellInvalid:
		return "INVALID MEASUREMENT: " + strings.Join(c.Invalid, "; ")
	case CellFailed:
		return "failed: " + c.Error
	}
	return c.Status + ": " + c.Note
}

// roleRates is what a run measured in its role's direction: what a loop or
// a receiver received, what a generator sent or a forwarder forwarded; on
// this host (a two-host run's far ports are farRates').
func roleRates(r *bench.Result) (mpps, gbps, gbpsL1, pct float64) {
	for _, p := range r.Ports {
		if p.Host == "far" {
			continue
		}
		if r.Role == bench.RoleGen || r.Role == bench.RoleFwd {
			mpps, gbps, gbpsL1, pct = mpps+p.TxMpps, gbps+p.TxGbps, gbpsL1+p.TxGbpsL1, max(pct, p.TxLineRatePct)
		} else {
			mpps, gbps, gbpsL1, pct = mpps+p.RxMpps, gbps+p.RxGbps, gbpsL1+p.RxGbpsL1, max(pct, p.RxLineRatePct)
		}
	}
	return mpps, gbps, gbpsL1, pct
}

// farRates is what a two-host run's far side carried (0 without one): what
// it received of a generator's frames, what its forwarder sent back of a
// loop's.
func farRates(r *bench.Result) (mpps, gbps float64) {
	for _, p := range r.Ports {
		switch {
		case p.Host != "far":
		case r.Role == bench.RoleGen:
			mpps, gbps = mpps+p.RxMpps, gbps+p.RxGbps
		default:
			mpps, gbps = mpps+p.TxMpps, gbps+p.TxGbps
		}
	}
	return mpps, gbps
}
