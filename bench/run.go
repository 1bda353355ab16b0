package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"rig/bench/internal/dpdk"
)

// Progress receives live per-interval lines. TTY: rewrite one line (\r).
type Progress struct {
	W   io.Writer
	TTY bool
}

type openPort struct {
	name string
	id   uint16
	drv  string
	mac  [6]byte
}

type workUnit struct {
	u      *dpdk.Unit
	kind   int
	rxPort int // index into ports, -1 none
	txPort int
}

// Run executes one benchmark in this process. EAL is initialised here, so
// Run can be called once per process. ctx cancellation (SIGINT/SIGTERM)
// stops the run cleanly: generators halt, lcores are joined, ports stopped
// and closed, rte_eal_cleanup runs; the partial result is returned.
func Run(ctx context.Context, c Config, prog Progress) (*Result, error) {
	if err := c.Defaults(); err != nil {
		return nil, err
	}
	res := &Result{SchemaVersion: SchemaVersion, Role: c.Role, FrameSize: c.FrameSize, FrameSizeSource: "flag", Cores: c.Cores}
	if c.Role == RoleFwd {
		res.FwdMode = c.FwdMode
	}
	var linkBps float64
	if c.LinkSpeed != "" {
		v, err := ParseLinkSpeed(c.LinkSpeed)
		if err != nil {
			return nil, err
		}
		linkBps, res.LinkSpeedSource = v, "flag"
	}
	var frames [][]byte
	if c.Pcap != "" {
		var err error
		if frames, err = ReadPcap(c.Pcap, 9000); err != nil {
			return nil, err
		}
	}
	mem := ChooseMemory(c.NoHuge, c.HugeDir, freeHugepages(), hugetlbfsMounted())
	if mem.Warning != "" {
		res.Warnings = append(res.Warnings, mem.Warning)
		if prog.W != nil {
			fmt.Fprintf(prog.W, "warning: %s\n", mem.Warning)
		}
	}
	res.Memory = strings.Join(mem.Args, " ")
	if err := waitMemifServers(ctx, c.VDevs, 10*time.Second); err != nil {
		return nil, err
	}
	if !c.NoPinGo {
		// before EAL starts its threads: everything but the worker lcores
		// (which EAL moves to their own CPUs) stays on the main lcore's CPUs
		m, err := c.LcoreMap()
		if err != nil {
			return nil, err
		}
		if _, err := pinProcess(m.CPUs[m.Main]); err != nil {
			return nil, failure("Go threads", err, "", "run with --no-pin-go")
		}
		res.PinnedGo = true
	}
	if err := dpdk.InitEAL(c.EALArgs(mem)); err != nil {
		return nil, explainEALInit(err, mem, os.Geteuid(), unwritableHugeDirs(c.HugeDir))
	}
	defer func() { _ = dpdk.CleanupEAL() }()

	workers := dpdk.WorkerLcores()
	if len(workers) < c.Cores {
		return nil, fmt.Errorf("bench: %d worker lcore(s) from -l %s, want --cores %d", len(workers), c.Lcores, c.Cores)
	}
	workers = workers[:c.Cores]

	dataRoom := uint32(2048 + 128)
	if c.FrameSize+128 > int(dataRoom) {
		dataRoom = uint32(c.FrameSize + 128)
	}
	for _, f := range frames {
		if len(f)+128 > int(dataRoom) {
			dataRoom = uint32(len(f) + 128)
		}
	}
	nb := len(c.Ports)*(c.RxQ*c.RxD+c.TxQ*c.TxD) + c.Cores*(c.MbufCache+4*c.Burst) + 4096
	if c.Mbufs > nb {
		nb = c.Mbufs
	}
	pool, err := dpdk.NewMempool("rig_pool", uint32(nb), uint32(c.MbufCache), dataRoom)
	if err != nil {
		return nil, failure("mempool", err, "", "reserve more hugepages or lower --rxd/--txd")
	}
	defer pool.Free()

	var ports []openPort
	defer func() {
		quiesceMemif(ports, c.VDevs)
		for _, p := range ports {
			_ = dpdk.StopClosePort(p.id)
		}
	}()
	for _, name := range c.Ports {
		id, err := dpdk.PortByName(name)
		if err != nil {
			return nil, failure("port "+name, err, "", "name a device given with --vdev, or a PCI address DPDK can probe: an mlx5 (ConnectX/BlueField) function stays bound to mlx5_core, other NICs are bound to vfio-pci")
		}
		rxq, txq := c.RxQ, c.TxQ
		pc := dpdk.PortConf{RxQ: uint16(rxq), TxQ: uint16(txq), RxD: uint16(c.RxD), TxD: uint16(c.TxD), RSS: rxq > 1, Pool: pool}
		// a memif client fails to start until its server listens: retry
		for deadline := time.Now().Add(10 * time.Second); ; {
			err := dpdk.SetupPort(id, pc)
			if err == nil {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				_ = dpdk.StopClosePort(id)
				return nil, failure("port "+name, err, "", "check the devargs; a memif client needs its server running")
			}
			time.Sleep(100 * time.Millisecond)
		}
		info, _ := dpdk.GetPortInfo(id)
		mac, _ := dpdk.PortMAC(id)
		ports = append(ports, openPort{name: name, id: id, drv: info.Driver, mac: mac})
		if linkBps == 0 && info.SpeedMbps > 0 && info.SpeedMbps < 10_000_000 {
			linkBps, res.LinkSpeedSource = float64(info.SpeedMbps)*1e6, "port"
		}
	}
	res.LinkSpeedGbps = linkBps / 1e9
	if err := waitLinks(ctx, ports, 10*time.Second); err != nil {
		return nil, err
	}

	units, release, err := buildUnits(&c, ports, pool, frames, linkBps)
	defer func() {
		for _, u := range units {
			u.u.Free()
		}
		release()
	}()
	if err != nil {
		return nil, err
	}

	// distribute units round-robin over the worker lcores
	perLcore := make([][]*dpdk.Unit, len(workers))
	for i, u := range units {
		perLcore[i%len(workers)] = append(perLcore[i%len(workers)], u.u)
	}
	start := time.Now()
	for i, l := range workers {
		if err := dpdk.Launch(l, perLcore[i]); err != nil {
			dpdk.Stop()
			dpdk.Wait()
			return nil, fmt.Errorf("bench: %w", err)
		}
	}
	stopped := false
	stopAll := func() {
		if !stopped {
			dpdk.Stop()
			dpdk.Wait()
			stopped = true
		}
	}
	defer stopAll()

	elapsed := loop(ctx, &c, units, ports, res, prog, start)
	stopAll()
	collect(&c, units, ports, res, elapsed)
	return res, nil
}

func buildUnits(c *Config, ports []openPort, pool *dpdk.Mempool, frames [][]byte, linkBps float64) ([]workUnit, func(), error) {
	var units []workUnit
	var releases []func()
	release := func() {
		for _, r := range releases {
			r()
		}
	}
	add := func(kind, rxp, rxq, txp, txq int) (*dpdk.Unit, error) {
		var rp, rq, tp, tq uint16
		if rxp >= 0 {
			rp, rq = ports[rxp].id, uint16(rxq)
		}
		if txp >= 0 {
			tp, tq = ports[txp].id, uint16(txq)
		}
		u, err := dpdk.NewUnit(kind, rp, rq, tp, tq, uint16(c.Burst), pool)
		if err != nil {
			return nil, err
		}
		units = append(units, workUnit{u: u, kind: kind, rxPort: rxp, txPort: txp})
		return u, nil
	}
	if c.Role == RoleGen || c.Role == RoleLoop {
		src, err := ParseIPRange(c.SrcIP)
		if err != nil {
			return units, release, err
		}
		dst, err := ParseIPRange(c.DstIP)
		if err != nil {
			return units, release, err
		}
		sp, err := ParsePortRange(c.SPort)
		if err != nil {
			return units, release, err
		}
		dp, err := ParsePortRange(c.DPort)
		if err != nil {
			return units, release, err
		}
		dmac, err := ParseMAC(c.DstMAC)
		if err != nil {
			return units, release, err
		}
		pps, err := ParseRate(c.Rate, c.FrameSize, linkBps)
		if err != nil {
			return units, release, err
		}
		n := c.TxQ
		for q := 0; q < n; q++ {
			u, err := add(dpdk.KindGen, -1, 0, 0, q)
			if err != nil {
				return units, release, err
			}
			cnt := uint64(0)
			if c.Count > 0 {
				cnt = c.Count / uint64(n)
				if uint64(q) < c.Count%uint64(n) {
					cnt++
				}
				if cnt == 0 {
					u.Halt()
				}
			}
			g := dpdk.GenConf{
				PktLen: uint32(c.FrameSize - FCSLen), Stream: uint16(q), Stamp: len(frames) == 0,
				DstMAC: dmac, SrcMAC: ports[0].mac,
				SrcIP: src.First, NSrcIP: src.N, DstIP: dst.First, NDstIP: dst.N,
				SPort: sp.First, NSPort: sp.N, DPort: dp.First, NDPort: dp.N,
				Count: cnt, PPS: pps / float64(n), Frames: frames,
			}
			rel, err := u.SetGen(g)
			if err != nil {
				return units, release, fmt.Errorf("bench: gen queue %d: %w", q, err)
			}
			releases = append(releases, rel)
		}
	}
	if c.Role == RoleRx || c.Role == RoleLoop {
		rp := 0
		if c.Role == RoleLoop && len(ports) > 1 {
			rp = 1
		}
		for q := 0; q < c.RxQ; q++ {
			u, err := add(dpdk.KindRx, rp, q, -1, 0)
			if err != nil {
				return units, release, err
			}
			if c.Capture > 0 && q == 0 {
				if err := u.SetCapture(uint32(c.Capture), 2048); err != nil {
					return units, release, err
				}
			}
		}
	}
	if c.Role == RoleFwd {
		mode := map[string]int{"io": dpdk.FwdIO, "mac": dpdk.FwdMAC, "macswap": dpdk.FwdMACSwap}[c.FwdMode]
		peer := func(i int) int { return (i + 1) % len(ports) }
		for q := 0; q < c.RxQ; q++ {
			for i := range ports {
				u, err := add(dpdk.KindFwd, i, q, peer(i), q%c.TxQ)
				if err != nil {
					return units, release, err
				}
				var dst [6]byte
				if c.FwdDstMAC != "" {
					if dst, err = ParseMAC(c.FwdDstMAC); err != nil {
						return units, release, err
					}
				}
				src := ports[peer(i)].mac
				if c.FwdSrcMAC != "" {
					if src, err = ParseMAC(c.FwdSrcMAC); err != nil {
						return units, release, err
					}
				}
				u.SetFwd(mode, dst, src, uint32(c.TxRetry))
				if c.TxFirst > 0 && q == 0 {
					u.SetTxFirst(uint16(c.TxFirst))
				}
			}
		}
	}
	return units, release, nil
}

type totals struct{ tx, rx []uint64 }

func snapshot(units []workUnit, nports int) (t totals, genDone bool) {
	t.tx, t.rx = make([]uint64, nports), make([]uint64, nports)
	genDone = true
	anyGen := false
	// receivers first: a frame counted as received was sent before
	ordered := make([]workUnit, 0, len(units))
	for _, u := range units {
		if u.kind == dpdk.KindRx {
			ordered = append(ordered, u)
		}
	}
	for _, u := range units {
		if u.kind != dpdk.KindRx {
			ordered = append(ordered, u)
		}
	}
	for _, u := range ordered {
		s := u.u.Snapshot(false)
		if u.kind == dpdk.KindGen {
			anyGen = true
			genDone = genDone && s.Done
		}
		if u.txPort >= 0 && u.kind != dpdk.KindRx {
			t.tx[u.txPort] += s.TxPkts
		}
		if u.rxPort >= 0 {
			t.rx[u.rxPort] += s.RxPkts
		}
	}
	return t, anyGen && genDone
}

func sum(v []uint64) (s uint64) {
	for _, x := range v {
		s += x
	}
	return s
}

// loop polls counters, prints live rates and decides when to stop.
// It returns the measured interval (generators halted at its end).
func loop(ctx context.Context, c *Config, units []workUnit, ports []openPort, res *Result, prog Progress, start time.Time) time.Duration {
	// poll fast only when a count must be noticed promptly: every wakeup of
	// this thread preempts whatever runs on the main lcore's CPU (on a 2-core
	// box, a peer process's lcore)
	poll := 50 * time.Millisecond
	if c.Count > 0 {
		poll = 10 * time.Millisecond
	}
	warm := LatencyWarmup(c.Duration)
	tick := time.NewTicker(poll)
	defer tick.Stop()
	lastT, _ := snapshot(units, len(ports))
	lastAt := start
	var end time.Duration
	halt := func() {
		for _, u := range units {
			if u.kind == dpdk.KindGen {
				u.u.Halt()
			}
		}
	}
	drain := func(max time.Duration) {
		deadline := time.Now().Add(max)
		prev := uint64(0)
		stable := time.Now()
		for time.Now().Before(deadline) {
			t, _ := snapshot(units, len(ports))
			rx := sum(t.rx)
			if c.Role == RoleLoop && rx >= sum(t.tx) {
				return
			}
			if rx != prev {
				prev, stable = rx, time.Now()
			} else if time.Since(stable) > 50*time.Millisecond {
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	// rx only: rates over first..last frame seen, not over idle waiting
	var firstRx, lastRx time.Duration
	var prevRx uint64
	rxSpan := func(el time.Duration) time.Duration {
		if c.Role == RoleRx && lastRx > firstRx {
			return lastRx - firstRx
		}
		return el
	}
	for {
		select {
		case <-ctx.Done():
			res.Interrupted = true
			if c.Role == RoleRx {
				return rxSpan(time.Since(start))
			}
			end = time.Since(start)
			halt()
			drain(200 * time.Millisecond)
			return end
		case now := <-tick.C:
			t, genDone := snapshot(units, len(ports))
			if now.Sub(lastAt) >= c.Interval {
				printSample(c, t, lastT, now.Sub(lastAt).Seconds(), now.Sub(start).Seconds(), ports, res, prog)
				lastT, lastAt = t, now
			}
			el := time.Since(start)
			if rx := sum(t.rx); rx != prevRx {
				if prevRx == 0 {
					firstRx = el - poll // first frames arrived within the last tick
				}
				prevRx, lastRx = rx, el
			}
			if res.LatWarmupS == 0 && prevRx > 0 && el-firstRx >= warm {
				// latency from here on: the first frames wait for links,
				// caches and page faults, and would make the max meaningless
				for _, u := range units {
					if u.kind == dpdk.KindRx {
						u.u.LatReset()
					}
				}
				res.LatWarmupS = warm.Seconds()
			}
			switch {
			case c.Duration > 0 && el >= c.Duration:
				halt()
				drain(time.Second)
				return rxSpan(el)
			case genDone:
				end = el
				drain(time.Second)
				return end
			case (c.Role == RoleRx || c.Role == RoleFwd) && c.Count > 0 && sum(t.rx) >= c.Count:
				return rxSpan(el)
			}
		}
	}
}

func printSample(c *Config, t, last totals, secs, at float64, ports []openPort, res *Result, prog Progress) {
	s := Sample{T: at}
	var parts []string
	for i, p := range ports {
		tx := float64(t.tx[i]-last.tx[i]) / secs / 1e6
		rx := float64(t.rx[i]-last.rx[i]) / secs / 1e6
		s.TxMpps = append(s.TxMpps, tx)
		s.RxMpps = append(s.RxMpps, rx)
		parts = append(parts, fmt.Sprintf("%s tx %.3f rx %.3f Mpps", p.name, tx, rx))
	}
	res.Samples = append(res.Samples, s)
	if prog.W == nil {
		return
	}
	line := fmt.Sprintf("[%5.1fs] %s", at, strings.Join(parts, " | "))
	if c.Role == RoleLoop {
		line += fmt.Sprintf(" | in flight %d", int64(sum(t.tx))-int64(sum(t.rx)))
	}
	if prog.TTY {
		fmt.Fprintf(prog.W, "\r\033[K%s", line)
	} else {
		fmt.Fprintln(prog.W, line)
	}
}

func collect(c *Config, units []workUnit, ports []openPort, res *Result, elapsed time.Duration) {
	secs := elapsed.Seconds()
	res.DurationS = secs
	hz := float64(dpdk.TSCHz())
	ps := make([]PortStats, len(ports))
	for i, p := range ports {
		ps[i] = PortStats{Name: p.name, Port: p.id, Driver: p.drv}
	}
	var hist []uint64
	var latN, latSum uint64
	latMin, latMax := ^uint64(0), uint64(0)
	for _, u := range units {
		s := u.u.Snapshot(u.kind == dpdk.KindRx)
		switch u.kind {
		case dpdk.KindGen:
			ps[u.txPort].TxPkts += s.TxPkts
			ps[u.txPort].TxBytes += s.TxBytes
			res.Sent += s.TxPkts
		case dpdk.KindRx:
			ps[u.rxPort].RxPkts += s.RxPkts
			ps[u.rxPort].RxBytes += s.RxBytes
			res.Received += s.RxPkts
			res.SeqGaps += s.Lost
			res.Reordered += s.Reordered
			res.Unstamped += s.RxPkts - s.Stamped
			if hist == nil {
				hist = make([]uint64, len(s.Hist))
			}
			for i, v := range s.Hist {
				hist[i] += v
			}
			latN += s.LatN
			if s.LatN > 0 && u.u.LatResetPending() {
				// no frame after the warm-up: this unit's stats still hold it
				res.LatWarmupS = 0
			}
			latSum += s.LatSum
			latMin = min(latMin, s.LatMin)
			latMax = max(latMax, s.LatMax)
			if c.Capture > 0 {
				fr, ls := u.u.Captured()
				for i := range fr {
					res.Captured = append(res.Captured, Frame{Data: fr[i], Len: ls[i]})
				}
			}
		case dpdk.KindFwd:
			ps[u.rxPort].RxPkts += s.RxPkts
			ps[u.rxPort].RxBytes += s.RxBytes
			ps[u.txPort].TxPkts += s.TxPkts
			ps[u.rxPort].Drops += s.Drops
			// tx bytes of a forwarder: what it received minus what it dropped
			if s.RxPkts > 0 {
				ps[u.txPort].TxBytes += uint64(float64(s.RxBytes) * float64(s.TxPkts) / float64(s.RxPkts))
			}
		}
	}
	if c.Role == RoleLoop {
		res.Lost = int64(res.Sent) - int64(res.Received)
	}
	linkBps := res.LinkSpeedGbps * 1e9
	for i := range ps {
		p := &ps[i]
		if secs > 0 {
			p.TxMpps = float64(p.TxPkts) / secs / 1e6
			p.RxMpps = float64(p.RxPkts) / secs / 1e6
		}
		p.TxGbps, p.TxGbpsL1 = Gbps(p.TxPkts, p.TxBytes, secs)
		p.RxGbps, p.RxGbpsL1 = Gbps(p.RxPkts, p.RxBytes, secs)
		if linkBps > 0 {
			p.TxLineRatePct = p.TxGbpsL1 * 1e9 / linkBps * 100
			p.RxLineRatePct = p.RxGbpsL1 * 1e9 / linkBps * 100
		}
	}
	res.Ports = ps
	// rx and fwd take whatever arrives, a pcap replays its own sizes:
	// report the average frame, not --size
	if c.Role == RoleRx || c.Role == RoleFwd || c.Pcap != "" {
		var pk, by uint64
		for _, p := range ps {
			if c.Pcap != "" {
				pk, by = pk+p.TxPkts, by+p.TxBytes
			} else {
				pk, by = pk+p.RxPkts, by+p.RxBytes
			}
		}
		res.FrameSize, res.FrameSizeSource = 0, "measured"
		if pk > 0 {
			res.FrameSize = int((by+pk/2)/pk) + FCSLen
		}
	}
	if latN > 0 && hz > 0 {
		us := func(cyc float64) float64 { return cyc / hz * 1e6 }
		res.Latency = &Latency{
			Samples:         latN,
			MinUs:           us(float64(latMin)),
			AvgUs:           us(float64(latSum) / float64(latN)),
			P50Us:           us(percentile(hist, dpdk.HistSub, 0.50)),
			P99Us:           us(percentile(hist, dpdk.HistSub, 0.99)),
			MaxUs:           us(float64(latMax)),
			WarmupExcludedS: res.LatWarmupS,
		}
	}
}

// LatencyWarmup is how long after the first received frame latency
// samples start to count: 0.5 s, or a quarter of a shorter --duration.
func LatencyWarmup(d time.Duration) time.Duration {
	const w = 500 * time.Millisecond
	if d > 0 && d < 4*w {
		return d / 4
	}
	return w
}

func freeHugepages() int {
	n := 0
	for _, sz := range []string{"2048kB", "1048576kB"} {
		b, err := os.ReadFile("/sys/kernel/mm/hugepages/hugepages-" + sz + "/free_hugepages")
		if err == nil {
			v, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			n += v
		}
	}
	return n
}

func hugetlbfsMounted() bool {
	b, err := os.ReadFile("/proc/mounts")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 3 && f[2] == "hugetlbfs" {
			return true
		}
	}
	return false
}

// waitLinks waits until every port reports link up (memif connects
// asynchronously), so the first stamped frames do not wait in a queue.
func waitLinks(ctx context.Context, ports []openPort, max time.Duration) error {
	deadline := time.Now().Add(max)
	for {
		var down []string
		for _, p := range ports {
			if info, err := dpdk.GetPortInfo(p.id); err != nil || !info.LinkUp {
				down = append(down, p.name)
			}
		}
		if len(down) == 0 {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("bench: interrupted while waiting for link up on %s", strings.Join(down, ", "))
		}
		if time.Now().After(deadline) {
			return failuref("port "+strings.Join(down, ", "), "connect the cable/peer: a memif client needs its server running, a tap its interface up", "link down after %v", max)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
