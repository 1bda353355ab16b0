package search

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"rig/bench"
)

// The sweep's table (like seed 002's: size, burst, cores, queues,
// descriptors, then the rate), and its CSV. A cell whose numbers cannot be
// right shows none (its reasons follow the table); JSON keeps them, with
// the status and the reasons.

// PrintTable writes the sweep as a text table, then a line per cell that
// was not measured (invalid, not run, failed) saying why.
func (sw *Sweep) PrintTable(w io.Writer) {
	link := "link speed unknown: no % of line (give --link-speed)"
	if sw.LinkSpeedGbps > 0 {
		link = fmt.Sprintf("link %gG (%s)", sw.LinkSpeedGbps, sw.LinkSpeedSource)
	}
	fmt.Fprintf(w, "rig bench sweep: %s, %d cell(s) of %gs, %s", sw.Role, len(sw.Cells), sw.DurationS, link)
	if sw.UsableCPUs != "" {
		fmt.Fprintf(w, ", CPUs %s", sw.UsableCPUs)
	}
	fmt.Fprintln(w)
	if sw.Peer != "" {
		fmt.Fprintf(w, "two hosts: the %s here, the far side (%s) on peer %s; %s\n", sw.Role, sw.FarRole, sw.Peer, sw.farColumn())
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "#\tframe B\tburst\tcores\trxq/txq\trxd/txd\trate\tMpps\tGbps\tL1 Gbps\t% line\tlost\t"
	if sw.Peer != "" {
		head += "far Mpps\tfar Gbps\t"
	}
	fmt.Fprintln(tw, head+"status\t")
	for _, c := range sw.Cells {
		nums := sw.cellNums(c, "-")
		if sw.LinkSpeedGbps > 0 && c.Status == CellMeasured && !c.GbpsNotMeasured {
			nums[3] = fmt.Sprintf("%.1f", c.LineRatePct)
		}
		row := []string{strconv.Itoa(c.N), strconv.Itoa(c.FrameSize), strconv.Itoa(c.Burst), strconv.Itoa(c.Cores),
			strconv.Itoa(c.Queues), strconv.Itoa(c.Desc), rateLabel(c.Rate)}
		fmt.Fprintln(tw, strings.Join(append(append(row, nums...), c.statusLabel()), "\t")+"\t")
	}
	tw.Flush()
	for _, c := range sw.Cells {
		for _, why := range c.notes() {
			fmt.Fprintf(w, "cell %d: %s\n", c.N, why)
		}
	}
}

// cellNums are a cell's numbers in the table's and the CSV's order: Mpps,
// Gbps, L1 Gbps, % of line (left to the caller), lost (a loop, or a
// generator whose frames the far host counted), and the far side's Mpps
// and Gbps with a peer; none (none) unless the cell was measured, and for
// a Gbps an io forwarder did not measure.
func (sw *Sweep) cellNums(c SweepCell, none string) []string {
	n := 5
	if sw.Peer != "" {
		n = 7
	}
	nums := make([]string, n)
	for i := range nums {
		nums[i] = none
	}
	if c.Status != CellMeasured {
		return nums
	}
	nums[0] = f3(c.Mpps)
	if !c.GbpsNotMeasured {
		nums[1], nums[2] = f3(c.Gbps), f3(c.GbpsL1)
	}
	if sw.Role == bench.RoleLoop || sw.Peer != "" {
		nums[4] = strconv.FormatInt(c.Lost, 10)
	}
	if sw.Peer != "" {
		nums[5] = f3(c.FarMpps)
		if !c.FarGbpsNotMeasured {
			nums[6] = f3(c.FarGbps)
		}
	}
	return nums
}

// farColumn says what the far columns and the loss are.
func (sw *Sweep) farColumn() string {
	if sw.Role == bench.RoleGen {
		return "Mpps is what this host sent, far Mpps what the far host received, lost the difference"
	}
	return "Mpps is what came back, far Mpps what the far forwarder sent back, lost what was sent and did not come back"
}

func f3(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

func rateLabel(r string) string {
	if r == "" {
		return "max"
	}
	return r
}

// statusLabel is the table's status column.
func (c SweepCell) statusLabel() string {
	s := map[string]string{CellMeasured: "ok", CellInvalid: "INVALID", CellNotRun: "not run", CellFailed: "FAILED"}[c.Status]
	if c.TimeSliced != "" {
		s += ", time-sliced"
	}
	return s
}

// notes are the lines under the table for one cell.
func (c SweepCell) notes() []string {
	var out []string
	if c.TimeSliced != "" {
		out = append(out, "ran with "+c.TimeSliced+" (--lcores "+c.Lcores+"): not a measurement of the path")
	}
	switch c.Status {
	case CellInvalid:
		for _, why := range c.Invalid {
			out = append(out, "INVALID MEASUREMENT: "+why)
		}
	case CellNotRun:
		out = append(out, "not run: "+c.Note)
	case CellFailed:
		out = append(out, "failed: "+c.Error)
	}
	if c.GbpsNotMeasured {
		out = append(out, "Gbps not measured: the forwarder ran io mode, which reads no frame (--fwd-mode mac counts bytes)")
	}
	if c.FarGbpsNotMeasured {
		out = append(out, "far Gbps not measured: the far forwarder ran io mode, which reads no frame (--peer-fwd-mode mac counts bytes)")
	}
	return out
}

// SweepCSVHeader is the CSV's first line.
var SweepCSVHeader = []string{"n", "frame_size", "burst", "cores", "queues", "descriptors", "rate", "lcores", "status", "time_sliced",
	"mpps", "gbps", "gbps_l1", "line_rate_pct", "sent", "received", "lost", "far_mpps", "far_gbps", "note"}

// WriteCSV writes one line per cell; the numbers are empty unless the cell
// was measured (an invalid cell's reasons are its note).
func (sw *Sweep) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(SweepCSVHeader); err != nil {
		return err
	}
	for _, c := range sw.Cells {
		// mpps, gbps, gbps_l1, line_rate_pct, sent, received, lost, far_mpps, far_gbps
		t := append(sw.cellNums(c, ""), "", "")[:7]
		nums := []string{t[0], t[1], t[2], t[3], "", "", t[4], t[5], t[6]}
		if c.Status == CellMeasured {
			nums[4], nums[5] = fmt.Sprint(c.Sent), fmt.Sprint(c.Received)
			if sw.LinkSpeedGbps > 0 && !c.GbpsNotMeasured {
				nums[3] = fmt.Sprintf("%.2f", c.LineRatePct)
			}
		}
		row := []string{strconv.Itoa(c.N), strconv.Itoa(c.FrameSize), strconv.Itoa(c.Burst), strconv.Itoa(c.Cores), strconv.Itoa(c.Queues),
			strconv.Itoa(c.Desc), rateLabel(c.Rate), c.Lcores, c.Status, c.TimeSliced}
		row = append(append(row, nums...), strings.Join(c.notes(), "; "))
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
