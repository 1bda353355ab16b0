package bench

import (
	"strings"
	"testing"
)

func TestParseFrameRate(t *testing.T) {
	for in, want := range map[string]float64{"500kpps": 500e3, "1.5Mpps": 1.5e6, "2000pps": 2000, " 1MPPS ": 1e6} {
		if got, err := ParseFrameRate(in); err != nil || got != want {
			t.Errorf("%q: %g, %v; want %g", in, got, err, want)
		}
	}
	for _, in := range []string{"", "1Gbps", "50%", "0pps", "-1kpps", "fast", "infMpps", "NaNpps"} {
		if _, err := ParseFrameRate(in); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

// --max-rate is a forwarder's, split over its rx queues; its bucket holds
// PolicerBurst and restarts with PolicerRestart, at least a burst each.
func TestPolicerShare(t *testing.T) {
	c := Config{Role: RoleFwd, MaxRate: "1Mpps", RxQ: 4, Burst: 32}
	pps, depth, restart := Policer(&c)
	if pps != 250e3 || depth != 62500 || restart != 2500 {
		t.Errorf("1 Mpps over 4 queues: %g pps, depth %d, restart %d; want 250000, 62500 (250 ms), 2500 (10 ms)", pps, depth, restart)
	}
	c = Config{Role: RoleFwd, MaxRate: "100pps", RxQ: 1, Burst: 64}
	if _, depth, restart := Policer(&c); depth != 64 || restart != 64 {
		t.Errorf("100 pps: depth %d, restart %d; want a burst (64) each", depth, restart)
	}
	if pps, _, _ := Policer(&Config{Role: RoleFwd}); pps != 0 {
		t.Errorf("no --max-rate: %g", pps)
	}
	for _, c := range []Config{{Role: RoleLoop, MaxRate: "1Mpps"}, {Role: RoleFwd, MaxRate: "10Gbps"}} {
		if err := c.checkMaxRate(); err == nil || !strings.Contains(err.Error(), "--max-rate") {
			t.Errorf("%+v: %v", c, err)
		}
	}
}
