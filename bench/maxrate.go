package bench

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// `rig bench fwd --max-rate RATE` makes the forwarder a DUT of known
// capacity: a token bucket in its C loop forwards at most RATE frames per
// second from each receiving port and drops the rest on arrival (policed),
// as a device that takes every frame off the wire but cannot carry more
// would. It is the known answer of the zero-loss search (rig bench ndr).

// PolicerBurst is how much above the rate a forwarder capped by --max-rate
// passes for a moment: the bucket holds this long at the rate (at least
// one burst). Its lcore may be descheduled this long with frames waiting
// in its rx ring, or its source may catch up after a pause, without a
// frame lost below the cap: on a 2-CPU VM whose vCPUs stop for up to
// 0.7 s (a busy loop at nice -10 saw 14 gaps over 50 ms in 10 s), less
// lost frames under the cap in most trials of a search.
const PolicerBurst = 250 * time.Millisecond

// PolicerIdle: after this long without a frame the traffic had stopped,
// and the bucket restarts with PolicerRestart of credit. A full bucket
// saved up while nothing came would let a new run's first PolicerBurst
// through above the rate (12 % over a 2 s trial); an empty one would lose
// frames to the first jitter of a source just below the rate. The search
// pauses between trials (--trial-gap) longer than this, and may find the
// cap up to PolicerRestart/trial too high (0.5 % for 2 s trials). A stall
// of the forwarder (or of its source) longer than PolicerIdle looks like a
// new run: its backlog is policed.
const (
	PolicerIdle    = time.Second
	PolicerRestart = 10 * time.Millisecond
)

// ParseFrameRate parses a rate in frames per second: "500kpps", "1.5Mpps",
// "2000pps". Bit rates and % of line are refused: a forwarder's frames
// have whatever sizes arrive.
func ParseFrameRate(s string) (float64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	for _, u := range []struct {
		suf string
		m   float64
	}{{"mpps", 1e6}, {"kpps", 1e3}, {"pps", 1}} {
		if num, ok := strings.CutSuffix(t, u.suf); ok {
			v, err := strconv.ParseFloat(num, 64)
			if err != nil || !(v > 0) || math.IsInf(v, 0) {
				break
			}
			return v * u.m, nil
		}
	}
	return 0, fmt.Errorf("rate %q: want frames per second, e.g. 500kpps, 1Mpps or 2000pps", s)
}

// checkMaxRate: --max-rate is the forwarder's, in frames per second.
func (c *Config) checkMaxRate() error {
	if c.MaxRate == "" {
		return nil
	}
	if c.Role != RoleFwd {
		return fmt.Errorf("bench %s: --max-rate caps a forwarder: use it with rig bench fwd (a generator takes --rate)", c.Role)
	}
	if _, err := ParseFrameRate(c.MaxRate); err != nil {
		return fmt.Errorf("bench: --max-rate: %w", err)
	}
	return nil
}

// Policer is one fwd unit's share of --max-rate (each receiving port gets
// the rate, split evenly over its rx queues) and its bucket's depth and
// restart credit in frames; 0 pps: no cap.
func Policer(c *Config) (pps float64, depth, restart uint32) {
	if c.MaxRate == "" {
		return 0, 0, 0
	}
	rate, _ := ParseFrameRate(c.MaxRate) // validated
	pps = rate / float64(max(c.RxQ, 1))
	frames := func(d time.Duration) uint32 { return uint32(max(float64(c.Burst), math.Ceil(pps*d.Seconds()))) }
	return pps, frames(PolicerBurst), frames(PolicerRestart)
}

// printPoliced says how many frames a capped forwarder dropped.
// In a two-host run the capped forwarder is the far side's.
func (r *Result) printPoliced(w io.Writer) {
	rate, who := r.MaxRate, ""
	if rate == "" && r.Peer != nil {
		rate, who = r.Peer.MaxRate, "far side: "
	}
	if rate == "" {
		return
	}
	var n uint64
	for _, p := range r.Ports {
		n += p.Policed
	}
	fmt.Fprintf(w, "%s--max-rate %s: %d frame(s) over the cap dropped on arrival (policed)\n", who, rate, n)
}
