package plot

import (
	"fmt"
	"strings"

	"rig/bench"
	"rig/bench/search"
)

// Sweep writes a sweep's charts as SVG and PNG: prefix-mpps and prefix-gbps
// (against the frame size, with the line rate when the link speed is
// known), and prefix-cores (Mpps against the worker cores) when two core
// counts or more were measured. It returns the files written.
func Sweep(sw *search.Sweep, prefix string) ([]string, error) {
	var files []string
	for _, nc := range SweepCharts(sw) {
		f, err := nc.Chart.Save(prefix + "-" + nc.Name)
		files = append(files, f...)
		if err != nil {
			return files, err
		}
	}
	return files, nil
}

// NamedChart is a chart and its file name's suffix.
type NamedChart struct {
	Name  string
	Chart Chart
}

// SweepCharts are the sweep's charts. Only measured cells are drawn (an
// invalid, failed or skipped cell has no numbers to show); time-sliced
// ones (--force) are grey markers of their own; a Gbps an io forwarder did
// not measure is left out of the Gbps chart.
func SweepCharts(sw *search.Sweep) []NamedChart {
	title := fmt.Sprintf("rig bench sweep (%s)", sw.Role)
	sizeKey := func(c search.SweepCell) string { return seriesName(sw.Axes, c, "size") }
	mpps := Chart{Title: title + ": Mpps by frame size", XLabel: "frame size (bytes, FCS included)", YLabel: "Mpps",
		Series: cellSeries(sw, sizeKey, func(c search.SweepCell) XY { return XY{float64(c.FrameSize), c.Mpps} })}
	gbps := Chart{Title: title + ": Gbps by frame size", XLabel: "frame size (bytes, FCS included)", YLabel: "Gbps (L2, FCS included)",
		Series: cellSeries(cellsWhere(sw, func(c search.SweepCell) bool { return !c.GbpsNotMeasured }), sizeKey,
			func(c search.SweepCell) XY { return XY{float64(c.FrameSize), c.Gbps} })}
	mpps.XTicks, gbps.XTicks = floats(sw.Axes.Sizes), floats(sw.Axes.Sizes)
	if sw.Peer != "" {
		// two hosts: what the far side carried, next to what this host measured
		farKey := func(c search.SweepCell) string {
			if k := sizeKey(c); k != "measured" {
				return farSeriesName(sw) + ", " + k
			}
			return farSeriesName(sw)
		}
		mpps.Series = append(mpps.Series, farOnly(cellSeries(sw, farKey, func(c search.SweepCell) XY { return XY{float64(c.FrameSize), c.FarMpps} }))...)
		farGbps := cellsWhere(sw, func(c search.SweepCell) bool { return !c.FarGbpsNotMeasured })
		gbps.Series = append(gbps.Series, farOnly(cellSeries(farGbps, farKey, func(c search.SweepCell) XY { return XY{float64(c.FrameSize), c.FarGbps} }))...)
	}
	if sw.LinkSpeedGbps > 0 {
		lo, hi := minMax(sw.Axes.Sizes)
		mpps.Series = append(mpps.Series, LineRateMpps(sw.LinkSpeedGbps, lo, hi))
		gbps.Series = append(gbps.Series, LineRateGbps(sw.LinkSpeedGbps, lo, hi))
	}
	out := []NamedChart{{"mpps", mpps}, {"gbps", gbps}}
	if measuredCores(sw) > 1 {
		cores := Chart{Title: title + ": Mpps by worker cores", XLabel: "worker cores", YLabel: "Mpps",
			Series: cellSeries(sw, func(c search.SweepCell) string { return seriesName(sw.Axes, c, "cores") },
				func(c search.SweepCell) XY { return XY{float64(c.Cores), c.Mpps} }), XTicks: floats(sw.Axes.Cores)}
		if lo, hi := minMax(sw.Axes.Cores); sw.LinkSpeedGbps > 0 && len(sw.Axes.Sizes) == 1 {
			lr := bench.LineRatePPS(sw.LinkSpeedGbps*1e9, sw.Axes.Sizes[0]) / 1e6
			cores.Series = append(cores.Series, Series{Name: fmt.Sprintf("line rate (%gG)", sw.LinkSpeedGbps), Reference: true,
				Points: []XY{{float64(lo), lr}, {float64(hi), lr}}})
		}
		out = append(out, NamedChart{"cores", cores})
	}
	return out
}

// farSeriesName names the far side's series.
func farSeriesName(sw *search.Sweep) string {
	if sw.Role == bench.RoleGen {
		return "far host received"
	}
	return "far forwarder sent"
}

// cellsWhere is sw with only the cells keep accepts.
func cellsWhere(sw *search.Sweep, keep func(search.SweepCell) bool) *search.Sweep {
	out := *sw
	out.Cells = nil
	for _, c := range sw.Cells {
		if keep(c) {
			out.Cells = append(out.Cells, c)
		}
	}
	return &out
}

// farOnly drops the time-sliced marker series (drawn once, with this
// host's numbers).
func farOnly(ss []Series) []Series {
	var out []Series
	for _, s := range ss {
		if !s.Scatter {
			out = append(out, s)
		}
	}
	return out
}

// measuredCores counts the core counts measured (a Mpps-by-cores chart
// needs two).
func measuredCores(sw *search.Sweep) int {
	seen := map[int]bool{}
	for _, c := range sw.Cells {
		if c.Status == search.CellMeasured {
			seen[c.Cores] = true
		}
	}
	return len(seen)
}

// cellSeries groups the measured cells into series by key (time-sliced
// cells into one marker series of their own), in the order first seen.
func cellSeries(sw *search.Sweep, key func(search.SweepCell) string, xy func(search.SweepCell) XY) []Series {
	var out []Series
	idx := map[string]int{}
	var sliced []XY
	for _, c := range sw.Cells {
		if c.Status != search.CellMeasured {
			continue
		}
		if c.TimeSliced != "" {
			sliced = append(sliced, xy(c))
			continue
		}
		k := key(c)
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, Series{Name: k})
		}
		out[i].Points = append(out[i].Points, xy(c))
	}
	if len(sliced) > 0 {
		out = append(out, Series{Name: "time-sliced (forced, not the path's rate)", Points: sliced, Scatter: true})
	}
	return out
}

// seriesName names a cell's series by the axes that vary in the sweep,
// other than the chart's x axis ("measured" when none does).
func seriesName(ax search.SweepAxes, c search.SweepCell, x string) string {
	var parts []string
	add := func(axis string, n int, s string) {
		if axis != x && n > 1 {
			parts = append(parts, s)
		}
	}
	add("size", len(ax.Sizes), fmt.Sprintf("%d B", c.FrameSize))
	add("cores", len(ax.Cores), fmt.Sprintf("%d core(s)", c.Cores))
	add("queues", len(ax.Queues), fmt.Sprintf("%d queue(s)", c.Queues))
	add("burst", len(ax.Bursts), fmt.Sprintf("burst %d", c.Burst))
	add("desc", len(ax.Descs), fmt.Sprintf("%d desc", c.Desc))
	rate := c.Rate
	if rate == "" {
		rate = "max"
	}
	add("rate", len(ax.Rates), "rate "+rate)
	if len(parts) == 0 {
		return "measured"
	}
	return strings.Join(parts, ", ")
}

func floats(v []int) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func minMax(v []int) (lo, hi int) {
	lo, hi = v[0], v[0]
	for _, x := range v {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}

// sizeRange is the frame sizes a line-rate curve spans: the chart's, or
// around a single size.
func sizeRange(lo, hi int) (int, int) {
	if lo == hi {
		return max(64, lo/2), min(9000, max(hi*2, 128))
	}
	return lo, hi
}

// LineRateMpps is the line rate in Mpps across frame sizes lo..hi.
func LineRateMpps(gbps float64, lo, hi int) Series {
	return lineRate(gbps, lo, hi, func(s int) float64 { return bench.LineRatePPS(gbps*1e9, s) / 1e6 })
}

// LineRateGbps is the line rate in L2 Gbps (FCS included, preamble and gap
// not) across frame sizes lo..hi: what a full link carries of frames.
func LineRateGbps(gbps float64, lo, hi int) Series {
	return lineRate(gbps, lo, hi, func(s int) float64 { return gbps * float64(s) / float64(s+bench.WireOverhead) })
}

func lineRate(gbps float64, lo, hi int, f func(int) float64) Series {
	lo, hi = sizeRange(lo, hi)
	s := Series{Name: fmt.Sprintf("line rate (%gG)", gbps), Reference: true}
	const steps = 64
	for i := 0; i <= steps; i++ {
		size := lo + (hi-lo)*i/steps
		s.Points = append(s.Points, XY{float64(size), f(size)})
	}
	return s
}
