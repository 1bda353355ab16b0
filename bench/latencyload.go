package bench

import "fmt"

// LatencyLoad says at what load the latency was measured and whether the
// path was saturated then: at saturation the figures are mostly queueing
// (a full ring ahead of every frame), not the path's own delay.
func LatencyLoad(c *Config, r *Result) {
	l := r.Latency
	if l == nil || len(r.Ports) == 0 {
		return
	}
	rx := r.Ports[len(r.Ports)-1] // loop: the receiving port is the last; rx: the only one
	l.LoadMpps = rx.RxMpps
	if r.LinkSpeedGbps > 0 {
		l.LoadLineRatePct = rx.RxLineRatePct
	}
	if c.Role == RoleLoop {
		// offered: the generator's rate while it sent (first to last
		// burst), the load the latency samples saw
		l.OfferedMpps = r.Ports[0].TxMpps
		if r.SendS > 0 {
			l.OfferedMpps = float64(r.Sent) / r.SendS / 1e6
		}
	}
	if c.CapacityMpps > 0 {
		l.CapacityMpps, l.LoadOfCapacity = c.CapacityMpps, c.LatencyLoad
	}
	lossPct := 0.0
	if c.Role == RoleLoop && r.Sent > 0 && r.Lost > 0 {
		lossPct = float64(r.Lost) / float64(r.Sent) * 100
	} else if c.Role == RoleRx && r.Received > 0 {
		lossPct = float64(r.SeqGaps) / float64(r.Received+r.SeqGaps) * 100
	}
	switch {
	case lossPct > saturationLossPct:
		l.Saturated = fmt.Sprintf("%.2f %% of frames lost: a queue on the path overflowed, so the path was full", lossPct)
	case c.Role == RoleLoop && c.Rate == "":
		l.Saturated = "the generator ran unlimited (no --rate): it fills the path, so every frame waits behind a full ring"
	case l.LoadLineRatePct >= saturationLinePct:
		l.Saturated = fmt.Sprintf("the load was %.1f %% of line rate", l.LoadLineRatePct)
	case l.CapacityMpps > 0 && l.OfferedMpps >= saturationCapacity*l.CapacityMpps:
		l.Saturated = fmt.Sprintf("the offered %.3f Mpps was %.0f %% of the path's measured capacity (%.3f Mpps)", l.OfferedMpps, l.OfferedMpps/l.CapacityMpps*100, l.CapacityMpps)
	}
}

// Above these the path is taken as saturated.
const (
	saturationLossPct  = 0.1
	saturationLinePct  = 99.0
	saturationCapacity = 0.99
)

// loadNote is the latency line's account of the load.
func (l *Latency) loadNote() string {
	s := fmt.Sprintf("at %.3f Mpps received", l.LoadMpps)
	if l.LoadLineRatePct > 0 {
		s += fmt.Sprintf(", %.1f %% of line", l.LoadLineRatePct)
	}
	if l.CapacityMpps > 0 {
		s += fmt.Sprintf(", offered %.3f Mpps = %s of the path's capacity (%.3f Mpps, measured without a rate limit first)", l.OfferedMpps, l.LoadOfCapacity, l.CapacityMpps)
	}
	if l.Saturated != "" {
		s += "; SATURATED: " + l.Saturated + "; measure latency with --rate below the path's capacity"
	}
	return s
}
