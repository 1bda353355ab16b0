package bench

import "fmt"

// DropXstats are the PMD xstats that mean a frame was dropped
// (hardware-formats.md §21.2, §21.6: mlx5's names in DPDK 22.11); a run
// reports the ones its ports have that are not 0, with the ethdev
// counters imissed, ierrors, oerrors and rx_nombuf, in
// PortStats.DropCounters.
var DropXstats = dropXstats()

func dropXstats() []string {
	n := []string{"rx_out_of_buffer", "rx_phy_discard_packets", "tx_phy_discard_packets", "rx_phy_crc_errors", "rx_phy_symbol_errors",
		"rx_phy_in_range_len_errors", "tx_phy_errors"}
	for p := 0; p < 8; p++ {
		n = append(n, fmt.Sprintf("rx_prio%d_buf_discard_packets", p), fmt.Sprintf("rx_prio%d_cong_discard_packets", p))
	}
	return n
}
