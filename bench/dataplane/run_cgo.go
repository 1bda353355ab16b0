//go:build cgo

package dataplane

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"rig/bench"
	"rig/bench/internal/dpdk"
)

// Run executes one benchmark in this process. EAL is initialised here, so
// Run can be called once per process. ctx cancellation (SIGINT/SIGTERM)
// stops the run cleanly: generators halt, lcores are joined, ports stopped
// and closed, rte_eal_cleanup runs; the partial result is returned.
func Run(ctx context.Context, c bench.Config, prog bench.Progress) (*bench.Result, error) {
	c.Defaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return RunValid(ctx, c, prog)
}

// RunValid is Run for a config Defaults filled and Validate passed (the
// child side, child.RunJSON, checks its config itself, once).
func RunValid(ctx context.Context, c bench.Config, prog bench.Progress) (*bench.Result, error) {
	if c.LatencyLoad != "" && c.CapacityMpps == 0 {
		return nil, fmt.Errorf("bench: --latency-load %s: the path's capacity was not measured (AtLatencyLoad probes it first)", c.LatencyLoad)
	}
	res := &bench.Result{SchemaVersion: bench.SchemaVersion, Role: c.Role, FrameSize: c.FrameSize, FrameSizeSource: "flag", Cores: c.Cores, Profile: c.Profile}
	if c.Role == bench.RoleFwd {
		res.FwdMode, res.MaxRate = c.FwdMode, c.MaxRate
	}
	var frames [][]byte
	if c.Pcap != "" {
		var err error
		if frames, err = ReadPcap(c.Pcap, 9000); err != nil {
			return nil, err
		}
	}
	plan := bench.PlanLayout(&c, frames)
	huge := hostHugepages()
	mounts := hugetlbfsMounts(huge)
	mem, err := bench.ChooseMemoryFor(&c, freeHugeMB(huge), len(mounts) > 0, plan.MemoryMB(c.Capture, dpdk.UnitBytes()))
	if err != nil {
		return nil, err
	}
	if mem.Warning != "" {
		res.Warnings = append(res.Warnings, mem.Warning)
		if prog.W != nil {
			fmt.Fprintf(prog.W, "warning: %s\n", mem.Warning)
		}
	}
	res.Memory = strings.Join(mem.Args, " ")
	if err := clearStaleServerSockets(c.VDevs); err != nil {
		return nil, err
	}
	if err := waitMemifServers(ctx, c.VDevs, 10*time.Second); err != nil {
		return nil, err
	}
	if !c.NoPinGo {
		if err := pinGo(&c); err != nil {
			return nil, err
		}
		res.PinnedGo = true
	}
	d, err := openDataplane(ctx, &c, mem, plan, mounts)
	if err != nil {
		return nil, err
	}
	defer d.close()
	return measure(ctx, d, plan, frames, res, prog)
}

// MemoryMB is the hugepage memory, in MiB, a run of c takes: what Run
// checks against the free 2 MiB pages (and passes to EAL as -m when a port
// shares its memory). For tests and tools that reserve pages before runs.
func MemoryMB(c bench.Config) (int, error) {
	c.Defaults()
	if err := c.Validate(); err != nil {
		return 0, err
	}
	var frames [][]byte
	if c.Pcap != "" {
		var err error
		if frames, err = ReadPcap(c.Pcap, 9000); err != nil {
			return 0, err
		}
	}
	return bench.PlanLayout(&c, frames).MemoryMB(c.Capture, dpdk.UnitBytes()), nil
}

// pinGo pins the process before EAL starts its threads: everything but the
// worker lcores (which EAL moves to their own CPUs) stays on the main
// lcore's CPUs.
func pinGo(c *bench.Config) error {
	m, err := c.LcoreMap()
	if err != nil {
		return err
	}
	if _, err := pinProcess(m.CPUs[m.Main]); err != nil {
		return bench.NewError("Go threads", err, "", "run with --no-pin-go")
	}
	return nil
}

// measure creates the units on the open dataplane, runs them under the
// monitor and collects the result.
func measure(ctx context.Context, d *dataplane, plan bench.Layout, frames [][]byte, res *bench.Result, prog bench.Progress) (*bench.Result, error) {
	c := d.cfg
	var linkBps float64
	if c.LinkSpeed != "" {
		linkBps, _ = bench.ParseLinkSpeed(c.LinkSpeed) // validated
		res.LinkSpeedSource = "flag"
	} else if linkBps = d.portLinkBps(); linkBps > 0 {
		res.LinkSpeedSource = "port"
	}
	res.LinkSpeedGbps = linkBps / 1e9
	if err := d.addUnits(plan, frames, linkBps); err != nil {
		return nil, err
	}
	if c.Settle > 0 {
		select {
		case <-time.After(c.Settle):
		case <-ctx.Done():
		}
	}
	start := time.Now()
	if err := d.start(); err != nil {
		return nil, err
	}
	if prog.Ready != nil {
		prog.Ready() // the lcores poll: a peer may send now
	}
	elapsed := newMonitor(c, d.units, d.ports, res, prog, start).run(ctx)
	d.stop()
	if c.Role == bench.RoleFwd {
		// a forwarder counts until its lcores stop: its rates are over
		// exactly that span
		elapsed = time.Since(start)
	}
	collect(c, d.units, d.ports, res, elapsed)
	bench.LabelPorts(c, res)
	asked, _ := bench.ParseRate(c.Rate, c.FrameSize, linkBps) // validated
	res.Invalid = bench.Judge(c, res, asked, 2*pollInterval(c))
	bench.LatencyLoad(c, res)
	if c.Role == bench.RoleLoop && res.Sent > 0 && res.Received == 0 && len(bench.MemifServers(c.VDevs)) > 0 {
		res.Warnings = append(res.Warnings, "nothing came back through the memif server: "+memifQueueHint+fmt.Sprintf(" (this run: --rxq %d --txq %d)", c.RxQ, c.TxQ))
	}
	var release <-chan struct{}
	if c.Release != nil {
		c.Release.SetMeasured()
		release = c.Release.Release
	}
	if c.Hold > 0 && ctx.Err() == nil {
		select { // the links stay up until the ports close (d.close)
		case <-time.After(c.Hold):
		case <-ctx.Done():
		case <-release:
		}
	}
	return res, nil
}

func euid() int { return os.Geteuid() }
