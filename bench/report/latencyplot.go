// Package report draws what runs measured: the latency plot (SVG or PNG)
// and the line-rate table. A Result's own summary is Result.PrintSummary;
// a sweep's and a search's tables are their types' (bench/search).
package report

import (
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"

	"rig/bench"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// LatencyPlotFormat is the image format of a --latency-plot file: svg or
// png, from its extension.
func LatencyPlotFormat(path string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".svg", ".png":
		return ext[1:], nil
	default:
		return "", fmt.Errorf("--latency-plot %q: want a file name ending in .svg or .png", path)
	}
}

// WriteLatencyPlot draws the latency distribution as HdrHistogram plots
// it: latency (us) against percentile, the percentile axis logarithmic in
// 1/(1-p) so that 90 %, 99 %, 99.9 % ... are evenly spaced; p50, p90,
// p99, p99.9 and the max are marked. The latency axis is logarithmic too:
// a tail (a preempted lcore) is often 1000x the median and would flatten
// everything else. format: svg or png.
func WriteLatencyPlot(w io.Writer, l *bench.Latency, format string) error {
	if l == nil || l.Histogram == nil || l.Histogram.Count == 0 {
		return errors.New("latency plot: no latency samples (only loop and rx measure latency, from frames carrying rig's stamp)")
	}
	p := plot.New()
	p.Title.Text = latencyPlotTitle(l)
	p.X.Label.Text = "percentile"
	p.Y.Label.Text = "latency (us)"
	n := float64(l.Histogram.Count)
	p.X.Scale = plot.LogScale{}
	p.X.Min, p.X.Max = 1, math.Max(n, 10)
	p.X.Tick.Marker = percentileTicks(p.X.Max)
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.Y.Min, p.Y.Max = plotFloor(l.MinUs), math.Max(plotFloor(l.MaxUs), 10*plotFloor(l.MinUs))
	p.Add(plotter.NewGrid())
	line, err := plotter.NewLine(percentileCurve(l))
	if err != nil {
		return fmt.Errorf("latency plot: %w", err)
	}
	p.Add(line)
	marks, err := percentileMarks(l)
	if err != nil {
		return fmt.Errorf("latency plot: %w", err)
	}
	p.Add(marks...)
	wt, err := p.WriterTo(20*vg.Centimeter, 12*vg.Centimeter, format)
	if err != nil {
		return fmt.Errorf("latency plot: %w", err)
	}
	_, err = wt.WriteTo(w)
	return err
}

func latencyPlotTitle(l *bench.Latency) string {
	s := fmt.Sprintf("latency by percentile, %d samples at %.3f Mpps", l.Histogram.Count, l.LoadMpps)
	if l.CapacityMpps > 0 {
		s += fmt.Sprintf(" (%s of %.3f Mpps capacity)", l.LoadOfCapacity, l.CapacityMpps)
	}
	if l.Saturated != "" {
		s += ", SATURATED"
	}
	return s
}

// percentileX is where percentile q (0 <= q < 1) sits on the plot's axis.
func percentileX(q float64) float64 { return 1 / (1 - q) }

// percentileCurve is a step per bucket: the k-th smallest of n samples
// (k from 0) at x = 1/(1-k/n), at its bucket's highest value (within the
// exact min and max, like the reported percentiles).
func percentileCurve(l *bench.Latency) plotter.XYs {
	h := l.Histogram
	n := float64(h.Count)
	var xys plotter.XYs
	var cum uint64
	for i, b := range h.Buckets {
		v := math.Min(math.Max(b.HighUs, l.MinUs), l.MaxUs)
		if i == len(h.Buckets)-1 {
			v = l.MaxUs
		}
		v = plotFloor(v)
		xys = append(xys, plotter.XY{X: percentileX(float64(cum) / n), Y: v})
		cum += b.Count
		xys = append(xys, plotter.XY{X: percentileX(float64(cum-1) / n), Y: v})
	}
	return xys
}

// plotFloor keeps a latency on the log axis: at least 1 ns (a frame can
// be stamped and received within one TSC tick).
func plotFloor(us float64) float64 { return math.Max(us, 0.001) }

// percentileMarks are labelled points at p50, p90, p99, p99.9 and the max
// (those the samples reach).
func percentileMarks(l *bench.Latency) ([]plot.Plotter, error) {
	n := float64(l.Histogram.Count)
	var xys plotter.XYs
	var labels []string
	for _, m := range []struct {
		name string
		q, v float64
	}{{"p50", 0.5, l.P50Us}, {"p90", 0.9, l.P90Us}, {"p99", 0.99, l.P99Us}, {"p99.9", 0.999, l.P999Us}, {"max", 1, l.MaxUs}} {
		x := percentileX(m.q)
		if m.q == 1 {
			x = n // the n-th of n samples, where the curve ends
		}
		if x <= n {
			xys = append(xys, plotter.XY{X: x, Y: plotFloor(m.v)})
			labels = append(labels, fmt.Sprintf(" %s %.2f", m.name, m.v))
		}
	}
	sc, err := plotter.NewScatter(xys)
	if err != nil {
		return nil, err
	}
	lb, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
	if err != nil {
		return nil, err
	}
	return []plot.Plotter{sc, lb}, nil
}

// percentileTicks label 0 %, 90 %, 99 %, 99.9 % ... up to top on the
// 1/(1-p) axis.
func percentileTicks(top float64) plot.ConstantTicks {
	ticks := plot.ConstantTicks{{Value: 1, Label: "0%"}}
	for d := 1; math.Pow(10, float64(d)) <= top; d++ {
		q := 1 - math.Pow(10, -float64(d)) // 90 %, 99 %, 99.9 % ...
		ticks = append(ticks, plot.Tick{Value: percentileX(q), Label: fmt.Sprintf("%.*f%%", max(d-2, 0), q*100)})
	}
	return ticks
}
