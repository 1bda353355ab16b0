package dataplane

import (
	"testing"
	"time"

	"rig/bench"
)

// checkHistogram: the histogram holds exactly the latency samples, its
// buckets add up, and the percentiles are in order within min and max.
func checkHistogram(t *testing.T, l *bench.Latency) {
	t.Helper()
	if l == nil || l.Histogram == nil {
		t.Fatalf("latency %+v: want a histogram", l)
	}
	h := l.Histogram
	var sum uint64
	prevHi := 0.0
	for _, b := range h.Buckets {
		if b.Count == 0 || b.LowUs < prevHi || b.HighUs <= b.LowUs {
			t.Fatalf("bucket %+v after one ending at %v: want non-empty, in order", b, prevHi)
		}
		sum, prevHi = sum+b.Count, b.HighUs
	}
	if h.Count != l.Samples || sum != h.Count {
		t.Errorf("histogram count %d, buckets sum %d, latency samples %d: want all equal", h.Count, sum, l.Samples)
	}
	ps := []float64{l.MinUs, l.P50Us, l.P90Us, l.P99Us, l.P999Us, l.MaxUs}
	for i := 1; i < len(ps); i++ {
		if ps[i] < ps[i-1] || ps[0] <= 0 {
			t.Fatalf("min p50 p90 p99 p99.9 max = %v: want positive and ordered", ps)
		}
	}
}

// A loop on net_ring: every stamped frame the receiver counted is one
// histogram sample (the run ends before the warm-up would start).
func TestPrivilegedLatencyHistogramCountsEveryStampedFrame(t *testing.T) {
	needDataplane(t)
	const n = 200000
	r := runHelper(t, bench.Config{Role: bench.RoleLoop, VDevs: []string{"net_ring0"}, Count: n, Rate: "2Mpps", RxD: 512, TxD: 512}).Result
	checkNoLoss(t, r, n)
	l := r.Latency
	checkHistogram(t, l)
	if stamped := r.Received - r.Unstamped; l.Samples != stamped || l.WarmupExcludedS != 0 {
		t.Errorf("%d latency samples of %d stamped frames, warm-up %v s excluded: want all of them, none excluded", l.Samples, stamped, l.WarmupExcludedS)
	}
}

// With a warm-up (--latency-warmup), the histogram holds the samples after
// it only: fewer than the stamped frames, about the share of the run
// after the warm-up.
func TestPrivilegedLatencyHistogramExcludesWarmup(t *testing.T) {
	needDataplane(t)
	r := runHelper(t, bench.Config{Role: bench.RoleLoop, VDevs: []string{"net_ring0"}, Duration: 2 * time.Second, Rate: "500kpps",
		LatWarmup: time.Second, RxD: 512, TxD: 512}).Result
	l := r.Latency
	checkHistogram(t, l)
	stamped := r.Received - r.Unstamped
	// 1 s of a 2 s run excluded, give or take the monitor's polls
	if l.WarmupExcludedS != 1 || l.Samples >= stamped || float64(l.Samples) < 0.3*float64(stamped) || float64(l.Samples) > 0.7*float64(stamped) {
		t.Errorf("%d samples of %d stamped frames with warm-up %v s: want about half", l.Samples, stamped, l.WarmupExcludedS)
	}
}
