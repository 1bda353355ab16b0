package bench

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
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
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "#\tframe B\tburst\tcores\trxq/txq\trxd/txd\trate\tMpps\tGbps\tL1 Gbps\t% line\tlost\tstatus\t")
	for _, c := range sw.Cells {
		nums := []string{"-", "-", "-", "-", "-"}
		if c.Status == CellMeasured {
			nums = []string{f3(c.Mpps), f3(c.Gbps), f3(c.GbpsL1), "-", "-"}
			if sw.LinkSpeedGbps > 0 {
				nums[3] = fmt.Sprintf("%.1f", c.LineRatePct)
			}
			if sw.Role == RoleLoop {
				nums[4] = strconv.FormatInt(c.Lost, 10)
			}
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
	return out
}

// SweepCSVHeader is the CSV's first line.
var SweepCSVHeader = []string{"n", "frame_size", "burst", "cores", "queues", "descriptors", "rate", "lcores", "status", "time_sliced",
	"mpps", "gbps", "gbps_l1", "line_rate_pct", "sent", "received", "lost", "note"}

// WriteCSV writes one line per cell; the numbers are empty unless the cell
// was measured (an invalid cell's reasons are its note).
func (sw *Sweep) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(SweepCSVHeader); err != nil {
		return err
	}
	for _, c := range sw.Cells {
		nums := make([]string, 7)
		if c.Status == CellMeasured {
			nums = []string{f3(c.Mpps), f3(c.Gbps), f3(c.GbpsL1), "", fmt.Sprint(c.Sent), fmt.Sprint(c.Received), ""}
			if sw.LinkSpeedGbps > 0 {
				nums[3] = fmt.Sprintf("%.2f", c.LineRatePct)
			}
			if sw.Role == RoleLoop {
				nums[6] = strconv.FormatInt(c.Lost, 10)
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
