package plot

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rig/bench"
	"rig/bench/search"
)

func testSweep(link float64) *search.Sweep {
	sw := &search.Sweep{Role: bench.RoleLoop, LinkSpeedGbps: link, Axes: search.SweepAxes{Sizes: []int{64, 512, 1518}, Cores: []int{1, 2},
		Queues: []int{1}, Bursts: []int{32}, Descs: []int{1024}, Rates: []string{"max"}}}
	n := 0
	for _, size := range sw.Axes.Sizes {
		for _, cores := range sw.Axes.Cores {
			n++
			c := search.SweepCell{N: n, FrameSize: size, Cores: cores, Queues: 1, Burst: 32, Desc: 1024, Status: search.CellMeasured,
				Mpps: 10 * float64(cores) * 64 / float64(size)}
			c.Gbps = c.Mpps * float64(size) * 8 / 1000
			if size == 1518 && cores == 2 {
				c.Status = search.CellInvalid // never drawn
				c.Mpps = 1e6
			}
			if size == 512 && cores == 2 {
				c.TimeSliced = "2 worker lcore(s) time-sliced on 1 CPU(s) (forced)"
			}
			sw.Cells = append(sw.Cells, c)
		}
	}
	return sw
}

// The files: SVG and PNG of each chart, non-empty, with the right headers,
// and the PNG decodes to the chart's size.
func TestSweepPlotFiles(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "sw")
	files, err := Sweep(testSweep(10), prefix)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"-mpps.svg", "-mpps.png", "-gbps.svg", "-gbps.png", "-cores.svg", "-cores.png"}
	if len(files) != len(want) {
		t.Fatalf("files %q, want %d", files, len(want))
	}
	for i, f := range files {
		if f != prefix+want[i] {
			t.Errorf("file %d: %s, want %s", i, f, prefix+want[i])
		}
		checkImage(t, f)
	}
	svg, _ := os.ReadFile(prefix + "-mpps.svg")
	for _, s := range []string{"line rate (10G)", "Mpps by frame size", "1 core(s)", "time-sliced"} {
		if !bytes.Contains(svg, []byte(s)) {
			t.Errorf("mpps.svg lacks %q", s)
		}
	}
}

// checkImage: an SVG document or a PNG that decodes.
func checkImage(t *testing.T, f string) {
	t.Helper()
	b, err := os.ReadFile(f)
	if err != nil || len(b) < 1000 {
		t.Fatalf("%s: %d bytes, %v", f, len(b), err)
	}
	switch filepath.Ext(f) {
	case ".svg":
		if !bytes.HasPrefix(b, []byte("<?xml")) || !bytes.Contains(b[:500], []byte("<svg")) || !bytes.HasSuffix(bytes.TrimSpace(b), []byte("</svg>")) {
			t.Errorf("%s is not an SVG document: %.80q", f, b)
		}
	case ".png":
		if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
			t.Fatalf("%s: no PNG signature", f)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if r := img.Bounds(); r.Dx() < 300 || r.Dy() < 200 {
			t.Errorf("%s: %v, too small", f, r)
		}
	default:
		t.Errorf("%s: unexpected format", f)
	}
}

// What the charts hold: measured cells only, series by the varying axis,
// the time-sliced cell apart, and the line rate only with a link speed.
func TestSweepChartsContent(t *testing.T) {
	charts := SweepCharts(testSweep(0))
	if len(charts) != 3 || charts[0].Name != "mpps" || charts[2].Name != "cores" {
		t.Fatalf("charts %+v", charts)
	}
	names := []string{}
	points := 0
	for _, s := range charts[0].Chart.Series {
		names = append(names, s.Name)
		points += len(s.Points)
		for _, p := range s.Points {
			if p.Y > 1000 {
				t.Errorf("series %q draws the invalid cell (%v)", s.Name, p)
			}
		}
		if s.Reference {
			t.Errorf("a line-rate series without a link speed: %q", s.Name)
		}
	}
	if got := strings.Join(names, "|"); got != "1 core(s)|2 core(s)|time-sliced (forced, not the path's rate)" || points != 5 {
		t.Errorf("mpps series %q with %d points, want 5 points", got, points)
	}
	withLink := SweepCharts(testSweep(25))
	last := withLink[1].Chart.Series[len(withLink[1].Chart.Series)-1]
	if !last.Reference || last.Points[0].X != 64 || last.Points[len(last.Points)-1].X != 1518 {
		t.Fatalf("gbps line rate %+v", last)
	}
	// 25G at 64 B: 64/84 of 25 Gbps of frames
	if y := last.Points[0].Y; y < 19.04 || y > 19.05 {
		t.Errorf("line rate at 64 B: %g Gbps, want 19.05", y)
	}
	// one size only: the cores chart gets that size's line rate
	sw := testSweep(10)
	sw.Axes.Sizes = []int{64}
	cores := SweepCharts(sw)[2].Chart
	if lr := cores.Series[len(cores.Series)-1]; !lr.Reference || lr.Points[0].Y < 14.88 || lr.Points[0].Y > 14.89 {
		t.Errorf("cores chart line rate %+v, want 14.88 Mpps", lr)
	}
}

// The search's charts: NDR and PDR points of the sizes that have one,
// the line rate with a link speed, and their files.
func TestNDRPlotFiles(t *testing.T) {
	r := &search.NDRReport{PDRLossPct: 0.5, LinkSpeedGbps: 10, Sizes: []search.NDRSize{
		{FrameSize: 64, SearchResult: search.SearchResult{NDR: search.SearchFound{Mpps: 0.5, Gbps: 0.256}, PDR: &search.SearchFound{Mpps: 0.52, Gbps: 0.266}}},
		{FrameSize: 512, Error: "failed"},
		{FrameSize: 1518, SearchResult: search.SearchResult{NDR: search.SearchFound{Mpps: 0.4, Gbps: 4.86}, PDR: &search.SearchFound{}}},
	}}
	charts := NDRCharts(r)
	if len(charts) != 2 || len(charts[0].Chart.Series) != 3 || len(charts[0].Chart.Series[0].Points) != 2 || len(charts[0].Chart.Series[1].Points) != 1 || !charts[0].Chart.Series[2].Reference {
		t.Fatalf("charts %+v", charts)
	}
	prefix := filepath.Join(t.TempDir(), "ndr")
	files, err := NDR(r, prefix)
	if err != nil || len(files) != 4 {
		t.Fatalf("files %q, %v", files, err)
	}
	for _, f := range files {
		checkImage(t, f)
	}
	r.LinkSpeedGbps = 0
	if s := NDRCharts(r)[1].Chart.Series; len(s) != 2 {
		t.Errorf("without a link speed: %d series, want no line rate", len(s))
	}
}

// A two-host sweep draws what the far side carried next to this host's
// numbers, per series; the time-sliced markers only once.
func TestSweepChartsFarSide(t *testing.T) {
	sw := testSweep(0)
	sw.Peer, sw.FarRole = "far:7400", bench.RoleFwd
	for i := range sw.Cells {
		sw.Cells[i].FarMpps, sw.Cells[i].FarGbps = sw.Cells[i].Mpps*0.9, sw.Cells[i].Gbps*0.9
	}
	charts := SweepCharts(sw)
	var names []string
	for _, s := range charts[0].Chart.Series {
		names = append(names, s.Name)
		if strings.HasPrefix(s.Name, "far forwarder sent") && (len(s.Points) == 0 || s.Points[0].Y != sw.Cells[0].FarMpps && s.Points[0].Y != sw.Cells[1].FarMpps) {
			t.Errorf("far series %q: %+v", s.Name, s.Points)
		}
	}
	want := "1 core(s)|2 core(s)|time-sliced (forced, not the path's rate)|far forwarder sent, 1 core(s)|far forwarder sent, 2 core(s)"
	if got := strings.Join(names, "|"); got != want {
		t.Errorf("mpps series %q, want %q", got, want)
	}
	if n := len(charts[1].Chart.Series); n != 5 {
		t.Errorf("gbps chart: %d series, want 5", n)
	}
	// a far io forwarder measured no bytes: no far Gbps series; this
	// host's Gbps of a cell an io forwarder carried is left out too
	for i := range sw.Cells {
		sw.Cells[i].FarGbpsNotMeasured = true
	}
	sw.Cells[0].GbpsNotMeasured = true
	charts = SweepCharts(sw)
	var gbpsPoints int
	for _, s := range charts[1].Chart.Series {
		if strings.HasPrefix(s.Name, "far") {
			t.Errorf("gbps chart has far series %q though the far side measured no bytes", s.Name)
		}
		gbpsPoints += len(s.Points)
	}
	var mppsPoints int
	for _, s := range charts[0].Chart.Series {
		if !strings.HasPrefix(s.Name, "far") {
			mppsPoints += len(s.Points)
		}
	}
	if gbpsPoints != mppsPoints-1 {
		t.Errorf("gbps chart: %d points, want %d (every measured cell's but cell 1's)", gbpsPoints, mppsPoints-1)
	}
	sw.Role, sw.Axes.Cores = bench.RoleGen, []int{1}
	if s := SweepCharts(sw)[0].Chart.Series; s[len(s)-1].Name != "far host received" {
		t.Errorf("gen: last series %q, want the far host's", s[len(s)-1].Name)
	}
}
