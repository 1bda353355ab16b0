package bench

import (
	"fmt"
	"io"
	"time"
)

// A measurement that cannot be right is not a result: Judge lists why, in
// Result.Invalid, and rig exits 5 instead of printing numbers as if they
// were true.

// RateTolerance is how far below the asked --rate the generators may stay
// before the run says the rate was not reached: 10%.
const RateTolerance = 0.10

// RateNotReached starts the reason of a run whose generators stayed more
// than RateTolerance below --rate (a search tells it from the others).
const RateNotReached = "asked --rate "

// reorderLimit: rig stamps one sequence per flow, so a path that forwards
// reorders few frames; more than 1% older than expected are duplicates or
// stale buffers (a port that returns old mbufs, e.g. net_null).
const reorderLimit = 0.01

// Judge lists why r cannot be right (nil: nothing found). askedPPS is the
// --rate in frames per second (0: as fast as possible); slack is how late
// the monitor may notice the end of a run (its poll), which the measured
// duration includes and the generators did not send in.
func Judge(c *Config, r *Result, askedPPS float64, slack time.Duration) []string {
	var bad []string
	if c.Role == RoleLoop {
		if r.Received > r.Sent {
			bad = append(bad, fmt.Sprintf("received %d frames but sent %d: the receiving port does not carry what was sent (a net_null port makes frames up, a looped or flooding switch duplicates them)", r.Received, r.Sent))
		}
		if r.Unstamped > 0 && c.Pcap == "" {
			bad = append(bad, fmt.Sprintf("%d received frames carry no rig stamp: they are not the generator's (another sender on the path, or a port that makes frames up)", r.Unstamped))
		}
	}
	if (c.Role == RoleLoop || c.Role == RoleRx) && r.Received > 0 && float64(r.Reordered) > reorderLimit*float64(r.Received) {
		bad = append(bad, fmt.Sprintf("%d of %d received frames are older than expected (over %.0f%%): duplicates or stale buffers, not a path that forwards (rig sends one sequence per flow)", r.Reordered, r.Received, reorderLimit*100))
	}
	if askedPPS > 0 && (c.Role == RoleGen || c.Role == RoleLoop) && r.DurationS > 0 && r.Sent > 0 {
		secs := max(r.DurationS-slack.Seconds(), r.DurationS/2)
		if r.SendS > 0 {
			secs = r.SendS // the generators' own span: no start-up or poll in it
		}
		got := float64(r.Sent) / secs
		if got < askedPPS*(1-RateTolerance) {
			bad = append(bad, fmt.Sprintf(RateNotReached+"%s (%.3f Mpps) but sent %.3f Mpps, more than %.0f%% below it: the generator could not keep up (more --cores or --txq), so this is not a run at the asked rate", c.Rate, askedPPS/1e6, got/1e6, RateTolerance*100))
		}
	}
	for _, p := range r.Ports {
		if p.BytesNotMeasured && r.LinkSpeedGbps > 0 {
			// no bytes, so no % of line: but no link carries more frames
			// than minimum-size ones
			line := LineRatePPS(r.LinkSpeedGbps*1e9, 64) / 1e6
			if m := max(p.TxMpps, p.RxMpps); m > line*(1+float64(lineRateSlackPct)/100) {
				bad = append(bad, fmt.Sprintf("port %s carried %.3f Mpps, more than a %g Gbps link carries even of 64 B frames (%.3f Mpps): the port does not put frames on a real wire at that speed (a virtual device), or the link speed is wrong (--link-speed)", p.Name, m, r.LinkSpeedGbps, line))
			}
			continue
		}
		for _, x := range []struct {
			dir  string
			pct  float64
			gbps float64
		}{{"sent", p.TxLineRatePct, p.TxGbpsL1}, {"received", p.RxLineRatePct, p.RxGbpsL1}} {
			if x.pct > 100+lineRateSlackPct {
				bad = append(bad, fmt.Sprintf("port %s %s %.1f %% of its %g Gbps line rate (%.2f Gbps on the wire): more than a link can carry; the port does not put frames on a real wire at that speed (a virtual device), or the link speed is wrong (--link-speed)", p.Name, x.dir, x.pct, r.LinkSpeedGbps, x.gbps))
			}
		}
	}
	return append(bad, r.LinkDrops...)
}

// lineRateSlackPct: the run's clock (the monitor's interval) and the
// port's differ by a little; beyond that, above 100 % of line rate is not
// a measurement.
const lineRateSlackPct = 1

// printInvalid writes the reasons a run is not a result.
func (r *Result) printInvalid(w io.Writer) {
	for _, why := range r.Invalid {
		fmt.Fprintf(w, "INVALID MEASUREMENT: %s\n", why)
	}
}
