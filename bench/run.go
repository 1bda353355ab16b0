package bench

import (
	"errors"
	"io"
	"time"
)

// Progress receives live per-interval lines. TTY: rewrite one line (\r).
type Progress struct {
	W   io.Writer
	TTY bool
	// Ready, when set, is called once the dataplane runs (ports up, lcores
	// polling): a two-host run's far side tells the near side to send.
	Ready func()
}

// ErrNoDataplane is what Run returns in a rig built without cgo: the
// provisioning-only build has no DPDK in it.
var ErrNoDataplane = errors.New("the DPDK dataplane was not built into this rig (built without cgo); rebuild with cgo and libdpdk-dev: make build")

// LatencyWarmup is how long after the first received frame latency
// samples start to count by default (--latency-warmup sets it): 0.5 s,
// or a quarter of a shorter --duration.
func LatencyWarmup(d time.Duration) time.Duration {
	const w = 500 * time.Millisecond
	if d > 0 && d < 4*w {
		return d / 4
	}
	return w
}

// latWarmup is the latency warm-up of this run: --latency-warmup, or the default.
func (c *Config) latWarmup() time.Duration {
	if c.LatWarmup > 0 {
		return c.LatWarmup
	}
	return LatencyWarmup(c.Duration)
}
