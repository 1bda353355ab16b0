package bench

import (
	"context"
	"errors"
	"io"
	"sync"
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

// HoldRelease is a run's early end of Hold (Config.Release): Measured
// closes when the run's figures are in, before it holds its links; the
// caller closes Release (Done) when it read what the links were held for
// (a peer's counters), and the run's ports close then.
type HoldRelease struct {
	Measured chan struct{}
	Release  chan struct{}
	measured sync.Once
	done     sync.Once
}

// NewHoldRelease is a HoldRelease with neither signal given yet.
func NewHoldRelease() *HoldRelease {
	return &HoldRelease{Measured: make(chan struct{}), Release: make(chan struct{})}
}

// SetMeasured closes Measured (once).
func (h *HoldRelease) SetMeasured() { h.measured.Do(func() { close(h.Measured) }) }

// Done closes Release (once): the hold may end.
func (h *HoldRelease) Done() { h.done.Do(func() { close(h.Release) }) }

// ErrNoDataplane is what dataplane.Run returns in a rig built without cgo: the
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

// LatWarmupOrDefault is the latency warm-up of this run: --latency-warmup, or the default.
func (c *Config) LatWarmupOrDefault() time.Duration {
	if c.LatWarmup > 0 {
		return c.LatWarmup
	}
	return LatencyWarmup(c.Duration)
}

// RunFunc runs one configuration (child.Child.Run; fakes in tests).
type RunFunc func(ctx context.Context, c Config) (*Result, error)
