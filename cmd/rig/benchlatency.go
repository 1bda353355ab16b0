package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"rig/bench"
	"rig/bench/child"
	"rig/bench/report"
)

// checkLatencyPlot: --latency-plot names an .svg or .png, on a role that
// measures latency (loop, rx).
func checkLatencyPlot(role bench.Role, path string) error {
	if path == "" {
		return nil
	}
	if role != bench.RoleLoop && role != bench.RoleRx {
		return fmt.Errorf("bench %s: --latency-plot: %s measures no latency (loop and rx do)", role, role)
	}
	_, err := report.LatencyPlotFormat(path)
	return err
}

// atLatencyLoad runs --latency-load's capacity probe (this rig, re-executed:
// one EAL per process) and says what it found.
func atLatencyLoad(cmd *cobra.Command, a *app, cfg bench.Config) (bench.Config, error) {
	if cfg.LatencyLoad == "" {
		return cfg, nil
	}
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	fmt.Fprintf(a.errOut, "latency load %s: measuring the path's capacity first (a run without a rate limit)\n", cfg.LatencyLoad)
	out, err := bench.AtLatencyLoad(cmd.Context(), child.Child{Exe: exe}, cfg)
	if err != nil {
		return cfg, err
	}
	fmt.Fprintf(a.errOut, "latency load %s: capacity %.3f Mpps, latency run at --rate %s\n", cfg.LatencyLoad, out.CapacityMpps, out.Rate)
	return out, nil
}

// writeLatencyPlot writes --latency-plot from the run's latency.
func writeLatencyPlot(path string, res *bench.Result) error {
	if path == "" {
		return nil
	}
	format, err := report.LatencyPlotFormat(path)
	if err != nil {
		return withCode(exitUsage, err)
	}
	if res.Latency == nil {
		return errors.New("--latency-plot: no latency was measured (no frame carrying rig's stamp was received after the warm-up)")
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--latency-plot: %w", err)
	}
	if err := report.WriteLatencyPlot(f, res.Latency, format); err != nil {
		f.Close()
		return fmt.Errorf("--latency-plot %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("--latency-plot: %w", err)
	}
	return nil
}
