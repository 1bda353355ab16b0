package bench

import (
	"strings"
	"testing"
	"time"
)

// Numbers that cannot be right are not results: each rule, and the runs
// that must stay results.
func TestJudgeInvalidMeasurements(t *testing.T) {
	loop := &Config{Role: RoleLoop, Rate: "1Mpps"}
	for _, tc := range []struct {
		name  string
		cfg   *Config
		res   Result
		asked float64
		want  []string // substrings, one per reason; nil = valid
	}{
		{"clean loop", &Config{Role: RoleLoop}, Result{Sent: 1000, Received: 990, DurationS: 1}, 0, nil},
		{"net_null: rx > tx", &Config{Role: RoleLoop}, Result{Sent: 1000, Received: 1352, DurationS: 1}, 0, []string{"received 1352 frames but sent 1000"}},
		{"unstamped frames", &Config{Role: RoleLoop}, Result{Sent: 1000, Received: 1000, Unstamped: 3, DurationS: 1}, 0, []string{"3 received frames carry no rig stamp"}},
		{"pcap replay has no stamps", &Config{Role: RoleLoop, Pcap: "x.pcap"}, Result{Sent: 1000, Received: 1000, Unstamped: 1000, DurationS: 1}, 0, nil},
		{"stale buffers: reordered", &Config{Role: RoleLoop}, Result{Sent: 50000, Received: 50000, Reordered: 48000, DurationS: 1}, 0, []string{"48000 of 50000 received frames are older than expected"}},
		{"a few reordered frames are a result", &Config{Role: RoleLoop}, Result{Sent: 50000, Received: 50000, Reordered: 100, DurationS: 1}, 0, nil},
		{"rx alone: unstamped is fine", &Config{Role: RoleRx}, Result{Received: 500, Unstamped: 500, DurationS: 1}, 0, nil},
		{"rate reached", loop, Result{Sent: 950000, Received: 950000, DurationS: 1}, 1e6, nil},
		{"rate not reached", loop, Result{Sent: 800000, Received: 800000, DurationS: 1}, 1e6, []string{"asked --rate 1Mpps (1.000 Mpps) but sent 0.800 Mpps"}},
		{"gen rate not reached", &Config{Role: RoleGen, Rate: "10Mpps"}, Result{Sent: 5e6, DurationS: 1}, 10e6, []string{"more than 10% below it"}},
		{"link lost", &Config{Role: RoleLoop}, Result{Sent: 10, Received: 5, DurationS: 1, LinkDrops: []string{"port net_memif1: link went down"}}, 0, []string{"port net_memif1: link went down"}},
		{"the monitor's poll is not the generator's", &Config{Role: RoleGen, Rate: "200kpps"}, Result{Sent: 20000, DurationS: 0.121}, 200e3, nil},
		{"net_null --size 1518 --link-speed 10G: 4387 % of line", &Config{Role: RoleGen}, Result{Sent: 35e6, DurationS: 1, LinkSpeedGbps: 10,
			Ports: []PortStats{{Name: "net_null0", TxGbpsL1: 438.7, TxLineRatePct: 4387}}}, 0, []string{"port net_null0 sent 4387.0 % of its 10 Gbps line rate (438.70 Gbps on the wire): more than a link can carry"}},
		{"line rate within the clocks' slack", &Config{Role: RoleGen}, Result{Sent: 14.8e6, DurationS: 1, LinkSpeedGbps: 10,
			Ports: []PortStats{{Name: "0000:03:00.0", TxGbpsL1: 10.05, TxLineRatePct: 100.5, RxLineRatePct: 99}}}, 0, nil},
		{"rx above line rate", &Config{Role: RoleRx}, Result{Received: 20e6, DurationS: 1, LinkSpeedGbps: 10,
			Ports: []PortStats{{Name: "0000:03:00.1", RxGbpsL1: 13.4, RxLineRatePct: 134}}}, 0, []string{"port 0000:03:00.1 received 134.0 %"}},
		{"io fwd (bytes not measured) above a 10G link's 64 B frame rate", &Config{Role: RoleFwd}, Result{DurationS: 1, LinkSpeedGbps: 10,
			Ports: []PortStats{{Name: "net_ring0", RxMpps: 637.4, TxMpps: 637.4, BytesNotMeasured: true}}}, 0,
			[]string{"port net_ring0 carried 637.400 Mpps, more than a 10 Gbps link carries even of 64 B frames (14.881 Mpps)"}},
		{"io fwd at a 10G link's 64 B frame rate", &Config{Role: RoleFwd}, Result{DurationS: 1, LinkSpeedGbps: 10,
			Ports: []PortStats{{Name: "0000:03:00.0", RxMpps: 14.88, TxMpps: 14.9, BytesNotMeasured: true}}}, 0, nil},
		{"two reasons", &Config{Role: RoleLoop}, Result{Sent: 10, Received: 20, Unstamped: 10, DurationS: 1}, 0, []string{"received 20 frames but sent 10", "10 received frames carry no rig stamp"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slack := time.Duration(0)
			if strings.Contains(tc.name, "poll") {
				slack = 20 * time.Millisecond
			}
			got := Judge(tc.cfg, &tc.res, tc.asked, slack)
			if len(got) != len(tc.want) {
				t.Fatalf("judge: %q, want %d reason(s) %q", got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("reason %d: %q, want it to say %q", i, got[i], w)
				}
			}
		})
	}
}

// The summary says a run is invalid in words, and shows no % of line
// without a link speed.
func TestSummaryInvalidAndNoLinePct(t *testing.T) {
	var b strings.Builder
	r := &Result{Role: RoleLoop, FrameSize: 64, Ports: []PortStats{{Name: "net_null0", Driver: "net_null", TxPkts: 10, TxLineRatePct: 105.1}},
		Invalid: []string{"received 1352 frames but sent 1000: x"}}
	r.PrintSummary(&b)
	out := b.String()
	if !strings.Contains(out, "INVALID MEASUREMENT: received 1352 frames but sent 1000") || strings.Contains(out, "105.1") {
		t.Errorf("summary:\n%s", out)
	}
}

// An io forwarder's summary shows its packets and says its bytes were not
// measured: no Gbps, no % of line, no frame size (not 0 Gbps or "4 B").
func TestSummaryIOFwdBytesNotMeasured(t *testing.T) {
	var b strings.Builder
	r := &Result{Role: RoleFwd, FwdMode: "io", FrameSizeSource: FrameSizeNotMeasured, DurationS: 2, Cores: 1, Memory: "2048kB pages", LinkSpeedGbps: 100, LinkSpeedSource: "mlx5_pci",
		Ports: []PortStats{{Name: "p0", Driver: "mlx5_pci", RxPkts: 2e7, RxMpps: 10, BytesNotMeasured: true},
			{Name: "p1", Port: 1, Driver: "mlx5_pci", TxPkts: 2e7, TxMpps: 10, BytesNotMeasured: true}},
		Warnings: []string{IONoBytes}}
	r.PrintSummary(&b)
	out := b.String()
	for _, want := range []string{"frame size not measured (io mode), 1 core(s), memory 2048kB pages", ", fwd io",
		"p0  mlx5_pci         0    0.000        -  20000000   10.000        -           -       -      0",
		"--fwd-mode mac counts bytes"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}
