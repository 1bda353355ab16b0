package dataplane

import "testing"

// Virtual drivers report made-up speeds: no line rate from them; a real
// PMD's speed stays.
func TestRealSpeedMbps(t *testing.T) {
	for _, tc := range []struct {
		drv  string
		rep  uint32
		want uint32
	}{
		{"net_null", 10000, 0}, {"net_ring", 10000, 0}, {"net_memif", 100000, 0}, {"net_virtio_user", 10000, 0},
		{"net_tap", 10000, 0}, {"mlx5_pci", 100000, 100000}, {"net_ice", 25000, 25000},
	} {
		if got := realSpeedMbps(tc.drv, tc.rep, nil); got != tc.want {
			t.Errorf("%s reporting %d: %d, want %d", tc.drv, tc.rep, got, tc.want)
		}
	}
	// af_packet: the netdev's own speed, when the kernel gives one (lo: none)
	if got := realSpeedMbps("net_af_packet", 10000, map[string]string{"iface": "lo"}); got != 0 {
		t.Errorf("af_packet on lo: %d, want 0 (lo has no speed)", got)
	}
}
