package bench

import (
	"math"
	"math/bits"
)

// The latency histogram is recorded in C, per rx unit, in TSC cycles
// (internal/dpdk/shim.h RIG_HIST_*, shim_internal.h hist_idx): HdrHistogram's
// log-linear layout with 2 significant digits. Values below HistSub have a
// bucket each; above, every power of two is split into HistSub buckets of
// equal width (at most 1/128 of the values in it); 2^HistMaxBits cycles
// and more share the last bucket. This file mirrors the C bucket function
// (a cgo test checks both agree) and reads percentiles from the counts.
const (
	HistSubBits = 7
	HistSub     = 1 << HistSubBits
	HistMaxBits = 40
	HistN       = (HistMaxBits - HistSubBits + 1) * HistSub
)

// HistIndex is the bucket of v cycles (C: hist_idx).
func HistIndex(v uint64) int {
	if v < HistSub {
		return int(v)
	}
	if v>>HistMaxBits != 0 {
		return HistN - 1
	}
	msb := bits.Len64(v) - 1
	sub := int(v>>uint(msb-HistSubBits)) & (HistSub - 1)
	return (msb-HistSubBits+1)*HistSub + sub
}

// HistBounds is the range [lo, hi) of the values in bucket i (the last
// bucket also holds everything from 2^HistMaxBits up).
func HistBounds(i int) (lo, hi uint64) {
	if i < HistSub {
		return uint64(i), uint64(i) + 1
	}
	o, s := i/HistSub, uint64(i%HistSub)
	w := uint64(1) << uint(o-1)
	lo = (HistSub + s) * w
	return lo, lo + w
}

// histRank is the value at quantile q (0 < q <= 1) of the counts: the
// highest value of the bucket holding the ceil(q*n)-th smallest sample (as
// HdrHistogram's getValueAtPercentile), kept within the exact min and max.
func histRank(hist []uint64, q float64, minV, maxV uint64) uint64 {
	var total uint64
	for _, c := range hist {
		total += c
	}
	if total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(total)))
	rank = min(max(rank, 1), total)
	var cum uint64
	for i, c := range hist {
		if cum += c; cum >= rank {
			if i == len(hist)-1 {
				return maxV // the overflow bucket has no upper bound but the max
			}
			_, hi := HistBounds(i)
			return min(max(hi-1, minV), maxV)
		}
	}
	return maxV
}

// LatencyHistogram is the latency distribution: the non-empty buckets of
// the merged histogram, in microseconds. Bucket widths are at most 1/128
// of their values (2 significant digits).
type LatencyHistogram struct {
	SignificantDigits int          `json:"significantDigits"`
	Count             uint64       `json:"count"` // samples, the sum of the buckets' counts
	Buckets           []HistBucket `json:"buckets"`
}

// HistBucket holds the samples from LowUs (included) to HighUs (excluded).
type HistBucket struct {
	LowUs  float64 `json:"lowUs"`
	HighUs float64 `json:"highUs"`
	Count  uint64  `json:"count"`
}

// newLatencyHistogram lists the non-empty buckets of hist (cycles at hz).
func newLatencyHistogram(hist []uint64, hz float64) *LatencyHistogram {
	h := &LatencyHistogram{SignificantDigits: 2, Buckets: []HistBucket{}}
	for i, c := range hist {
		if c == 0 {
			continue
		}
		lo, hi := HistBounds(i)
		h.Buckets = append(h.Buckets, HistBucket{LowUs: float64(lo) / hz * 1e6, HighUs: float64(hi) / hz * 1e6, Count: c})
		h.Count += c
	}
	return h
}

// LatencyAcc sums the rx units' latency counters.
type LatencyAcc struct {
	Hist           []uint64
	N, Sum         uint64
	MinCyc, MaxCyc uint64
}

// Result is the latency summary in microseconds; nil without samples.
func (l LatencyAcc) Result(hz, warmupS float64) *Latency {
	if l.N == 0 || hz <= 0 {
		return nil
	}
	us := func(cyc float64) float64 { return cyc / hz * 1e6 }
	at := func(q float64) float64 { return us(float64(histRank(l.Hist, q, l.MinCyc, l.MaxCyc))) }
	return &Latency{
		Samples:         l.N,
		MinUs:           us(float64(l.MinCyc)),
		AvgUs:           us(float64(l.Sum) / float64(l.N)),
		P50Us:           at(0.50),
		P90Us:           at(0.90),
		P99Us:           at(0.99),
		P999Us:          at(0.999),
		MaxUs:           us(float64(l.MaxCyc)),
		Histogram:       newLatencyHistogram(l.Hist, hz),
		WarmupExcludedS: warmupS,
	}
}
