package check

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"time"

	"rig/bench"
	"rig/bench/dataplane"
	"rig/internal/cpuset"
	"rig/ovs"
	"rig/playbooks"
)

// runOne is one frame size: warm-up traffic (not counted), OvS counters
// and PMD stats zeroed, the measured run, counters again, and the figures.
func (s *checkStep) runOne(ctx context.Context, p *checkPath, size int, lcores string) (*CheckRun, error) {
	sp := s.spec
	pmd := 0
	if p.kind == pathMemif {
		pmd = s.pmdThreads(ctx)
	}
	cfg := checkConfig(sp, p.kind, p.vdevs, lcores, pmd)
	cfg.FrameSize, cfg.Rate = size, sp.DataplaneRate()
	dp := s.traffic(p)
	run := &CheckRun{FrameSize: size, WarmupS: sp.WarmupOrDefault().Seconds()}
	if p.kind == pathMemif {
		run.Warnings = append(run.Warnings, memifServerNote)
	}
	var warm map[string]ovs.Counters
	if w := sp.WarmupOrDefault(); w > 0 {
		wc := cfg
		wc.Duration = w
		var err error
		if _, warm, err = s.runPolling(ctx, dp, wc, p); err != nil {
			return nil, fmt.Errorf("check: warm-up run (%d B): %w", size, err)
		}
	}
	if err := s.reattach(ctx, p); err != nil {
		return nil, err
	}
	before, err := s.baseline(ctx, p, warm)
	if err != nil {
		return nil, err
	}
	if err := s.o.ClearPMDStats(ctx); err != nil {
		run.Warnings = append(run.Warnings, "PMD stats not cleared: "+err.Error())
	}
	cfg.Duration = sp.DurationOrDefault()
	r, last, err := s.runPolling(ctx, dp, cfg, p)
	if err != nil {
		return nil, fmt.Errorf("check: run (%d B): %w", size, err)
	}
	after, err := s.o.PortCounters(ctx, s.bridge)
	if err != nil && !p.closed {
		return nil, fmt.Errorf("check: OvS counters after the run: %w", err)
	}
	if after == nil {
		after = map[string]ovs.Counters{}
	}
	for _, port := range []string{p.in, p.out} {
		// the last reading while rig's side was still connected (traffic
		// over, ports held open): a vhost-user port has no counters once
		// its peer is gone, a memif server's read 0 until it reconnects
		if c, ok := last[port]; ok && p.kind != pathPorts {
			after[port] = c
		}
	}
	in, inNote := portDelta(p.kind, p.in, after[p.in], before[p.in])
	out, outNote := portDelta(p.kind, p.out, after[p.out], before[p.out])
	for _, n := range []string{inNote, outNote} {
		if n != "" {
			run.Warnings = append(run.Warnings, n)
		}
	}
	run.OVS = []PortDelta{{Port: p.in, Role: "ingress", Counters: in}, {Port: p.out, Role: "egress", Counters: out}}
	if pmd, err := s.o.PMDStats(ctx); err == nil {
		run.PMD = summarizePMD(pmd)
	}
	fillRun(run, r, PathCounts{Sent: r.Sent, Received: r.Received, Ingress: in, Egress: out})
	run.Thresholds = thresholds(sp.Thresholds, run)
	return run, nil
}

// baseline is each port's counters before the measured run, by what the
// ports are: the memif server ports are added afresh for each run (none); a vhost-user port's drop
// counters likewise (its packet counters restart at each connection, see
// portDelta); the bridge's own ports (through-ports) are OvS's and always
// readable (read now).
func (s *checkStep) baseline(ctx context.Context, p *checkPath, warm map[string]ovs.Counters) (map[string]ovs.Counters, error) {
	if p.kind == pathMemif {
		return map[string]ovs.Counters{}, nil // ports added afresh for the run (reattach)
	}
	if p.kind == pathVhost && warm != nil {
		return warm, nil
	}
	before, err := s.o.PortCounters(ctx, s.bridge)
	if err != nil {
		return nil, fmt.Errorf("check: OvS counters before the run: %w", err)
	}
	return before, nil
}

// memifServerNote: seen on this project's Debian 12 VM, OvS 3.1 with DPDK
// 22.11 (bench/ovs_test.go), about 1 run in 80.
const memifServerNote = "memif transport: DPDK 22.11's memif server in ovs-vswitchd can crash (SIGSEGV in librte_net_memif) when its client disconnects while a PMD thread polls the port; rig deletes its memif ports from OvS once a run's traffic is over, before its dataplane disconnects, and adds them again for the next run; if a run ends before that (no frame went through), the old order remains: prefer transport: vhost-user (the default) on a switch that carries other traffic"

// memifQuietPolls: the path's counters unchanged this many polls in a row
// (after frames went through) means the run's traffic is over and rig's
// side is holding its links.
const memifQuietPolls = 4

// closeMemif deletes the check's memif server ports from OvS while rig's
// clients still hold their links (memifServerNote: DPDK 22.11's memif
// server, in ovs-vswitchd, unmaps the rings when its client disconnects
// while a PMD thread may be in a burst on them; a deleted port is first
// taken off the PMD threads). The counters were read just before.
func (s *checkStep) closeMemif(ctx context.Context, p *checkPath) {
	for _, port := range []string{p.in, p.out} {
		_ = s.o.DeletePort(ctx, s.bridge, port) // one that stays: teardown tries again
	}
	p.closed = true
}

// reattach adds the memif server ports again after a run closed them,
// waits for them and points the flows at their new OpenFlow numbers.
func (s *checkStep) reattach(ctx context.Context, p *checkPath) error {
	if !p.closed {
		return nil
	}
	if err := s.addPorts(ctx, p); err != nil {
		return err
	}
	p.closed = false
	var err error
	if p.inOF, p.outOF, err = s.waitAttached(ctx, p.in, p.out); err != nil {
		return err
	}
	if err := s.o.DelFlowsByCookie(ctx, s.bridge, CheckCookie); err != nil {
		return fmt.Errorf("check: bridge %s: remove flows with cookie %#x: %w", s.bridge, CheckCookie, err)
	}
	return s.addFlows(ctx, p)
}

// checkConfig is what every dataplane run of the check (warm-up, run,
// search trial) shares: a loop over the path's two vdevs with the spec's
// cores and flows, its links held counterHold, and given linkSettle when
// OvS's side of them is the check's own new port (vhost-user, memif; a
// through-ports path's af_packet sockets open on netdevs whose OvS ports
// have been polled all along). pmd is OvS's PMD thread count, which a
// memif path's queues follow.
func checkConfig(sp *playbooks.CheckSpec, kind pathKind, vdevs []string, lcores string, pmd int) bench.Config {
	cfg := bench.Config{Role: bench.RoleLoop, VDevs: vdevs, Cores: sp.CoresOrDefault(), Lcores: lcores,
		SPort: fmt.Sprintf("1024-%d", 1024+sp.FlowsOrDefault()-1), Settle: linkSettle, Hold: counterHold}
	if kind == pathPorts {
		cfg.Settle = 0
	}
	if kind == pathMemif {
		// bench/README.md: through OvS, a memif client needs as many rx
		// queues as OvS transmits on (one per PMD thread, plus one) and
		// as many tx queues as the port's n_rxq (1)
		cfg.RxQ, cfg.TxQ = pmd+1, 1
	}
	return cfg
}

// CheckMemoryMB is the hugepage memory, in MiB, the check's dataplane
// takes (one process at a time: the warm-up, each run, each search trial;
// the largest frame size counts), besides what OvS takes: for a host, or a
// test, that reserves pages before the check. The path's vdevs are the
// ones the check would open, with placeholder socket paths and netdevs;
// a memif path's rx queues are counted for a PMD thread on every CPU.
func CheckMemoryMB(sp *playbooks.CheckSpec) (int, error) {
	kind, vdevs := pathVhost, []string{"net_virtio_user0,path=/run/rig/check/in.sock,server=1,queues=1", "net_virtio_user1,path=/run/rig/check/out.sock,server=1,queues=1"}
	switch {
	case sp.TopologyOrDefault() == playbooks.TopologyThroughPorts:
		kind, vdevs = pathPorts, []string{afPacketVdev(0, "in"), afPacketVdev(1, "out")}
	case sp.TransportOrDefault() == playbooks.TransportMemif:
		kind, vdevs = pathMemif, []string{"net_memif0,role=client,id=0,socket=/run/rig/check/in.sock,socket-abstract=no", "net_memif1,role=client,id=0,socket=/run/rig/check/out.sock,socket-abstract=no"}
	}
	most := 0
	for _, size := range sp.Sizes() {
		cfg := checkConfig(sp, kind, vdevs, "", runtime.NumCPU())
		cfg.FrameSize = size
		mb, err := dataplane.MemoryMB(cfg)
		if err != nil {
			return 0, fmt.Errorf("check: %d B frames: %w", size, err)
		}
		most = max(most, mb)
	}
	return most, nil
}

// counterHold is how long at most the dataplane keeps its ports open
// after the run, and counterPoll how often the check reads OvS's counters
// meanwhile: a vhost-user port has counters only while rig's side is
// connected. The hold ends early once the run is measured (its traffic
// drained) and the path's counters read the same releaseStillPolls polls
// in a row after that: OvS has nothing of the run in flight then.
const (
	linkSettle        = 500 * time.Millisecond // after rig's links are up: OvS's side of a vhost-user port starts
	counterHold       = 1500 * time.Millisecond
	counterPoll       = 100 * time.Millisecond
	releaseStillPolls = 2
)

// runPolling runs the dataplane and reads the bridge's counters every
// counterPoll from when its traffic may have ended until it exits; it returns the last reading of each port
// whose packet counters were known (the hold keeps them readable after
// the traffic stopped).
func (s *checkStep) runPolling(ctx context.Context, dp Dataplane, cfg bench.Config, p *checkPath) (*bench.Result, map[string]ovs.Counters, error) {
	type done struct {
		r   *bench.Result
		err error
	}
	// the run tells when its figures are in; its hold ends when the
	// counters have been read still after that (releaseStillPolls)
	rel := bench.NewHoldRelease()
	cfg.Release = rel
	defer rel.Done()
	ch := make(chan done, 1)
	go func() {
		r, err := dp.Run(ctx, cfg)
		ch <- done{r, err}
	}()
	last := map[string]ovs.Counters{}
	// reading OvS's counters costs CPU that rig's dataplane may share: no
	// reading before the traffic could have ended (the child starts EAL,
	// settles, then sends for the duration), then every counterPoll
	select {
	case d := <-ch:
		return d.r, last, d.err
	case <-time.After(cfg.Duration):
	}
	tick := time.NewTicker(counterPoll)
	defer tick.Stop()
	still := 0       // polls in a row that the path's counters did not move
	stillAfter := -1 // the same since the run was measured (-1: not yet)
	for {
		select {
		case d := <-ch:
			return d.r, last, d.err
		case <-tick.C:
			if p.closed {
				rel.Done() // nothing left to read: OvS's side is gone
				continue
			}
			cs, err := s.o.PortCounters(ctx, s.bridge)
			if err != nil {
				continue
			}
			moved := false
			for port, c := range cs {
				prev, seen := last[port]
				if c.Known(ovs.RxPackets) && c.Known(ovs.TxPackets) && (!seen || c.RxPackets+c.TxPackets >= prev.RxPackets+prev.TxPackets) {
					if port == p.in || port == p.out {
						moved = moved || !seen || c.RxPackets+c.TxPackets != prev.RxPackets+prev.TxPackets
					}
					last[port] = c // never a reading after a reset (the peer gone)
				}
			}
			if moved {
				still = 0
			} else {
				still++
			}
			select {
			case <-rel.Measured:
				switch {
				case stillAfter < 0 || moved:
					stillAfter = 0
				default:
					stillAfter++
				}
			default:
			}
			if p.kind == pathMemif && still >= memifQuietPolls && last[p.in].RxPackets > 0 {
				s.closeMemif(ctx, p)
			}
			if p.kind != pathMemif && stillAfter >= releaseStillPolls {
				rel.Done() // a memif path's clients go only after closeMemif
			}
		}
	}
}

// portDelta is a port's counters over the run. A vhost-user port's packet
// counters restart at 0 when rig's dataplane (a new process per run)
// connects, before its first frame: the run's packets are the counters
// themselves; its drop counters are OvS's own and keep counting, so they
// are deltas of their custom breakdowns. Other ports: after - before. The
// comparison of rig's rx with OvS's egress tx checks either way.
func portDelta(kind pathKind, port string, after, before ovs.Counters) (ovs.Counters, string) {
	var d ovs.Counters
	if kind == pathVhost {
		d = dropsFromCustom(after, before)
		for _, k := range append(append([]string(nil), vhostTxDrops...), vhostRxDrops...) {
			if slicesContains(after.Stale, k) || slicesContains(before.Stale, k) {
				return d, fmt.Sprintf("OvS port %s: its drop counters come from the Interface statistics column (refreshed every 5 s), so the drops placed on it may be off by an earlier run's; the packet counts are live", port)
			}
		}
	} else {
		d = after.Sub(before)
	}
	var bad []string
	for _, k := range []string{ovs.RxPackets, ovs.TxPackets, ovs.RxDropped, ovs.TxDropped} {
		if !d.Known(k) {
			bad = append(bad, k)
		}
	}
	if len(bad) > 0 {
		return d, fmt.Sprintf("OvS port %s: counters unknown or reset during the run: %s (is its peer connected?)", port, strings.Join(bad, ", "))
	}
	return d, ""
}

func slicesContains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// vhostTxDrops are the custom counters whose sum is a vhost-user port's
// tx_dropped, and vhostRxDrops its rx_dropped (lib/netdev-dpdk.c); they
// keep counting while no peer is connected, so they have a baseline when
// the standard counters have none.
var (
	vhostTxDrops = []string{"ovs_tx_failure_drops", "ovs_tx_mtu_exceeded_drops", "ovs_tx_qos_drops", "ovs_tx_invalid_hwol_drops"}
	vhostRxDrops = []string{"ovs_rx_qos_drops"}
)

// dropsFromCustom is after, with the drop counters taken as the deltas of
// their custom breakdowns (OvS's own drop counters are not reset when a
// vhost-user peer connects, the packet counters are).
func dropsFromCustom(after, before ovs.Counters) ovs.Counters {
	d := after
	d.Custom = map[string]uint64{}
	for k, v := range after.Custom {
		d.Custom[k] = v
		if b, ok := before.Custom[k]; ok && v >= b {
			d.Custom[k] = v - b
		}
	}
	sum := func(keys []string) (uint64, bool) {
		var n uint64
		for _, k := range keys {
			v, ok := d.Custom[k]
			if !ok {
				return 0, false
			}
			n += v
		}
		return n, true
	}
	if n, ok := sum(vhostTxDrops); ok {
		d.TxDropped = n
	}
	if n, ok := sum(vhostRxDrops); ok {
		d.RxDropped = n
	}
	return d
}

// virtualDrivers report a nominal link speed, not a real one: no % of
// line rate for them.
var virtualDrivers = []string{"net_virtio_user", "net_memif", "net_af_packet", "net_null", "net_ring", "net_tap", "net_vhost"}

func realLink(r *bench.Result) bool {
	if r.LinkSpeedGbps <= 0 || r.LinkSpeedSource != "port" {
		return false
	}
	for _, p := range r.Ports {
		for _, v := range virtualDrivers {
			if strings.HasPrefix(p.Driver, v) {
				return false
			}
		}
	}
	return true
}

// fillRun copies rig's figures, attributes the loss and marks a
// measurement that cannot be right as invalid.
func fillRun(run *CheckRun, r *bench.Result, pc PathCounts) {
	run.DurationS, run.Ports, run.Sent, run.Received, run.Latency = r.DurationS, r.Ports, r.Sent, r.Received, r.Latency
	run.Warnings = append(run.Warnings, r.Warnings...)
	if len(r.Ports) > 1 {
		run.RxMpps, run.RxGbps = r.Ports[1].RxMpps, r.Ports[1].RxGbps
		if realLink(r) {
			run.LinkGbps, run.LineRatePct = r.LinkSpeedGbps, r.Ports[1].RxLineRatePct
		}
	}
	if r.Sent > 0 {
		run.LossPct = 100 * float64(int64(r.Sent)-int64(r.Received)) / float64(r.Sent)
	}
	run.Loss = AttributeLoss(pc)
	run.Invalid = invalidReason(r)
}

// invalidReason says why a dataplane result cannot be a measurement.
func invalidReason(r *bench.Result) string {
	switch {
	case r.Interrupted:
		return "the run was interrupted"
	case len(r.Ports) != 2:
		return fmt.Sprintf("want 2 ports (generator, receiver), the dataplane reported %d", len(r.Ports))
	case r.Sent == 0:
		return "the generator sent no frame (is the path's link up?)"
	case r.Received > r.Sent:
		return fmt.Sprintf("received %d frames, more than the %d sent: frames came from elsewhere", r.Received, r.Sent)
	case r.DurationS <= 0:
		return "the run has no duration"
	}
	return strings.Join(r.Invalid, "; ") // the dataplane's own judgement
}

// thresholds judges one run; 0 = not checked.
func thresholds(t playbooks.CheckThresholds, run *CheckRun) []ThresholdVerdict {
	var out []ThresholdVerdict
	if t.MinMpps > 0 {
		out = append(out, ThresholdVerdict{Name: "min_mpps", Limit: t.MinMpps, Measured: run.RxMpps, Pass: run.RxMpps >= t.MinMpps})
	}
	if t.MinLineRatePct > 0 {
		v := ThresholdVerdict{Name: "min_linerate_pct", Limit: t.MinLineRatePct, Measured: run.LineRatePct, Pass: run.LinkGbps > 0 && run.LineRatePct >= t.MinLineRatePct}
		if run.LinkGbps == 0 {
			v.Note = "no real link speed on this path (virtual ports report a nominal one); use min_mpps"
		}
		out = append(out, v)
	}
	if t.MaxLossPct > 0 {
		out = append(out, ThresholdVerdict{Name: "max_loss_pct", Limit: t.MaxLossPct, Measured: run.LossPct, Pass: run.LossPct <= t.MaxLossPct})
	}
	if t.MaxP99Us > 0 {
		v := ThresholdVerdict{Name: "max_p99_us", Limit: t.MaxP99Us}
		if run.Latency != nil && run.Latency.Samples > 0 {
			v.Measured, v.Pass = run.Latency.P99Us, run.Latency.P99Us <= t.MaxP99Us
		} else {
			v.Note = "no latency samples"
		}
		out = append(out, v)
	}
	return out
}

// summarizePMD says what each PMD thread that received frames did:
// packets, cycles per packet, processing vs idle.
func summarizePMD(stats []ovs.PMDStats) string {
	var parts []string
	for _, t := range stats {
		if t.Main || t.RxPackets == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s: %d packets, %.0f cycles/packet (%.0f processing), %.1f%% processing, %.1f%% idle",
			t.Thread, t.RxPackets, t.AvgCyclesPerPacket, t.AvgProcessingCyclesPerPacket, t.ProcessingPct, t.IdlePct))
	}
	return strings.Join(parts, "; ")
}

// lcores places rig's dataplane on the CPUs OvS's PMD threads do not use
// (pmd-cpu-mask): every lcore of rig on the free CPUs, round-robin. With
// no free CPU it shares them, and says so.
func (s *checkStep) lcores(ctx context.Context) (string, string, error) {
	online, err := cpuset.Online(s.env.Host)
	if err != nil {
		return "", "", fmt.Errorf("check: online CPUs: %w", err)
	}
	if len(online) == 0 {
		return "", "", fmt.Errorf("check: %s lists no CPU", cpuset.OnlineFile)
	}
	st, err := s.o.ReadState(ctx)
	if err != nil {
		return "", "", err
	}
	pmd := map[int]bool{}
	if m := st.OtherConfig["pmd-cpu-mask"]; m != "" {
		cpus, _ := cpuset.ParseMask(m)
		for _, c := range cpus {
			pmd[c] = true
		}
	}
	var free []int
	for _, c := range online {
		if !pmd[c] {
			free = append(free, c)
		}
	}
	note := ""
	if len(free) == 0 {
		free = online
		note = "every online CPU runs an OvS PMD thread (pmd-cpu-mask); rig's dataplane shares them, so the figures are lower than the path can do"
	}
	return LcoreList(s.spec.CoresOrDefault(), free), note, nil
}

// pmdThreads is how many PMD threads OvS runs: the CPUs of pmd-cpu-mask,
// or 1 (OvS's default: one per NUMA node; rig's VMs have one).
func (s *checkStep) pmdThreads(ctx context.Context) int {
	st, err := s.o.ReadState(ctx)
	if err != nil {
		return 1
	}
	cpus, err := cpuset.ParseMask(st.OtherConfig["pmd-cpu-mask"])
	if err != nil || len(cpus) == 0 {
		return 1
	}
	return len(cpus)
}

// LcoreList maps lcore 0 (rig's main, Go) and worker lcores 1..cores onto
// cpus in EAL's --lcores syntax: the main lcore on the first CPU, the
// workers round-robin on the others (on all of them when there are not
// more CPUs than workers), e.g. 0@0,1@0 on one CPU.
func LcoreList(cores int, cpus []int) string {
	cpus = append([]int(nil), cpus...)
	sort.Ints(cpus)
	workers := cpus
	if len(cpus) > cores {
		workers = cpus[1:]
	}
	parts := []string{fmt.Sprintf("0@%d", cpus[0])}
	for l := 1; l <= cores; l++ {
		parts = append(parts, fmt.Sprintf("%d@%d", l, workers[(l-1)%len(workers)]))
	}
	return strings.Join(parts, ",")
}
