package bench

import "fmt"

// latencyLoad says at what load the latency was measured and whether the
// path was saturated then: at saturation the figures are mostly queueing
// (a full ring ahead of every frame), not the path's own delay.
func latencyLoad(c *Config, r *Result) {
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
		l.OfferedMpps = r.Ports[0].TxMpps
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
	}
}

// Above these the path is taken as saturated.
const (
	saturationLossPct = 0.1
	saturationLinePct = 99.0
)

// loadNote is the latency line's account of the load.
func (l *Latency) loadNote() string {
	s := fmt.Sprintf("at %.3f Mpps received", l.LoadMpps)
	if l.LoadLineRatePct > 0 {
		s += fmt.Sprintf(", %.1f %% of line", l.LoadLineRatePct)
	}
	if l.Saturated != "" {
		s += "; SATURATED: " + l.Saturated + "; measure latency with --rate below the path's capacity"
	}
	return s
}
