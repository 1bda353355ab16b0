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

// ndrFlags are rig bench ndr's flags.
type ndrFlags struct {
	spec search.NDRSpec
	eal  string
	plot string
	peer peerFlags // --peer: the DUT is the far host's forwarder
}

func newBenchNDRCmd(a *app) *cobra.Command {
	d := bench.DefaultConfig(bench.RoleLoop)
	f := &ndrFlags{}
	c := &cobra.Command{
		Use:   "ndr",
		Short: "RFC 2544 throughput: the highest offered rate with no loss (NDR) and with loss within a tolerance (PDR), per frame size",
		Long: `rig bench ndr searches, per frame size (--size, a list), the highest rate the generator
can offer through the path with no frame lost (NDR), and the highest with at most
--pdr-loss-pct lost (PDR): a binary search between a rate that passed and one that
failed, down to --resolution, then a confirmation trial at each rate found (a
confirmation that fails sends the search on below it). Before bisecting, a failed
trial's forwarding rate (what it received per second) is tried once just below, and
once one resolution above the highest rate that passed when the forwarding rate is
that close: a path with a hard limit (a policer, a saturated core) resolves in about
5 trials instead of log2(range/resolution). Each trial is a loop run in its
own child process for --trial-duration: frames go out of port 0 at the offered rate
(the generator's rate limiter), through the device under test, into port 1; the loss
is what was sent and did not arrive.

The upper bound is --search-max, else the generator's own maximum, measured by an
unlimited trial first (at most the line rate when the link speed is known). A trial
whose generator fell more than 1 % short of the offered rate (preempted on a shared
host, or at its limit) is repeated once; short again, it fails as not offered, and the
answer says the generator was the limit.

Trials are --trial-gap apart (RFC 2544 lets the DUT settle between trials). --loss-retries
N tries a trial that lost frames again (the last try counts): for hosts whose CPUs stall.
--plot PREFIX writes the NDR and PDR charts (PREFIX-mpps, -gbps, .svg and .png); without
it no file is written.

The known answer: a forwarder capped at a known rate, e.g.
  rig bench fwd --vdev net_vhost0,iface=/tmp/a.sock --vdev net_vhost1,iface=/tmp/b.sock --max-rate 20kpps
  rig bench ndr --vdev net_virtio_user0,path=/tmp/a.sock,queue_size=4096 \
    --vdev net_virtio_user1,path=/tmp/b.sock,queue_size=4096 --search-max 40kpps --resolution 100pps

Two hosts (RFC 2544's tester here, the DUT on another host): with --peer HOST:PORT
each trial starts a forwarder on the far host's rig bench serve (its ports --peer-vdev or
--peer-port; --peer-max-rate caps it, as fwd --max-rate); the frames go out of port 0
here, through the far forwarder, back into port 1 here. The loss is what was sent and
did not come back; each trial's far counters (received, forwarded, policed) say where.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBenchNDR(cmd, a, f) },
	}
	fl := c.Flags()
	cf := &f.spec.Base
	addFixedRunFlags(fl, cf, &f.eal)
	fl.IntSliceVar(&f.spec.Sizes, "size", []int{d.FrameSize}, "frame sizes in bytes, FCS included (64..9000), searched in turn")
	fl.IntVar(&cf.Cores, "cores", d.Cores, "worker lcores of each trial")
	fl.StringVar(&cf.Lcores, "lcores", "", "EAL -l core list of each trial (default 0-<cores>; lcore 0 runs Go)")
	fl.IntVar(&cf.RxQ, "rxq", d.RxQ, "rx queues per port")
	fl.IntVar(&cf.TxQ, "txq", d.TxQ, "tx queues per port")
	fl.IntVar(&cf.RxD, "rxd", d.RxD, "rx descriptors per queue")
	fl.IntVar(&cf.TxD, "txd", d.TxD, "tx descriptors per queue")
	fl.IntVar(&cf.Burst, "burst", d.Burst, "burst size")
	fl.DurationVar(&f.spec.TrialDuration, "trial-duration", 10*time.Second, "run time of each trial (RFC 2544 asks 60s)")
	fl.DurationVar(&f.spec.TrialGap, "trial-gap", search.DefaultTrialGap, "pause between trials: the DUT settles (RFC 2544 section 23)")
	fl.StringVar(&f.spec.Resolution, "resolution", "0.5%", "stop when the bracket is this narrow: % of the line rate (of the upper bound when the link speed is unknown), or a frame rate (10kpps)")
	fl.IntVar(&f.spec.MaxTrials, "max-trials", 20, "trials per frame size at most, confirmations included")
	fl.Float64Var(&f.spec.PDRLossPct, "pdr-loss-pct", 0.5, "PDR's loss tolerance in % of the frames sent; 0: NDR only")
	fl.IntVar(&f.spec.LossRetries, "loss-retries", 0, "try a trial that lost frames again, up to this many times, the last try counting (0: RFC 2544's one trial per rate; for hosts whose CPUs stall now and then)")
	fl.StringVar(&f.spec.SearchMax, "search-max", "", "upper bound of the search: 1Mpps, 10Gbps (L1) or 100% of line (default: the generator's maximum, at most the line rate)")
	f.peer.addFlags(fl, bench.RoleLoop)
	fl.StringVar(&f.plot, "plot", "", "write charts to `PREFIX`-mpps and -gbps .svg and .png (e.g. --plot /tmp/rig-ndr); default none: no file is written unless asked")
	return c
}

func runBenchNDR(cmd *cobra.Command, a *app, f *ndrFlags) error {
	spec := f.spec
	spec.Base.Role = bench.RoleLoop
	spec.Base = fixedRunConfig(spec.Base, f.eal)
	spec.Peer = f.peer.addr
	if err := spec.Validate(); err != nil {
		return withCode(exitUsage, err)
	}
	if err := f.peer.checkUnused(cmd.Flags()); err != nil {
		return err
	}
	run, err := f.peer.runner(childRunner(), spec.Base)
	if err != nil {
		return err
	}
	rep := search.RunNDR(cmd.Context(), spec, run, a.errOut)
	if f.plot != "" {
		files, err := plot.NDR(rep, f.plot)
		rep.Plots = files
		if err != nil {
			return err
		}
	}
	if a.json() {
		if err := a.emitJSON(rep); err != nil {
			return err
		}
	} else {
		rep.PrintTable(a.out)
		fmt.Fprint(a.out, plotsLine(rep.Plots))
	}
	return ndrExit(cmd, rep)
}

// ndrExit: interrupted 130, a search stopped by a failed run 1, by an
// invalid trial 5.
func ndrExit(cmd *cobra.Command, rep *search.NDRReport) error {
	if cmd.Context().Err() != nil {
		return withCode(exitInterrupted, errors.New("bench ndr: interrupted"))
	}
	for _, s := range rep.Sizes {
		if s.Error != "" {
			return withCode(exitFailure, fmt.Errorf("bench ndr: the %d B search stopped: %s", s.FrameSize, s.Error))
		}
	}
	for _, s := range rep.Sizes {
		if len(s.Invalid) > 0 {
			return withCode(exitInvalid, fmt.Errorf("bench ndr: the %d B search stopped on an invalid measurement", s.FrameSize))
		}
	}
	return nil
}
