//go:build cgo

package dataplane

import (
	"testing"

	"rig/bench"
	"rig/bench/internal/dpdk"
)

// The plan's burst limit is the C loops'.
func TestPlanMaxBurstMatchesShim(t *testing.T) {
	if bench.DPDKMaxBurst != dpdk.MaxBurst {
		t.Errorf("dpdkMaxBurst %d, shim.h RIG_MAX_BURST %d", bench.DPDKMaxBurst, dpdk.MaxBurst)
	}
}
