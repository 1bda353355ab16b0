package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"rig/bench"
	"rig/internal/testutil"
)

// --latency-plot writes a PNG of the run's latency distribution, next to
// the JSON with the histogram it is drawn from.
func TestPrivilegedBenchLatencyPlotFile(t *testing.T) {
	if os.Getenv("RIG_CMD_BENCH_CHILD") != "" {
		t.Skip("child")
	}
	testutil.RequirePrivileged(t)
	plot := filepath.Join(t.TempDir(), "lat.png")
	cmd := exec.Command(os.Args[0], "-test.run=^TestBenchChild$")
	cmd.Env = append(os.Environ(), "RIG_CMD_BENCH_CHILD="+strings.Join([]string{"bench", "loop", "--vdev", "net_ring0", "--count", "100000",
		"--rate", "1Mpps", "--rxd", "512", "--txd", "512", "--no-huge", "--latency-plot", plot, "-o", "json"}, "\x1f"))
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		var xe *exec.ExitError
		if !errors.As(err, &xe) || xe.ExitCode() != exitInvalid { // a busy machine may miss the rate: the plot is still written
			t.Fatalf("loop with --latency-plot: %v\n%s%s", err, o.String(), e.String())
		}
	}
	var r bench.Result
	if err := json.Unmarshal([]byte(o.String()), &r); err != nil || r.Latency == nil || r.Latency.Histogram == nil || r.Latency.Histogram.Count != r.Latency.Samples {
		t.Fatalf("json: %v: latency %+v", err, r.Latency)
	}
	f, err := os.Open(plot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if img, err := png.Decode(f); err != nil || img.Bounds().Dx() < 300 {
		t.Fatalf("%s: %v", plot, err)
	}
}

// --latency-load 50%: a probe measures the path's capacity, the run
// offers half of it, and the latency says so (and is not saturated).
func TestPrivilegedBenchLatencyLoadHalfCapacity(t *testing.T) {
	testutil.RequirePrivileged(t)
	ch := childOfThisTest(t, "")
	ctx := context.Background()
	cfg, err := bench.AtLatencyLoad(ctx, ch, bench.Config{Role: bench.RoleLoop, VDevs: []string{"net_ring0"}, Duration: 2e9,
		RxD: 512, TxD: 512, NoHuge: true, LatencyLoad: "50%"})
	if err != nil || cfg.CapacityMpps <= 0 || cfg.Rate != fmt.Sprintf("%.0fpps", cfg.CapacityMpps*1e6/2) {
		t.Fatalf("probe: rate %q capacity %v, %v: want half the capacity", cfg.Rate, cfg.CapacityMpps, err)
	}
	r, err := ch.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	l := r.Latency
	if l == nil || l.CapacityMpps != cfg.CapacityMpps || l.LoadOfCapacity != "50%" || l.Histogram == nil || l.Histogram.Count != l.Samples {
		t.Fatalf("latency %+v: want the probe's capacity, 50%%, a histogram", l)
	}
	// what the generator offered: half the capacity, or up to 10 % less
	// (more, and the run is invalid: a busy machine cannot keep up)
	if half := cfg.CapacityMpps / 2; len(r.Invalid) == 0 && (l.OfferedMpps < 0.9*half || l.OfferedMpps > 1.02*half) {
		t.Errorf("offered %.3f Mpps, want half of %.3f (at most 10%% less)", l.OfferedMpps, cfg.CapacityMpps)
	}
	if l.Saturated != "" && !strings.Contains(l.Saturated, "lost") {
		t.Errorf("saturated at half the capacity: %s", l.Saturated)
	}
}
