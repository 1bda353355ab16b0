package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"rig/bench"
	"rig/bench/plot"
	"rig/bench/search"
)

// sweepFlags are rig bench sweep's flags.
type sweepFlags struct {
	base  bench.Config
	eal   string
	role  string
	axes  search.SweepAxes
	force bool
	plot  string
	peer  peerFlags // --peer: each cell's far side on another host
}

func newBenchSweepCmd(a *app) *cobra.Command {
	d := bench.DefaultConfig(bench.RoleLoop)
	f := &sweepFlags{}
	c := &cobra.Command{
		Use:   "sweep",
		Short: "One run per combination of frame sizes, cores, queues, burst, descriptors and rate: a table (like seed 002's), JSON, CSV and plots",
		Long: `rig bench sweep runs the dataplane once per cell of the cartesian product of its axes
(--size, --cores, --queues, --burst, --desc, --rate; lists, e.g. --size 64,512,1518), each
run in its own child process for --duration, and prints one row per cell. Cells whose
worker lcores would outnumber the CPUs this process may use (online and in its
affinity mask; lcore 0 runs Go) are not run: time-sliced, they measure the scheduler.
--force runs them anyway, marked. An invalid measurement stays invalid: no numbers
in the table or CSV, the reasons below it (exit 5). With --plot PREFIX, charts (SVG
and PNG, PREFIX-mpps, -gbps, -cores): Mpps and Gbps by frame size, with the line rate
when the link speed is known, and Mpps by worker cores when the sweep has several;
without it no file is written.

Two hosts: with --peer HOST:PORT each cell's far side runs on the far host's
rig bench serve (--role gen: its receiver; --role loop: its forwarder, which sends
the frames back), with the cell's queues, descriptors and burst; the table adds
what the far side carried (far Mpps, Gbps) and the loss across hosts, and each
cell's JSON result holds both hosts' ports.`,
		Args:        cobra.NoArgs,
		Annotations: map[string]string{outputCSV: "yes"},
		RunE:        func(cmd *cobra.Command, _ []string) error { return runBenchSweep(cmd, a, f) },
	}
	fl := c.Flags()
	addFixedRunFlags(fl, &f.base, &f.eal)
	fl.StringVar(&f.role, "role", string(bench.RoleLoop), "what each run does: loop (gen on port 0, rx on port 1), gen, rx or fwd")
	fl.IntSliceVar(&f.axes.Sizes, "size", []int{d.FrameSize}, "frame sizes in bytes, FCS included (64..9000)")
	fl.IntSliceVar(&f.axes.Cores, "cores", []int{d.Cores}, "worker lcores")
	fl.IntSliceVar(&f.axes.Queues, "queues", []int{d.RxQ}, "rx and tx queues per port")
	fl.IntSliceVar(&f.axes.Bursts, "burst", []int{d.Burst}, "burst sizes")
	fl.IntSliceVar(&f.axes.Descs, "desc", []int{d.RxD}, "rx and tx descriptors per queue")
	fl.StringSliceVar(&f.axes.Rates, "rate", []string{"max"}, "generator rates: max, 100kpps, 1.5Mpps, 10Gbps (L1) or 50% of line rate")
	fl.DurationVar(&f.base.Duration, "duration", 5*time.Second, "run time of each cell")
	fl.StringVar(&f.base.FwdMode, "fwd-mode", d.FwdMode, "fwd: io (packets only, no Gbps), mac or macswap")
	fl.IntVar(&f.base.TxRetry, "tx-retry", 0, "fwd: retry a partial tx burst this many times, 1 us apart")
	fl.BoolVar(&f.force, "force", false, "run cells with more worker lcores than CPUs too (time-sliced, marked)")
	f.peer.addFlags(fl, "")
	fl.StringVar(&f.plot, "plot", "", "write charts to `PREFIX`-mpps, -gbps, -cores .svg and .png (e.g. --plot /tmp/rig-sweep); default none: no file is written unless asked")
	return c
}

func runBenchSweep(cmd *cobra.Command, a *app, f *sweepFlags) error {
	base := f.base
	base.Role = bench.Role(f.role)
	base = fixedRunConfig(base, f.eal)
	if base.Duration <= 0 {
		return withCode(exitUsage, fmt.Errorf("bench sweep: --duration %v: want more than 0 (each cell runs this long)", base.Duration))
	}
	if err := f.peer.checkUnused(cmd.Flags()); err != nil {
		return err
	}
	sw, err := search.PlanSweep(search.SweepSpec{Base: base, Axes: f.axes, CPUs: search.UsableCPUs(), Force: f.force, Peer: f.peer.addr})
	if err != nil {
		return withCode(exitUsage, err)
	}
	run, err := f.peer.runner(childRunner(), base)
	if err != nil {
		return err
	}
	search.RunSweep(cmd.Context(), sw, run, a.errOut)
	if f.plot != "" {
		files, err := plot.Sweep(sw, f.plot)
		sw.Plots = files
		if err != nil {
			return err
		}
	}
	if err := a.emitSweep(sw); err != nil {
		return err
	}
	return sweepExit(cmd, sw)
}

// emitSweep writes the sweep as text, JSON or CSV (the plots' names on
// stderr then, CSV being data only).
func (a *app) emitSweep(sw *search.Sweep) error {
	switch {
	case a.json():
		return a.emitJSON(sw)
	case a.csv():
		fmt.Fprint(a.errOut, plotsLine(sw.Plots))
		return sw.WriteCSV(a.out)
	}
	sw.PrintTable(a.out)
	fmt.Fprint(a.out, plotsLine(sw.Plots))
	return nil
}

// sweepExit: interrupted 130, a failed cell 1, an invalid one 5.
func sweepExit(cmd *cobra.Command, sw *search.Sweep) error {
	if cmd.Context().Err() != nil {
		return withCode(exitInterrupted, errors.New("bench sweep: interrupted; the cells left were not run"))
	}
	var failed, invalid int
	for _, c := range sw.Cells {
		failed += btoi(c.Status == search.CellFailed)
		invalid += btoi(c.Status == search.CellInvalid)
	}
	switch {
	case failed > 0:
		return withCode(exitFailure, fmt.Errorf("bench sweep: %d of %d cell(s) failed to run (see the table)", failed, len(sw.Cells)))
	case invalid > 0:
		return withCode(exitInvalid, fmt.Errorf("bench sweep: %d of %d cell(s) are invalid measurements (see the table)", invalid, len(sw.Cells)))
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
