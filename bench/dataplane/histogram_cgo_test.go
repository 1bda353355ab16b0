//go:build cgo

package dataplane

import (
	"math"
	"math/rand"
	"testing"

	"rig/bench"
	"rig/bench/internal/dpdk"
)

// The Go mirror of the histogram is the C loop's: the same layout and the
// same bucket for every value (each bucket's edges, random values, the
// overflow).
func TestHistIndexMatchesShim(t *testing.T) {
	if bench.HistSubBits != dpdk.HistSubBits || bench.HistSub != dpdk.HistSub || bench.HistMaxBits != dpdk.HistMaxBits || bench.HistN != dpdk.HistN {
		t.Fatalf("Go histogram %d/%d/%d/%d, shim.h %d/%d/%d/%d (sub bits, sub, max bits, n)",
			bench.HistSubBits, bench.HistSub, bench.HistMaxBits, bench.HistN, dpdk.HistSubBits, dpdk.HistSub, dpdk.HistMaxBits, dpdk.HistN)
	}
	vals := []uint64{0, 1, bench.HistSub - 1, bench.HistSub, 1<<bench.HistMaxBits - 1, 1 << bench.HistMaxBits, math.MaxUint64}
	for i := 0; i < bench.HistN; i++ {
		lo, hi := bench.HistBounds(i)
		vals = append(vals, lo, hi-1)
	}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 100000; i++ {
		vals = append(vals, rng.Uint64()>>uint(rng.Intn(64)))
	}
	for _, v := range vals {
		if g, c := bench.HistIndex(v), dpdk.HistIndex(v); g != c {
			t.Fatalf("value %d: Go bucket %d, C bucket %d", v, g, c)
		}
	}
}
