package bench

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// capacityProbe is how long AtLatencyLoad drives the path without a rate
// limit to learn what it delivers.
const capacityProbe = 2 * time.Second

// checkLatency: --latency-warmup within the run, --latency-load a
// percentage on a loop whose generator stamps its frames and has no
// --rate of its own.
func (c *Config) checkLatency() error {
	if c.LatWarmup < 0 || (c.Duration > 0 && c.LatWarmup >= c.Duration) {
		return fmt.Errorf("bench: --latency-warmup %v: want 0 (the default: %v) up to less than --duration (%v), or no latency sample would count",
			c.LatWarmup, LatencyWarmup(c.Duration), c.Duration)
	}
	if c.CapacityMpps < 0 {
		return fmt.Errorf("bench: capacityMpps %v: want 0 or more", c.CapacityMpps)
	}
	if c.LatencyLoad == "" {
		return nil
	}
	if _, err := parseLoadFraction(c.LatencyLoad); err != nil {
		return err
	}
	switch {
	case c.Role != RoleLoop:
		return fmt.Errorf("bench %s: --latency-load needs the generator in this run (bench loop); give the remote generator a --rate instead", c.Role)
	case c.Rate != "" && c.CapacityMpps == 0:
		return fmt.Errorf("bench: --latency-load %s sets the generator's rate from the path's capacity: drop --rate %s", c.LatencyLoad, c.Rate)
	case c.Pcap != "":
		return fmt.Errorf("bench: --latency-load with --pcap: replayed frames carry no latency stamp")
	}
	return nil
}

// parseLoadFraction reads "50%" as 0.5 (more than 0, at most 100 %).
func parseLoadFraction(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "%"), 64)
	if err != nil || !strings.HasSuffix(strings.TrimSpace(s), "%") || !(v > 0) || v > 100 {
		return 0, fmt.Errorf("bench: --latency-load %q: want a percentage of the path's capacity above 0 and up to 100, e.g. 50%%", s)
	}
	return v / 100, nil
}

// Prober runs one dataplane to completion in a process of its own (EAL
// starts once per process): a child.Child.
type Prober interface {
	Run(ctx context.Context, cfg Config) (*Result, error)
}

// AtLatencyLoad prepares a --latency-load run: it drives the path for
// capacityProbe with no rate limit (in a process of its own) and returns
// c with CapacityMpps set to what the receiver got and Rate set to the
// asked fraction of it. c without LatencyLoad comes back unchanged.
func AtLatencyLoad(ctx context.Context, pr Prober, c Config) (Config, error) {
	if c.LatencyLoad == "" {
		return c, nil
	}
	frac, err := parseLoadFraction(c.LatencyLoad)
	if err != nil {
		return c, err
	}
	p := c
	p.LatencyLoad, p.Rate, p.Count, p.Duration, p.Capture, p.Hold, p.LatWarmup, p.FilePrefix = "", "", 0, capacityProbe, 0, 0, 0, ""
	r, err := pr.Run(ctx, p)
	if err != nil {
		return c, fmt.Errorf("bench: --latency-load: the capacity probe (%v without a rate limit) failed: %w", capacityProbe, err)
	}
	if len(r.Invalid) > 0 {
		return c, fmt.Errorf("bench: --latency-load: the capacity probe measured nothing valid: %s", strings.Join(r.Invalid, "; "))
	}
	if len(r.Ports) == 0 || r.Ports[len(r.Ports)-1].RxMpps <= 0 {
		return c, fmt.Errorf("bench: --latency-load: the capacity probe received nothing (%d sent): the path carries no frames", r.Sent)
	}
	c.CapacityMpps = r.Ports[len(r.Ports)-1].RxMpps
	c.Rate = fmt.Sprintf("%.0fpps", max(1, c.CapacityMpps*1e6*frac))
	return c, nil
}
