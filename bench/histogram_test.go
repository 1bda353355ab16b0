package bench

import (
	"math"
	"math/rand"
	"sort"
	"testing"
)

// Every value falls in the bucket whose bounds hold it; buckets tile the
// values without gaps or overlaps, and none is wider than 1/128 of its
// values (2 significant digits).
func TestHistBucketsTileTheValues(t *testing.T) {
	var prevHi uint64
	for i := 0; i < HistN-1; i++ {
		lo, hi := HistBounds(i)
		if lo != prevHi || hi <= lo {
			t.Fatalf("bucket %d: [%d, %d) after one ending at %d", i, lo, hi, prevHi)
		}
		if lo >= HistSub && float64(hi-lo) > float64(lo)/HistSub {
			t.Fatalf("bucket %d: [%d, %d) is wider than 1/%d of its values", i, lo, hi, HistSub)
		}
		for _, v := range []uint64{lo, hi - 1, lo + (hi-lo)/2} {
			if got := HistIndex(v); got != i {
				t.Fatalf("value %d: bucket %d, want %d [%d, %d)", v, got, i, lo, hi)
			}
		}
		prevHi = hi
	}
	lo, _ := HistBounds(HistN - 1)
	for _, v := range []uint64{lo, 1<<HistMaxBits - 1, 1 << HistMaxBits, math.MaxUint64} {
		if got := HistIndex(v); got != HistN-1 {
			t.Errorf("value %d: bucket %d, want the last (%d)", v, got, HistN-1)
		}
	}
}

// Percentiles from the buckets against a brute-force sort of the same
// random samples: never below the true value, at most one bucket width
// (1/128) above it, and p100 is the max.
func TestHistPercentilesAgainstSort(t *testing.T) {
	rng := rand.New(rand.NewSource(12))
	for trial := 0; trial < 50; trial++ {
		n := 1 + rng.Intn(20000)
		vals := make([]uint64, n)
		hist := make([]uint64, HistN)
		// log-uniform over 1 cycle .. 2^36 cycles, some in the overflow bucket
		for i := range vals {
			v := uint64(math.Exp2(rng.Float64() * 36))
			if rng.Intn(1000) == 0 {
				v = 1<<HistMaxBits + uint64(rng.Int63n(1<<42))
			}
			vals[i] = v
			hist[HistIndex(v)]++
		}
		sort.Slice(vals, func(i, j int) bool { return vals[i] < vals[j] })
		minV, maxV := vals[0], vals[n-1]
		for _, q := range []float64{0.0001, 0.25, 0.5, 0.9, 0.99, 0.999, 0.9999, 1} {
			want := vals[int(math.Ceil(q*float64(n)))-1]
			got := histRank(hist, q, minV, maxV)
			if lastLo, _ := HistBounds(HistN - 1); want >= lastLo {
				if got != maxV {
					t.Fatalf("trial %d, q %v: %d in the overflow bucket, want the max %d", trial, q, got, maxV)
				}
				continue
			}
			if got < want || float64(got-want) > float64(want)/HistSub {
				t.Fatalf("trial %d, n %d, q %v: %d, want %d (+ at most 1/%d)", trial, n, q, got, want, HistSub)
			}
		}
		if got := histRank(hist, 1, minV, maxV); got != maxV {
			t.Fatalf("p100 %d, want the max %d", got, maxV)
		}
	}
	if got := histRank(make([]uint64, HistN), 0.5, 0, 0); got != 0 {
		t.Errorf("empty histogram: p50 %d, want 0", got)
	}
}

// The JSON buckets are the non-empty ones, in microseconds, in order, and
// their counts add up to the samples.
func TestLatencyHistogramBuckets(t *testing.T) {
	hist := make([]uint64, HistN)
	hist[5] = 3                         // [5, 6) cycles
	hist[HistIndex(1000)] = 7           // [1000, 1008)
	hist[HistIndex(1e9)] = 1            // a second at 1 GHz
	h := newLatencyHistogram(hist, 1e9) // 1 GHz: 1 cycle = 1 ns
	if h.Count != 11 || len(h.Buckets) != 3 || h.SignificantDigits != 2 {
		t.Fatalf("histogram %+v: want 11 samples in 3 buckets", h)
	}
	if b := h.Buckets[0]; b.LowUs != 0.005 || b.HighUs != 0.006 || b.Count != 3 {
		t.Errorf("first bucket %+v, want [0.005, 0.006) us x3", b)
	}
	if b := h.Buckets[1]; b.LowUs != 1 || b.HighUs != 1.004 || b.Count != 7 {
		t.Errorf("second bucket %+v, want [1, 1.004) us x7", b)
	}
	if b := h.Buckets[2]; b.LowUs > 1e6 || b.HighUs <= 1e6 || (b.HighUs-b.LowUs)/b.LowUs > 1.0/HistSub {
		t.Errorf("third bucket %+v, want 1 s within 1/128", b)
	}
}
