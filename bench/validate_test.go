package bench

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestParseLcores(t *testing.T) {
	for _, tc := range []struct {
		in       string
		main     int
		wantMain int
		want     map[int][]int
	}{
		{"0-2", -1, 0, map[int][]int{0: {0}, 1: {1}, 2: {2}}},
		{"0@1,1@0", -1, 0, map[int][]int{0: {1}, 1: {0}}},
		{"0@0,1@1,2@0", -1, 0, map[int][]int{0: {0}, 1: {1}, 2: {0}}},
		{"(1-2)@(2-3),0", -1, 0, map[int][]int{0: {0}, 1: {2, 3}, 2: {2, 3}}},
		{"3,5", 5, 5, map[int][]int{3: {3}, 5: {5}}},
	} {
		m, err := ParseLcores(tc.in, tc.main)
		if err != nil {
			t.Errorf("ParseLcores(%q): %v", tc.in, err)
			continue
		}
		if m.Main != tc.wantMain || fmt.Sprint(m.CPUs) != fmt.Sprint(tc.want) {
			t.Errorf("ParseLcores(%q) = main %d %v, want main %d %v", tc.in, m.Main, m.CPUs, tc.wantMain, tc.want)
		}
	}
	for _, bad := range []string{"", "a", "2-1", "(0-1", "0@x", "0,0"} {
		if _, err := ParseLcores(bad, -1); err == nil {
			t.Errorf("ParseLcores(%q): no error", bad)
		}
	}
	if _, err := ParseLcores("0-1", 4); err == nil {
		t.Error("--main-lcore 4 outside 0-1: no error")
	}
}

// On a 2-CPU host, --cores 2 needs lcores 0-2: refused before EAL, naming
// the CPU count, not with EAL's usage text.
func TestCheckLcores(t *testing.T) {
	c := Config{Role: RoleLoop, Cores: 2, Lcores: "0-2"}
	m, _ := ParseLcores(c.Lcores, -1)
	err := c.checkLcores(m, false, []int{0, 1})
	if err == nil || !strings.Contains(err.Error(), "--cores 2 needs 3 CPUs (lcore 0 runs Go") || !strings.Contains(err.Error(), "this host has 2 online") {
		t.Errorf("--cores 2 on 2 CPUs: %v", err)
	}
	if err := c.checkLcores(m, false, []int{0, 1, 2}); err != nil {
		t.Errorf("--cores 2 on 3 CPUs: %v", err)
	}
	c.Lcores = "0@0,1@1,2@5"
	m, _ = ParseLcores(c.Lcores, -1)
	if err := c.checkLcores(m, true, []int{0, 1}); err == nil || !strings.Contains(err.Error(), "lcore 2 on CPU 5") {
		t.Errorf("--lcores onto offline CPU 5: %v", err)
	}
	c.Lcores = "0@0,1@1"
	m, _ = ParseLcores(c.Lcores, -1)
	if err := c.checkLcores(m, true, []int{0, 1}); err == nil || !strings.Contains(err.Error(), "1 worker lcore(s)") {
		t.Errorf("--cores 2 with one worker lcore: %v", err)
	}
}

func TestCheckEALArgs(t *testing.T) {
	for _, ok := range [][]string{nil, {"--no-telemetry"}, {"--iova-mode", "va"}, {"--iova-mode=va"}, {"-n", "4"}, {"-n4"}, {"--huge-unlink=always"}, {"--syslog"}} {
		if err := checkEALArgs(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range [][]string{{"--no-such-flag"}, {"-Z"}, {"--iova-mode"}, {"--no-huge=1"}, {"stray"}} {
		if err := checkEALArgs(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// Every bad flag value is refused by Defaults (a usage error in rig),
// before EAL starts.
func TestDefaultsRejectsBadValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"rate", func(c *Config) { c.Rate = "fast" }, "--rate"},
		{"rate pct", func(c *Config) { c.Rate = "150%" }, "--rate"},
		{"dst-ip", func(c *Config) { c.DstIP = "1.2.3" }, "--dst-ip"},
		{"src-ip", func(c *Config) { c.SrcIP = "10.0.0.9-10.0.0.1" }, "--src-ip"},
		{"sport", func(c *Config) { c.SPort = "70000" }, "--sport"},
		{"dport", func(c *Config) { c.DPort = "x" }, "--dport"},
		{"dst-mac", func(c *Config) { c.DstMAC = "02:00" }, "--dst-mac"},
		{"fwd-src-mac", func(c *Config) { c.FwdSrcMAC = "zz" }, "--fwd-src-mac"},
		{"size", func(c *Config) { c.FrameSize = 10 }, "--size"},
		{"duration", func(c *Config) { c.Duration = -time.Second }, "--duration"},
		{"cores", func(c *Config) { c.Cores = -1 }, "--cores"},
		{"rxq", func(c *Config) { c.RxQ = -2 }, "--rxq"},
		{"link-speed", func(c *Config) { c.LinkSpeed = "fast" }, "--link-speed"},
		{"eal", func(c *Config) { c.EAL = []string{"--no-such-flag"} }, "--no-such-flag"},
		{"lcores", func(c *Config) { c.Lcores = "0-x" }, "--lcores"},
	} {
		c := Config{Role: RoleLoop, VDevs: []string{"net_ring0"}}
		tc.mod(&c)
		c.Defaults()
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want an error naming %s", tc.name, err, tc.want)
		}
	}
	c := Config{Role: RoleLoop, VDevs: []string{"net_ring0"}, Rate: "50%"}
	c.Defaults()
	if err := c.Validate(); err != nil {
		t.Errorf("--rate 50%% (link speed known later): %v", err)
	}
}

// A memif pair links up only with as many rings each way: loop gives both
// ports as many rx as tx queues, one generator and one receiver per queue.
func TestLoopQueuesSymmetric(t *testing.T) {
	for _, q := range [][2]int{{2, 0}, {0, 2}, {3, 2}} {
		c := Config{Role: RoleLoop, RxQ: q[0], TxQ: q[1]}
		c.Defaults()
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		want := max(q[0], q[1])
		if c.RxQ != want || c.TxQ != want {
			t.Errorf("loop --rxq %d --txq %d: got rxq %d txq %d, want %d each", q[0], q[1], c.RxQ, c.TxQ, want)
		}
	}
}

func TestSummaryFrameSizeAndLatencyNotes(t *testing.T) {
	var b bytes.Buffer
	r := &Result{Role: RoleRx, FrameSize: 128, FrameSizeSource: "measured", Latency: &Latency{Samples: 10, P99Us: 3, MaxUs: 120000, WarmupExcludedS: 0.5}}
	r.PrintSummary(&b)
	s := b.String()
	for _, want := range []string{"128 B frames (measured average)", "first 0.50 s after the first frame excluded as warm-up", "max 120000.00 us is an outlier"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	b.Reset()
	r = &Result{Role: RoleRx, FrameSizeSource: "measured", Latency: &Latency{Samples: 10, P99Us: 3, MaxUs: 4}}
	r.PrintSummary(&b)
	if s := b.String(); !strings.Contains(s, "frame size unknown") || strings.Contains(s, "64 B") || !strings.Contains(s, "warm-up included") || strings.Contains(s, "outlier") {
		t.Errorf("summary:\n%s", s)
	}
	if LatencyWarmup(0) != 500*time.Millisecond || LatencyWarmup(time.Second) != 250*time.Millisecond || LatencyWarmup(3*time.Second) != 500*time.Millisecond {
		t.Error("LatencyWarmup: want 0.5 s, or a quarter of a shorter --duration")
	}
}

// A net_null size= larger than this run's mbufs is refused before EAL: with
// copy=1 the PMD copies size bytes into each mbuf with no bound of its own
// (a far net_null0,size=65535,copy=1 crashed the dataplane).
func TestNullSizeBoundedByMbuf(t *testing.T) {
	for _, c := range []struct {
		vdev  string
		size  int
		ok    bool
		wants string
	}{
		{"net_null0,size=65535,copy=1", 64, false, "size=65535: want 1..2048"},
		{"eth_null0,copy=1,size=2049", 64, false, "want 1..2048"},
		{"net_null0,size=0", 64, false, "want 1..2048"},
		{"net_null0,size=x", 64, false, "size=x"},
		{"net_null0,size=2048,copy=1", 64, true, ""},
		{"net_null0,size=9000,copy=1", 9000, true, ""},
		{"net_null0,size=9001,copy=1", 9000, false, "want 1..9000"},
		{"net_ring0", 64, true, ""},
	} {
		cfg := Config{Role: RoleRx, VDevs: []string{c.vdev}, NoHuge: true, FrameSize: c.size}
		cfg.Defaults()
		err := cfg.checkVdevSizes()
		if c.ok != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.wants)) {
			t.Errorf("%s with --size %d: %v", c.vdev, c.size, err)
		}
	}
	cfg := Config{Role: RoleRx, VDevs: []string{"net_null0,size=65535,copy=1"}, NoHuge: true}
	cfg.Defaults()
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "size=65535") {
		t.Errorf("Validate: %v", err)
	}
}
