package report

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"rig/bench"
)

// PrintLineRateTable writes the Mpps line-rate table.
func PrintLineRateTable(w io.Writer, frames []int, speeds []float64) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "line rate in Mpps (million frames per second) at each link speed; frame: FCS included, wire: + preamble, SFD and inter-frame gap")
	hdr := []string{"frame B", "wire B"}
	for _, s := range speeds {
		hdr = append(hdr, fmt.Sprintf("%gG Mpps", s))
	}
	fmt.Fprintln(tw, strings.Join(hdr, "\t")+"\t")
	tab := bench.LineRateTable(frames, speeds)
	for i, f := range frames {
		row := []string{fmt.Sprint(f), fmt.Sprint(f + bench.WireOverhead)}
		for _, v := range tab[i] {
			row = append(row, fmt.Sprintf("%.3f", v))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	tw.Flush()
}
