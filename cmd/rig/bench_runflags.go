package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"rig/bench"
	"rig/bench/child"
)

// The flags a sweep or a zero-loss search keeps the same in every run it
// makes: ports, EAL, memory and the generated traffic.

// addFixedRunFlags registers them on cf (eal: --eal's text).
func addFixedRunFlags(fl *pflag.FlagSet, cf *bench.Config, eal *string) {
	d := bench.DefaultConfig(bench.RoleLoop)
	fl.StringArrayVar(&cf.VDevs, "vdev", nil, "EAL virtual device (repeatable), e.g. net_memif0,role=client,socket=/run/m.sock (default: a memif server/client pair in one process)")
	fl.StringArrayVar(&cf.Ports, "port", nil, "device name or PCI address to use (repeatable; default: the --vdev names)")
	fl.StringVar(eal, "eal", "", "extra EAL arguments, space separated (no shell)")
	fl.IntVar(&cf.MbufCache, "mbuf-cache", d.MbufCache, "mempool per-lcore cache")
	fl.IntVar(&cf.Mbufs, "mbufs", 0, "mbufs in the pool (default: sized from queues)")
	fl.BoolVar(&cf.NoHuge, "no-huge", false, "run without hugepages (slower)")
	fl.StringVar(&cf.HugeDir, "huge-dir", "", "hugetlbfs mount to use")
	fl.StringVar(&cf.SrcIP, "src-ip", d.SrcIP, "source IPv4 or range a-b (flows for RSS)")
	fl.StringVar(&cf.DstIP, "dst-ip", d.DstIP, "destination IPv4 or range a-b")
	fl.StringVar(&cf.SPort, "sport", d.SPort, "UDP source port or range a-b")
	fl.StringVar(&cf.DPort, "dport", d.DPort, "UDP destination port or range a-b")
	fl.StringVar(&cf.DstMAC, "dst-mac", d.DstMAC, "destination MAC of generated frames")
	fl.StringVar(&cf.LinkSpeed, "link-speed", "", "link speed for % of line and the line-rate curve (e.g. 25G; default: the port's, when real)")
	fl.BoolVar(&cf.NoPinGo, "no-pin-go", false, "leave Go threads unpinned (default: pinned to the main lcore's CPU)")
	fl.DurationVar(&cf.Settle, "settle", 0, "wait this long after the links are up before the first frame (a vhost-user peer starts)")
}

// fixedRunConfig finishes the fixed part: --eal split into argv.
func fixedRunConfig(cf bench.Config, eal string) bench.Config {
	if eal != "" {
		cf.EAL = strings.Fields(eal)
	}
	cf.Interval = bench.DefaultConfig(cf.Role).Interval
	return cf
}

// childRunner runs each configuration as this rig binary's `bench
// run-json` child (one EAL per process); the children's own live lines
// are not shown (the sweep and the search print one line per run).
func childRunner() bench.RunFunc {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	ch := child.Child{Exe: exe}
	return func(ctx context.Context, c bench.Config) (*bench.Result, error) { return ch.Run(ctx, c) }
}

// plotsLine says where the charts went.
func plotsLine(files []string) string {
	if len(files) == 0 {
		return ""
	}
	return fmt.Sprintf("plots: %s\n", strings.Join(files, " "))
}
