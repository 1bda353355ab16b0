//go:build cgo

package dpdk

import (
	"reflect"
	"testing"
)

// The C side's list of rx drop xstats, read back; a truncated last entry
// (the buffer ran out) is left out.
func TestParseXstatList(t *testing.T) {
	got := parseXstatList("rx_discards_phy=12;rx_prio0_discards=3;rx_tru")
	if want := map[string]uint64{"rx_discards_phy": 12, "rx_prio0_discards": 3}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
