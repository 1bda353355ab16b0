package bench

import (
	"math"
	"math/bits"
)

// The latency histogram is recorded in C, per rx unit, in TSC cycles
// (internal/dpdk/shim.h RIG_HIST_*, shim_internal.h hist_idx): HdrHistogram's
// log-linear layout with 2 significant digits. Values below histSub have a
// bucket each; above, every power of two is split into histSub buckets of
// equal width (at most 1/128 of the values in it); 2^histMaxBits cycles
// and more share the last bucket. This file mirrors the C bucket function
// (a cgo test checks both agree) and reads percentiles from the counts.
const (
	histSubBits = 7
	histSub     = 1 << histSubBits
	histMaxBits = 40
	histN       = (histMaxBits - histSubBits + 1) * histSub
)

// histIndex is the bucket of v cycles (C: hist_idx).
func histIndex(v uint64) int {
	if v < histSub {
		return int(v)
	}
	if v>>histMaxBits != 0 {
		return histN - 1
	}
	msb := bits.Len64(v) - 1
	sub := int(v>>uint(msb-histSubBits)) & (histSub - 1)
	return (msb-histSubBits+1)*histSub + sub
}

// histBounds is the range [lo, hi) of the values in bucket i (the last
// bucket also holds everything from 2^histMaxBits up).
func histBounds(i int) (lo, hi uint64) {
	if i < histSub {
		return uint64(i), uint64(i) + 1
	}
	o, s := i/histSub, uint64(i%histSub)
	w := uint64(1) << uint(o-1)
	lo = (histSub + s) * w
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
			_, hi := histBounds(i)
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
		lo, hi := histBounds(i)
		h.Buckets = append(h.Buckets, HistBucket{LowUs: float64(lo) / hz * 1e6, HighUs: float64(hi) / hz * 1e6, Count: c})
		h.Count += c
	}
	return h
}

// latencyAcc sums the rx units' latency counters.
type latencyAcc struct {
	hist           []uint64
	n, sum         uint64
	minCyc, maxCyc uint64
}

// result is the latency summary in microseconds; nil without samples.
func (l latencyAcc) result(hz, warmupS float64) *Latency {
	if l.n == 0 || hz <= 0 {
		return nil
	}
	us := func(cyc float64) float64 { return cyc / hz * 1e6 }
	at := func(q float64) float64 { return us(float64(histRank(l.hist, q, l.minCyc, l.maxCyc))) }
	return &Latency{
		Samples:         l.n,
		MinUs:           us(float64(l.minCyc)),
		AvgUs:           us(float64(l.sum) / float64(l.n)),
		P50Us:           at(0.50),
		P90Us:           at(0.90),
		P99Us:           at(0.99),
		P999Us:          at(0.999),
		MaxUs:           us(float64(l.maxCyc)),
		Histogram:       newLatencyHistogram(l.hist, hz),
		WarmupExcludedS: warmupS,
	}
}
