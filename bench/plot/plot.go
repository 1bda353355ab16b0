// Package plot draws rig bench's sweeps and zero-loss searches as SVG and
// PNG charts with gonum.org/v1/plot: Mpps and Gbps against the frame size
// (with the line rate when the link speed is known), Mpps against the
// worker cores. Pure Go: the provisioning-only build (no cgo) has it too.
package plot

import (
	"fmt"
	"image/color"
	"math"
	"sort"
	"strconv"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// XY is one point.
type XY struct{ X, Y float64 }

// Series is one line (or set of points) of a chart.
type Series struct {
	Name   string
	Points []XY
	// Reference draws a dashed black line without markers (the line
	// rate); Scatter draws markers only (runs that are no measurement of
	// the path, e.g. time-sliced ones).
	Reference, Scatter bool
}

// Chart is one figure.
type Chart struct {
	Title, XLabel, YLabel string
	Series                []Series
	XTicks                []float64 // labelled x values (the sweep's sizes or core counts); nil: gonum's
}

// Formats are the files each chart is written as.
var Formats = []string{"svg", "png"}

// Save writes the chart as base.svg and base.png and returns their names.
func (c Chart) Save(base string) ([]string, error) {
	p, err := c.build()
	if err != nil {
		return nil, err
	}
	var files []string
	for _, f := range Formats {
		name := base + "." + f
		if err := p.Save(7*vg.Inch, 4.5*vg.Inch, name); err != nil {
			return files, fmt.Errorf("plot %s: %w", name, err)
		}
		files = append(files, name)
	}
	return files, nil
}

// build lays the chart out: a grid, the series in order, a legend; the y
// axis starts at 0 (rates are compared against nothing).
func (c Chart) build() (*gplot.Plot, error) {
	p := gplot.New()
	p.Title.Text = c.Title
	p.X.Label.Text = c.XLabel
	p.Y.Label.Text = c.YLabel
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs, p.Legend.YOffs = vg.Points(8), -vg.Points(6)
	for i, s := range c.Series {
		if len(s.Points) == 0 {
			continue
		}
		pts := make(plotter.XYs, len(s.Points))
		sorted := append([]XY(nil), s.Points...)
		sort.SliceStable(sorted, func(a, b int) bool { return sorted[a].X < sorted[b].X })
		for j, pt := range sorted {
			pts[j].X, pts[j].Y = pt.X, pt.Y
		}
		if err := addSeries(p, s, pts, i); err != nil {
			return nil, fmt.Errorf("plot %q: series %q: %w", c.Title, s.Name, err)
		}
	}
	c.axes(p)
	return p, nil
}

// axes: x spans the data with a margin (markers at the ends stay whole),
// y starts at 0 and leaves room above the data for the legend.
func (c Chart) axes(p *gplot.Plot) {
	xlo, xhi, yhi := math.Inf(1), math.Inf(-1), 0.0
	entries := 0
	for _, s := range c.Series {
		if len(s.Points) > 0 {
			entries++
		}
		for _, pt := range s.Points {
			xlo, xhi, yhi = math.Min(xlo, pt.X), math.Max(xhi, pt.X), math.Max(yhi, pt.Y)
		}
	}
	if entries == 0 {
		return
	}
	pad := math.Max((xhi-xlo)*0.04, 0.5)
	p.X.Min, p.X.Max = xlo-pad, xhi+pad
	if yhi <= 0 {
		yhi = 1
	}
	p.Y.Min, p.Y.Max = 0, yhi*(1.1+0.07*float64(entries))
	if len(c.XTicks) > 0 {
		var ticks []gplot.Tick
		for _, x := range c.XTicks {
			ticks = append(ticks, gplot.Tick{Value: x, Label: strconv.FormatFloat(x, 'f', -1, 64)})
		}
		p.X.Tick.Marker = gplot.ConstantTicks(ticks)
	}
}

func addSeries(p *gplot.Plot, s Series, pts plotter.XYs, i int) error {
	switch {
	case s.Reference:
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color = color.Black
		l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		p.Add(l)
		p.Legend.Add(s.Name, l)
	case s.Scatter:
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return err
		}
		sc.Color = color.RGBA{R: 160, G: 160, B: 160, A: 255}
		sc.Shape = plotutil.Shape(i)
		p.Add(sc)
		p.Legend.Add(s.Name, sc)
	default:
		l, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return err
		}
		l.Color, sc.Color = plotutil.Color(i), plotutil.Color(i)
		sc.Shape = plotutil.Shape(i)
		p.Add(l, sc)
		p.Legend.Add(s.Name, l, sc)
	}
	return nil
}
