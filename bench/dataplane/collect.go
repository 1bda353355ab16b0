//go:build cgo

package dataplane

import (
	"time"

	"rig/bench"
	"rig/bench/internal/dpdk"
)

// collect reads the units' final counters (lcores joined) into res.
func collect(c *bench.Config, units []workUnit, ports []openPort, res *bench.Result, elapsed time.Duration) {
	secs := elapsed.Seconds()
	res.DurationS = secs
	ps := make([]bench.PortStats, len(ports))
	for i, p := range ports {
		ps[i] = bench.PortStats{Name: p.name, Port: p.id, Driver: p.drv}
		if d := dpdk.PortDrops(p.id, bench.DropXstats); len(d) > 0 {
			ps[i].DropCounters = d
		}
	}
	lat := bench.LatencyAcc{MinCyc: ^uint64(0)}
	var first, last uint64
	for _, u := range units {
		s := u.u.Snapshot(u.Kind == bench.KindRx)
		switch u.Kind {
		case bench.KindGen:
			ps[u.TxPort].TxPkts += s.TxPkts
			ps[u.TxPort].TxBytes += s.TxBytes
			ps[u.TxPort].TxKicks += s.TxKicks
			res.Sent += s.TxPkts
			if s.TxFirstTSC != 0 && (first == 0 || s.TxFirstTSC < first) {
				first = s.TxFirstTSC
			}
			last = max(last, s.TxLastTSC)
		case bench.KindRx:
			ps[u.RxPort].RxPkts += s.RxPkts
			ps[u.RxPort].RxBytes += s.RxBytes
			collectRx(c, u, s, res, &lat)
		case bench.KindFwd:
			ps[u.RxPort].RxPkts += s.RxPkts
			ps[u.RxPort].RxBytes += s.RxBytes
			ps[u.TxPort].TxPkts += s.TxPkts
			ps[u.TxPort].TxKicks += s.TxKicks
			ps[u.RxPort].Drops += s.Drops
			ps[u.RxPort].Policed += s.Policed
			if c.FwdMode == "io" {
				ps[u.RxPort].BytesNotMeasured, ps[u.TxPort].BytesNotMeasured = true, true
			}
			// tx bytes of a forwarder: what it received minus what it dropped
			if s.RxPkts > 0 {
				ps[u.TxPort].TxBytes += uint64(float64(s.RxBytes) * float64(s.TxPkts) / float64(s.RxPkts))
			}
		}
	}
	if c.Role == bench.RoleLoop {
		res.Lost = int64(res.Sent) - int64(res.Received)
	}
	if hz := float64(dpdk.TSCHz()); last > first && hz > 0 {
		res.SendS = float64(last-first) / hz
	}
	bench.PortRates(ps, secs, res.LinkSpeedGbps*1e9)
	res.Ports = ps
	measuredFrameSize(c, res)
	res.Latency = lat.Result(float64(dpdk.TSCHz()), res.LatWarmupS)
}

// collectRx adds one rx unit's sequence, latency and capture counters.
func collectRx(c *bench.Config, u workUnit, s dpdk.Counters, res *bench.Result, lat *bench.LatencyAcc) {
	res.Received += s.RxPkts
	res.SeqGaps += s.Lost
	res.Reordered += s.Reordered
	res.Unstamped += s.RxPkts - s.Stamped
	res.Foreign += s.Foreign
	if lat.Hist == nil {
		lat.Hist = make([]uint64, len(s.Hist))
	}
	for i, v := range s.Hist {
		lat.Hist[i] += v
	}
	lat.N += s.LatN
	if s.LatN > 0 && u.u.LatResetPending() {
		// no frame after the warm-up: this unit's stats still hold it
		res.LatWarmupS = 0
	}
	lat.Sum += s.LatSum
	lat.MinCyc = min(lat.MinCyc, s.LatMin)
	lat.MaxCyc = max(lat.MaxCyc, s.LatMax)
	if c.Capture > 0 {
		fr, ls := u.u.Captured()
		for i := range fr {
			res.Captured = append(res.Captured, bench.Frame{Data: fr[i], Len: ls[i]})
		}
	}
}

// measuredFrameSize: rx and fwd take whatever arrives, a pcap replays its
// own sizes: report the average frame, not --size; an io forwarder reads
// no frame: its size is not measured.
func measuredFrameSize(c *bench.Config, res *bench.Result) {
	if c.Role != bench.RoleRx && c.Role != bench.RoleFwd && c.Pcap == "" {
		return
	}
	if c.Role == bench.RoleFwd && c.FwdMode == "io" {
		res.FrameSize, res.FrameSizeSource = 0, bench.FrameSizeNotMeasured
		res.Warnings = append(res.Warnings, bench.IONoBytes)
		return
	}
	var pk, by uint64
	for _, p := range res.Ports {
		if c.Pcap != "" {
			pk, by = pk+p.TxPkts, by+p.TxBytes
		} else {
			pk, by = pk+p.RxPkts, by+p.RxBytes
		}
	}
	res.FrameSize, res.FrameSizeSource = 0, "measured"
	if pk > 0 {
		res.FrameSize = int((by+pk/2)/pk) + bench.FCSLen
	}
}
