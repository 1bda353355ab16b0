//go:build cgo

package bench

import (
	"testing"

	"rig/bench/internal/dpdk"
)

// The plan's burst limit is the C loops'.
func TestPlanMaxBurstMatchesShim(t *testing.T) {
	if DPDKMaxBurst != dpdk.MaxBurst {
		t.Errorf("dpdkMaxBurst %d, shim.h RIG_MAX_BURST %d", DPDKMaxBurst, dpdk.MaxBurst)
	}
}
