package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"rig/bench"
	"rig/bench/child"
	"rig/bench/dataplane"
	"rig/bench/report"
)

// benchFlags are the flags every dataplane engine shares.
type benchFlags struct {
	cfg            bench.Config
	minMpps        float64
	minLineRatePct float64
	maxLoss        int64
	eal            string
	profile        string   // --profile: a named mlx5 profile (bench.Profiles)
	portNetdevs    []string // --port-netdev: ports named by their netdev
	dryRun         bool
	peer           peerFlags // gen, loop: --peer and the far side's ports and settings
	latencyPlot    string
}

func newBenchCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Embedded DPDK dataplane: generator, receiver, forwarder, loop check, line-rate table",
		Long: `rig bench runs DPDK in-process (no testpmd/pktgen build): the hot loops run in C on
EAL worker lcores. Ports are DPDK devices: --vdev net_ring0,... / net_memif / net_af_packet /
net_tap / net_null, or a PCI address with --port. Live per-second rates go to stderr; the
summary (or -o json) to stdout. SIGINT/SIGTERM stop cleanly.`,
	}
	cmd.AddCommand(
		newBenchEngineCmd(a, bench.RoleGen, "gen", "Generate IPv4/UDP frames (txonly) on one port"),
		newBenchEngineCmd(a, bench.RoleRx, "rx", "Receive (rxonly): rates, sequence loss/reorder, latency"),
		newBenchEngineCmd(a, bench.RoleFwd, "fwd", "Forward between ports (io, mac, macswap): the DUT role"),
		newBenchEngineCmd(a, bench.RoleLoop, "loop", "Generate on port 0 and receive on port 1 in one process (default: a connected net_memif server/client pair)"),
		newBenchLineRateCmd(a),
		newBenchProfilesCmd(a),
		newBenchServeCmd(a),
		newBenchSweepCmd(a),
		newBenchNDRCmd(a),
		newBenchRunJSONCmd(a),
	)
	return cmd
}

func newBenchEngineCmd(a *app, role bench.Role, use, short string) *cobra.Command {
	d := bench.DefaultConfig(role) // the flags' defaults
	f := &benchFlags{cfg: bench.Config{Role: role}}
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return runBench(cmd, a, f) },
	}
	fl := c.Flags()
	cf := &f.cfg
	fl.StringArrayVar(&cf.VDevs, "vdev", nil, "EAL virtual device (repeatable), e.g. net_memif0,role=server,socket=/run/m.sock")
	fl.StringArrayVar(&cf.Ports, "port", nil, "device name or PCI address to use (repeatable; default: the --vdev names)")
	fl.StringArrayVar(&f.portNetdevs, "port-netdev", nil, "port named by its netdev (repeatable, after --port/--vdev ports), e.g. p0 or pf0hpf: its mlx5 devargs from sysfs (in a virtual lab net_af_packet on it); the report names its role")
	fl.StringVar(&f.profile, "profile", "", "named mlx5 profile: devargs on PCI ports plus queue, descriptor, burst and cache settings; explicit flags win (rig bench profiles lists them)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "resolve ports and profile, validate, print what would run (ports, devargs, EAL arguments); start nothing")
	fl.StringVar(&f.eal, "eal", "", "extra EAL arguments, space separated (no shell)")
	fl.IntVar(&cf.Cores, "cores", d.Cores, "worker lcores")
	fl.StringVar(&cf.Lcores, "lcores", "", "EAL -l core list (default 0-<cores>; lcore 0 runs Go)")
	fl.IntVar(&cf.RxQ, "rxq", d.RxQ, "rx queues per port (RSS when > 1)")
	fl.IntVar(&cf.TxQ, "txq", d.TxQ, "tx queues per port")
	fl.IntVar(&cf.RxD, "rxd", d.RxD, "rx descriptors per queue")
	fl.IntVar(&cf.TxD, "txd", d.TxD, "tx descriptors per queue")
	fl.IntVar(&cf.Burst, "burst", d.Burst, "burst size")
	fl.IntVar(&cf.MbufCache, "mbuf-cache", d.MbufCache, "mempool per-lcore cache")
	fl.IntVar(&cf.Mbufs, "mbufs", 0, "mbufs in the pool (default: sized from queues)")
	fl.BoolVar(&cf.NoHuge, "no-huge", false, "run without hugepages (slower)")
	fl.StringVar(&cf.HugeDir, "huge-dir", "", "hugetlbfs mount to use")
	fl.IntVar(&cf.FrameSize, "size", d.FrameSize, "frame size in bytes, FCS included (64..9000)")
	fl.Uint64Var(&cf.Count, "count", 0, "frames to send (gen/loop) or receive (rx/fwd); 0: until --duration or SIGINT")
	fl.DurationVar(&cf.Duration, "duration", 0, "run time (e.g. 5s); 0: until --count or SIGINT")
	fl.StringVar(&cf.Rate, "rate", "", "rate limit: 100kpps, 1.5Mpps, 10Gbps (L1) or 50% of line rate")
	fl.StringVar(&cf.SrcIP, "src-ip", d.SrcIP, "source IPv4 or range a-b (flows for RSS)")
	fl.StringVar(&cf.DstIP, "dst-ip", d.DstIP, "destination IPv4 or range a-b")
	fl.StringVar(&cf.SPort, "sport", d.SPort, "UDP source port or range a-b")
	fl.StringVar(&cf.DPort, "dport", d.DPort, "UDP destination port or range a-b")
	fl.StringVar(&cf.DstMAC, "dst-mac", d.DstMAC, "destination MAC of generated frames")
	fl.StringVar(&cf.Pcap, "pcap", "", "replay the frames of this pcap file instead of generated ones")
	fl.StringVar(&cf.FwdMode, "fwd-mode", d.FwdMode, "forwarding: io (reads no frame: packets only, no bytes or Gbps), mac (rewrite dst/src MAC), macswap")
	fl.StringVar(&cf.FwdDstMAC, "fwd-dst-mac", "", "mac mode: destination MAC to write (default 00:00:00:00:00:00)")
	fl.StringVar(&cf.FwdSrcMAC, "fwd-src-mac", "", "mac mode: source MAC to write (default: the tx port's)")
	fl.IntVar(&cf.TxRetry, "tx-retry", 0, "fwd: retry a partial tx burst this many times, 1 us apart, before dropping")
	fl.IntVar(&cf.TxFirst, "tx-first", 0, "fwd: send this many frames on each port first (testpmd --tx-first)")
	if role == bench.RoleFwd {
		fl.StringVar(&cf.MaxRate, "max-rate", "", "forward at most this many frames per second from each port (e.g. 500kpps), dropping the rest on arrival: a DUT of known capacity")
	}
	fl.StringVar(&cf.LinkSpeed, "link-speed", "", "link speed for % of line rate (e.g. 25G, 100G; default: the port's)")
	fl.BoolVar(&cf.NoPinGo, "no-pin-go", false, "leave Go threads unpinned (default: pinned to the main lcore's CPU)")
	fl.DurationVar(&cf.Interval, "interval", d.Interval, "live rate interval")
	fl.DurationVar(&cf.Hold, "hold", 0, "keep the ports open this long after the run (a peer's counters stay readable)")
	fl.DurationVar(&cf.Settle, "settle", 0, "wait this long after the links are up before the first frame (a vhost-user peer starts)")
	fl.Float64Var(&f.minMpps, "min-mpps", 0, "exit 4 when the measured rate (rx, or tx for gen) is below this")
	fl.Float64Var(&f.minLineRatePct, "min-linerate-pct", 0, "exit 4 when below this % of line rate")
	fl.Int64Var(&f.maxLoss, "max-loss", -1, "loop, rx, gen --peer: exit 4 when more frames than this were lost (sent - received, or sequence gaps); -1 = not checked")
	fl.DurationVar(&cf.LatWarmup, "latency-warmup", 0, "loop/rx: latency samples count from this long after the first received frame (default 0.5s, or a quarter of a shorter --duration)")
	fl.StringVar(&cf.LatencyLoad, "latency-load", "", "loop: measure latency at this % of the path's capacity (e.g. 50%): a 2 s run without a rate limit measures the capacity first")
	fl.StringVar(&f.latencyPlot, "latency-plot", "", "loop/rx: write the latency distribution (latency by percentile) to this .svg or .png file")
	if role == bench.RoleGen || role == bench.RoleLoop {
		f.peer.addFlags(fl, role)
	}
	return c
}

func runBench(cmd *cobra.Command, a *app, f *benchFlags) error {
	cfg, notes, err := a.benchConfig(cmd, f)
	if err != nil {
		return err
	}
	if err := f.peer.checkUnused(cmd.Flags()); err != nil {
		return err
	}
	var far bench.Config
	if f.peer.addr != "" {
		if far, err = f.peer.farConfig(cfg); err != nil {
			return err
		}
	}
	if f.dryRun {
		return a.printBenchPlan(cfg, notes, f.peer.addr, far)
	}
	if len(f.portNetdevs) > 0 && !a.host().IsRealRoot() {
		return withCode(exitUsage, fmt.Errorf("rig bench: --port-netdev under --root %s: the netdevs were resolved in a fixture, but the dataplane would run on this machine's devices; add --dry-run to see what would run there", a.root))
	}
	for _, n := range notes {
		fmt.Fprintf(a.errOut, "rig: %s\n", n)
	}
	if err := checkLatencyPlot(cfg.Role, f.latencyPlot); err != nil {
		return withCode(exitUsage, err)
	}
	if cfg.LatencyLoad != "" && f.peer.addr != "" {
		return withCode(exitUsage, fmt.Errorf("--latency-load with --peer: the capacity probe runs on this host only; give --rate instead"))
	}
	if cfg, err = atLatencyLoad(cmd, a, cfg); err != nil {
		return err
	}
	tty := false
	if fd, ok := a.errOut.(*os.File); ok {
		_, err := unix.IoctlGetTermios(int(fd.Fd()), unix.TCGETS)
		tty = err == nil
	}
	prog := bench.Progress{W: a.errOut, TTY: tty}
	trial := func(ctx context.Context, c bench.Config) (*bench.Result, error) { return dataplane.Run(ctx, c, prog) }
	if f.peer.addr != "" {
		if trial, err = f.peer.trial(trial); err != nil {
			return err
		}
	}
	res, err := trial(cmd.Context(), cfg)
	if tty {
		fmt.Fprintln(a.errOut)
	}
	if err != nil {
		return peerExit(err)
	}
	res.Warnings = append(res.Warnings, notes...)
	return a.reportBench(res, f)
}

// reportBench prints a run's result and maps it to rig's exit codes:
// 5 for an invalid measurement, 4 below a threshold.
func (a *app) reportBench(res *bench.Result, f *benchFlags) error {
	if a.json() {
		if err := a.emitJSON(res); err != nil {
			return err
		}
	} else {
		res.PrintSummary(a.out)
	}
	if err := writeLatencyPlot(f.latencyPlot, res); err != nil {
		return err
	}
	if len(res.Invalid) > 0 {
		// no threshold judges numbers that cannot be right
		return withCode(exitInvalid, fmt.Errorf("bench %s: invalid measurement: %s", res.Role, strings.Join(res.Invalid, "; ")))
	}
	if err := checkThresholds(res, f.minMpps, f.minLineRatePct); err != nil {
		return err
	}
	if f.maxLoss >= 0 {
		lost := res.Lost
		if g := int64(res.SeqGaps); g > lost {
			lost = g // rx alone knows only the gaps in the sequence
		}
		if lost > f.maxLoss {
			return withCode(exitBelowThreshold, fmt.Errorf("bench %s: %d frame(s) lost, more than --max-loss %d", res.Role, lost, f.maxLoss))
		}
	}
	return nil
}

// checkThresholds maps a below-threshold result to exit code 4.
func checkThresholds(res *bench.Result, minMpps, minPct float64) error {
	if minMpps <= 0 && minPct <= 0 {
		return nil
	}
	var mpps, pct float64
	for _, p := range res.Ports {
		if res.Role == bench.RoleGen {
			mpps += p.TxMpps
			pct = max(pct, p.TxLineRatePct)
		} else {
			mpps += p.RxMpps
			pct = max(pct, p.RxLineRatePct)
		}
	}
	if minMpps > 0 && mpps < minMpps {
		return withCode(exitBelowThreshold, fmt.Errorf("bench %s: %.3f Mpps is below --min-mpps %.3f", res.Role, mpps, minMpps))
	}
	if minPct > 0 {
		if res.LinkSpeedGbps == 0 {
			return withCode(exitUsage, fmt.Errorf("bench %s: --min-linerate-pct needs --link-speed (the port reports no speed)", res.Role))
		}
		if pct < minPct {
			return withCode(exitBelowThreshold, fmt.Errorf("bench %s: %.1f%% of %gG line rate is below --min-linerate-pct %.1f", res.Role, pct, res.LinkSpeedGbps, minPct))
		}
	}
	return nil
}

func newBenchLineRateCmd(a *app) *cobra.Command {
	var speed string
	c := &cobra.Command{
		Use:   "linerate",
		Short: "Print Ethernet line rate in Mpps for 10..400G at 64..1518 B frames",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			speeds := bench.LineRateSpeeds()
			if speed != "" {
				bps, err := bench.ParseLinkSpeed(speed)
				if err != nil {
					return withCode(exitUsage, err)
				}
				speeds = []float64{bps / 1e9}
			}
			if a.json() {
				out := lineRateReport{SchemaVersion: lineRateSchema}
				tab := bench.LineRateTable(bench.LineRateFrames(), speeds)
				for i, fr := range bench.LineRateFrames() {
					r := lineRateRow{Frame: fr, Mpps: map[string]float64{}}
					for j, s := range speeds {
						r.Mpps[fmt.Sprintf("%gG", s)] = tab[i][j]
					}
					out.Rows = append(out.Rows, r)
				}
				return a.emitJSON(out)
			}
			report.PrintLineRateTable(a.out, bench.LineRateFrames(), speeds)
			return nil
		},
	}
	c.Flags().StringVar(&speed, "link-speed", "", "only this speed (e.g. 25G)")
	return c
}

// newBenchRunJSONCmd is the child side of child.Child (child.RunJSON): one
// bench.Config as JSON on stdin, one JSON document on stdout (the Result,
// or {schemaVersion, error, cause, fix}), live lines and EAL's log on
// stderr. Exit codes as for the engines: 2 for a config that does not
// validate, 1 for a failed run, 5 for an invalid measurement.
func newBenchRunJSONCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:    "run-json",
		Short:  "Run one bench.Config read as JSON on stdin; write the result as JSON (for rig's own child processes)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := child.RunJSON(cmd.Context(), cmd.InOrStdin(), a.out, a.errOut, dataplane.RunValid)
			var ce *child.ConfigError
			switch {
			case errors.As(err, &ce):
				return withCode(exitUsage, err)
			case err != nil:
				return withCode(exitFailure, err)
			case len(res.Invalid) > 0:
				return withCode(exitInvalid, fmt.Errorf("bench %s: invalid measurement: %s", res.Role, strings.Join(res.Invalid, "; ")))
			}
			return nil
		},
	}
}
