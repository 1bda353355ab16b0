package bench

import (
	"strings"
	"testing"
)

// Latency says the load it was measured at, and says so when that load
// saturated the path (its figures are then queueing, not the path).
func TestLatencyLoadAndSaturation(t *testing.T) {
	ports := func(tx, rx, rxPct float64) []PortStats {
		return []PortStats{{Name: "p0", TxMpps: tx}, {Name: "p1", RxMpps: rx, RxLineRatePct: rxPct}}
	}
	for _, tc := range []struct {
		name    string
		c       Config
		r       Result
		sat     string // substring; "" = not saturated
		offered float64
	}{
		{"loop below capacity", Config{Role: RoleLoop, Rate: "1Mpps"}, Result{Sent: 1e6, Received: 1e6, Ports: ports(1, 1, 0)}, "", 1},
		{"loop unlimited", Config{Role: RoleLoop}, Result{Sent: 1e6, Received: 1e6, Ports: ports(8, 8, 0)}, "ran unlimited", 8},
		{"loop lost frames", Config{Role: RoleLoop, Rate: "5Mpps"}, Result{Sent: 1e6, Received: 990000, Lost: 10000, Ports: ports(5, 4.95, 0)}, "1.00 % of frames lost", 5},
		{"loop at line rate", Config{Role: RoleLoop, Rate: "100%"}, Result{Sent: 1e6, Received: 1e6, LinkSpeedGbps: 10, Ports: ports(14.88, 14.88, 99.9)}, "99.9 % of line rate", 14.88},
		{"rx with gaps", Config{Role: RoleRx}, Result{Received: 9000, SeqGaps: 1000, Ports: []PortStats{{Name: "p0", RxMpps: 2}}}, "10.00 % of frames lost", 0},
		{"rx clean", Config{Role: RoleRx}, Result{Received: 9000, Ports: []PortStats{{Name: "p0", RxMpps: 2}}}, "", 0},
		{"at half the capacity", Config{Role: RoleLoop, Rate: "4000000pps", LatencyLoad: "50%", CapacityMpps: 8}, Result{Sent: 8e6, SendS: 2, Received: 8e6, Ports: ports(3.9, 3.9, 0)}, "", 4},
		{"at the capacity", Config{Role: RoleLoop, Rate: "8000000pps", LatencyLoad: "100%", CapacityMpps: 8}, Result{Sent: 1e6, Received: 1e6, Ports: ports(7.95, 7.95, 0)}, "99 % of the path's measured capacity (8.000 Mpps)", 7.95},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.r.Latency = &Latency{Samples: 10, P99Us: 5}
			LatencyLoad(&tc.c, &tc.r)
			l := tc.r.Latency
			if (tc.sat == "") != (l.Saturated == "") || !strings.Contains(l.Saturated, tc.sat) {
				t.Errorf("saturated %q, want %q", l.Saturated, tc.sat)
			}
			if l.CapacityMpps != tc.c.CapacityMpps || l.LoadOfCapacity != tc.c.LatencyLoad {
				t.Errorf("capacity %v at %q, want %v at %q", l.CapacityMpps, l.LoadOfCapacity, tc.c.CapacityMpps, tc.c.LatencyLoad)
			}
			last := tc.r.Ports[len(tc.r.Ports)-1]
			if l.LoadMpps != last.RxMpps || l.OfferedMpps != tc.offered {
				t.Errorf("load %v offered %v, want %v and %v", l.LoadMpps, l.OfferedMpps, last.RxMpps, tc.offered)
			}
			var b strings.Builder
			tc.r.PrintSummary(&b)
			capNote := tc.c.CapacityMpps == 0 || strings.Contains(b.String(), "= "+tc.c.LatencyLoad+" of the path's capacity")
			if !strings.Contains(b.String(), "Mpps received") || strings.Contains(b.String(), "SATURATED") != (tc.sat != "") || !capNote {
				t.Errorf("summary:\n%s", b.String())
			}
		})
	}
	r := Result{Ports: ports(1, 1, 0)} // no latency: nothing to say
	LatencyLoad(&Config{Role: RoleLoop}, &r)
	if r.Latency != nil {
		t.Errorf("latency made up: %+v", r.Latency)
	}
}
