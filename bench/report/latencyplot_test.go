package report

import (
	"bytes"
	"image/png"
	"math"
	"math/rand"
	"strings"
	"testing"

	"rig/bench"
)

// latencyOf is a Latency as collect builds it, from samples in cycles at 1 GHz.
func latencyOf(samples []uint64) *bench.Latency {
	hist := make([]uint64, bench.HistN)
	acc := bench.LatencyAcc{Hist: hist, MinCyc: ^uint64(0)}
	for _, v := range samples {
		hist[bench.HistIndex(v)]++
		acc.N++
		acc.Sum += v
		acc.MinCyc, acc.MaxCyc = min(acc.MinCyc, v), max(acc.MaxCyc, v)
	}
	return acc.Result(1e9, 0.5)
}

// The plot is an SVG or a PNG with the percentile axis and the marked
// percentiles; without samples or with another format there is none.
func TestWriteLatencyPlot(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	var s []uint64
	for i := 0; i < 20000; i++ {
		s = append(s, 2000+uint64(rng.ExpFloat64()*500)) // 2 us + a tail
	}
	l := latencyOf(s)
	l.LoadMpps, l.CapacityMpps, l.LoadOfCapacity = 1.5, 3, "50%"
	var svg bytes.Buffer
	if err := WriteLatencyPlot(&svg, l, "svg"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<svg", "99.9%", "99.99%", "p99.9 ", "latency (us)", "20000 samples at 1.500 Mpps (50% of 3.000 Mpps capacity)"} {
		if !strings.Contains(svg.String(), want) {
			t.Errorf("svg lacks %q", want)
		}
	}
	if strings.Contains(svg.String(), "99.999%") {
		t.Error("svg marks 99.999 % with 20000 samples")
	}
	var pb bytes.Buffer
	if err := WriteLatencyPlot(&pb, l, "png"); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&pb)
	if err != nil || img.Bounds().Dx() < 300 || img.Bounds().Dy() < 200 {
		t.Fatalf("png: %v, %v", img.Bounds(), err)
	}
	// one sample still draws (the axis spans at least 1..10)
	if err := WriteLatencyPlot(&bytes.Buffer{}, latencyOf([]uint64{1500}), "svg"); err != nil {
		t.Errorf("one sample: %v", err)
	}
	if err := WriteLatencyPlot(&bytes.Buffer{}, nil, "svg"); err == nil || !strings.Contains(err.Error(), "no latency samples") {
		t.Errorf("no latency: %v", err)
	}
	for _, p := range []string{"lat.pdf", "lat", "lat.svg.txt"} {
		if _, err := LatencyPlotFormat(p); err == nil || !strings.Contains(err.Error(), ".svg or .png") {
			t.Errorf("LatencyPlotFormat(%q): %v", p, err)
		}
	}
	if f, err := LatencyPlotFormat("out/Lat.PNG"); f != "png" || err != nil {
		t.Errorf("LatencyPlotFormat(Lat.PNG) = %q, %v", f, err)
	}
}

// The curve climbs: each point's latency is at least the one before, and
// it ends at the max, at x = n.
func TestPercentileCurveClimbs(t *testing.T) {
	l := latencyOf([]uint64{1000, 1000, 1200, 5000, 90000})
	c := percentileCurve(l)
	for i := 1; i < len(c); i++ {
		if c[i].X < c[i-1].X || c[i].Y < c[i-1].Y {
			t.Fatalf("curve goes back at %d: %v", i, c)
		}
	}
	if last := c[len(c)-1]; math.Abs(last.X-5) > 1e-9 || last.Y != l.MaxUs || c[0].X != 1 {
		t.Errorf("curve %v: want from x=1 to x=5 at the max %v", c, l.MaxUs)
	}
}
