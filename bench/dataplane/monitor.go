//go:build cgo

package dataplane

import (
	"context"
	"fmt"
	"strings"
	"time"

	"rig/bench"
)

// The monitor loop: while the lcores run, it polls the units' counters,
// prints live rates, takes samples and decides when the run stops.

type totals struct{ tx, rx []uint64 }

func snapshot(units []workUnit, nports int) (t totals, genDone bool) {
	t.tx, t.rx = make([]uint64, nports), make([]uint64, nports)
	genDone = true
	anyGen := false
	// receivers first: a frame counted as received was sent before
	ordered := make([]workUnit, 0, len(units))
	for _, u := range units {
		if u.Kind == bench.KindRx {
			ordered = append(ordered, u)
		}
	}
	for _, u := range units {
		if u.Kind != bench.KindRx {
			ordered = append(ordered, u)
		}
	}
	for _, u := range ordered {
		s := u.u.Snapshot(false)
		if u.Kind == bench.KindGen {
			anyGen = true
			genDone = genDone && s.Done
		}
		if u.TxPort >= 0 && u.Kind != bench.KindRx {
			t.tx[u.TxPort] += s.TxPkts
		}
		if u.RxPort >= 0 {
			t.rx[u.RxPort] += s.RxPkts
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

// monitor watches one run.
type monitor struct {
	c     *bench.Config
	units []workUnit
	ports []openPort
	res   *bench.Result
	prog  bench.Progress
	start time.Time
	poll  time.Duration
	// rx only: rates over first..last frame seen, not over idle waiting
	firstRx, lastRx time.Duration
	prevRx          uint64
	linkLost        map[string]bool
}

func newMonitor(c *bench.Config, units []workUnit, ports []openPort, res *bench.Result, prog bench.Progress, start time.Time) *monitor {
	// poll fast only when a count must be noticed promptly: every wakeup of
	// this thread preempts whatever runs on the main lcore's CPU (on a 2-core
	// box, a peer process's lcore)
	return &monitor{c: c, units: units, ports: ports, res: res, prog: prog, start: start, poll: pollInterval(c)}
}

// pollInterval is how often the monitor reads the counters: fast only when
// a --count must be noticed promptly.
func pollInterval(c *bench.Config) time.Duration {
	if c.Count > 0 {
		return 10 * time.Millisecond
	}
	return 50 * time.Millisecond
}

// run polls counters, prints live rates and decides when to stop. It
// returns the measured interval (generators halted at its end).
func (m *monitor) run(ctx context.Context) time.Duration {
	c := m.c
	tick := time.NewTicker(m.poll)
	defer tick.Stop()
	lastT, _ := snapshot(m.units, len(m.ports))
	lastAt := m.start
	for {
		select {
		case <-ctx.Done():
			m.res.Interrupted = true
			end := time.Since(m.start)
			m.haltAndDrain(200 * time.Millisecond)
			return m.rxSpan(end)
		case now := <-tick.C:
			t, genDone := snapshot(m.units, len(m.ports))
			if now.Sub(lastAt) >= c.Interval {
				m.printSample(t, lastT, now.Sub(lastAt).Seconds(), now.Sub(m.start).Seconds())
				lastT, lastAt = t, now
			}
			el := time.Since(m.start)
			m.seeRx(sum(t.rx), el)
			m.watchLinks(el)
			switch {
			case c.Duration > 0 && el >= c.Duration:
				m.haltAndDrain(time.Second)
				return m.rxSpan(el)
			case genDone:
				m.drain(time.Second)
				return el
			case (c.Role == bench.RoleRx || c.Role == bench.RoleFwd) && c.Count > 0 && sum(t.rx) >= c.Count:
				return m.rxSpan(el)
			}
		}
	}
}

// seeRx notes when frames arrive, and ends the latency warm-up.
func (m *monitor) seeRx(rx uint64, el time.Duration) {
	if rx != m.prevRx {
		if m.prevRx == 0 {
			m.firstRx = el - m.poll // first frames arrived within the last tick
		}
		m.prevRx, m.lastRx = rx, el
	}
	warm := m.c.LatWarmupOrDefault()
	if m.res.LatWarmupS == 0 && m.prevRx > 0 && el-m.firstRx >= warm {
		// latency from here on: the first frames wait for links,
		// caches and page faults, and would make the max meaningless
		for _, u := range m.units {
			if u.Kind == bench.KindRx {
				u.u.LatReset()
			}
		}
		m.res.LatWarmupS = warm.Seconds()
	}
}

func (m *monitor) rxSpan(el time.Duration) time.Duration {
	if m.c.Role == bench.RoleRx && m.lastRx > m.firstRx {
		return m.lastRx - m.firstRx
	}
	return el
}

// haltAndDrain stops the generators and waits for their frames in flight
// (drain, at most max). A forwarder or a receiver has no generator here
// and its source may keep sending: a drain would only count more frames
// over the same interval, so it stops counting at once (measure times a
// forwarder until its lcores stop; a receiver is timed from its first
// frame to its last, rxSpan).
func (m *monitor) haltAndDrain(max time.Duration) {
	if m.c.Role == bench.RoleFwd || m.c.Role == bench.RoleRx {
		return
	}
	m.halt()
	m.drain(max)
}

// halt stops the generators (their lcores keep running the receivers).
func (m *monitor) halt() {
	for _, u := range m.units {
		if u.Kind == bench.KindGen {
			u.u.Halt()
		}
	}
}

// drain waits for frames in flight: until loop received all it sent, or
// nothing arrived for Config.DrainQuiet (50 ms when 0), or max.
func (m *monitor) drain(max time.Duration) {
	deadline := time.Now().Add(max)
	quiet := 50 * time.Millisecond
	if m.c.DrainQuiet > 0 {
		quiet = m.c.DrainQuiet
	}
	prev := uint64(0)
	stable := time.Now()
	for time.Now().Before(deadline) {
		t, _ := snapshot(m.units, len(m.ports))
		rx := sum(t.rx)
		if m.c.Role == bench.RoleLoop && rx >= sum(t.tx) {
			return
		}
		if rx != prev {
			prev, stable = rx, time.Now()
		} else if time.Since(stable) > quiet {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (m *monitor) printSample(t, last totals, secs, at float64) {
	s := bench.Sample{T: at}
	var parts []string
	for i, p := range m.ports {
		tx := float64(t.tx[i]-last.tx[i]) / secs / 1e6
		rx := float64(t.rx[i]-last.rx[i]) / secs / 1e6
		s.TxMpps = append(s.TxMpps, tx)
		s.RxMpps = append(s.RxMpps, rx)
		parts = append(parts, fmt.Sprintf("%s tx %.3f rx %.3f Mpps", p.name, tx, rx))
	}
	m.res.Samples = append(m.res.Samples, s)
	if m.prog.W == nil {
		return
	}
	line := fmt.Sprintf("[%5.1fs] %s", at, strings.Join(parts, " | "))
	if m.c.Role == bench.RoleLoop {
		line += fmt.Sprintf(" | in flight %d", int64(sum(t.tx))-int64(sum(t.rx)))
	}
	if m.prog.TTY {
		fmt.Fprintf(m.prog.W, "\r\033[K%s", line)
	} else {
		fmt.Fprintln(m.prog.W, line)
	}
}

// watchLinks notes a port toward another process (memif, virtio-user)
// whose link goes down while the run runs: its peer went away (e.g.
// ovs-vswitchd died), and the numbers after that moment mean nothing.
func (m *monitor) watchLinks(el time.Duration) {
	for _, p := range m.ports {
		if (p.drv != "net_memif" && p.drv != "net_virtio_user") || m.linkLost[p.name] || linkUp(p) {
			continue
		}
		if m.linkLost == nil {
			m.linkLost = map[string]bool{}
		}
		m.linkLost[p.name] = true
		m.res.LinkDrops = append(m.res.LinkDrops, fmt.Sprintf("port %s: link went down %.1f s into the run: its peer closed the connection or died (through OvS: is ovs-vswitchd still running? see its log)", p.name, el.Seconds()))
	}
}
