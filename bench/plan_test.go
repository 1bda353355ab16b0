package bench

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func planOf(t *testing.T, c Config) Layout {
	t.Helper()
	c.Defaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	return PlanLayout(&c, nil)
}

// A loop with 3 tx queues and --count 7: three generators on port 0 split
// the count 3/2/2, three receivers on port 1, round-robin over 2 workers.
func TestPlanLoopSplitsCountAndQueues(t *testing.T) {
	l := planOf(t, Config{Role: RoleLoop, VDevs: []string{"net_ring0", "net_ring1"}, TxQ: 3, Count: 7, Cores: 2, Lcores: "0@0,1@1,2@1"})
	var got []string
	for _, u := range l.Units {
		got = append(got, fmt.Sprintf("k%d rx%d/%d tx%d/%d w%d n%d share%d", u.Kind, u.RxPort, u.RxQueue, u.TxPort, u.TxQueue, u.Worker, u.Count, u.RateShare))
	}
	want := []string{
		"k1 rx-1/0 tx0/0 w0 n3 share3", "k1 rx-1/0 tx0/1 w1 n2 share3", "k1 rx-1/0 tx0/2 w0 n2 share3",
		"k2 rx1/0 tx-1/0 w1 n0 share0", "k2 rx1/1 tx-1/0 w0 n0 share0", "k2 rx1/2 tx-1/0 w1 n0 share0",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("units:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// 2 ports x (3x1024 rx + 3x1024 tx) + 2 lcores x (256 + 4x32) + 4096
	if l.PoolSize != 2*(3*1024+3*1024)+2*(256+128)+4096 || l.DataRoom != 2176 {
		t.Errorf("pool %d mbufs of %d B", l.PoolSize, l.DataRoom)
	}
	// 17152 mbufs x (2176 + 192) B + 6 units x 1 MiB + 3 generators' flows x 1 MiB + 10 frames x 2052 B + 32 MiB slack
	wantMB := (17152*(2176+192) + 6<<20 + 3<<20 + 10*2052 + 32<<20 + 1<<20 - 1) >> 20
	if got := l.MemoryMB(10, 1<<20); got != wantMB || got != 80 {
		t.Errorf("memory %d MiB, want %d", got, wantMB)
	}
}

// --count smaller than the generators: the ones left without a frame
// start halted, so the run still ends.
func TestPlanGenCountBelowQueuesHalts(t *testing.T) {
	l := planOf(t, Config{Role: RoleGen, VDevs: []string{"net_null0"}, TxQ: 4, Count: 2})
	var halted int
	for _, u := range l.Units {
		if u.Halted != (u.Count == 0) {
			t.Errorf("queue %d: count %d, halted %v", u.TxQueue, u.Count, u.Halted)
		}
		if u.Halted {
			halted++
		}
	}
	if len(l.Units) != 4 || halted != 2 {
		t.Errorf("%d units, %d halted; want 4 and 2", len(l.Units), halted)
	}
}

// fwd: one forwarder per (port, rx queue) to the peer port; tx-first only
// on queue 0; --mbufs above the need wins; a jumbo pcap frame widens the
// data room.
func TestPlanFwdPeersTxFirstPoolRoom(t *testing.T) {
	c := Config{Role: RoleFwd, VDevs: []string{"net_ring0", "net_ring1"}, RxQ: 2, TxFirst: 8, Mbufs: 1 << 20}
	c.Defaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	l := PlanLayout(&c, [][]byte{make([]byte, 9000)})
	if len(l.Units) != 4 {
		t.Fatalf("%d units, want 4", len(l.Units))
	}
	for _, u := range l.Units {
		if u.Kind != KindFwd || u.TxPort != 1-u.RxPort || u.TxQueue != u.RxQueue || u.TxFirst != (u.RxQueue == 0) {
			t.Errorf("unit %+v", u)
		}
	}
	if l.PoolSize != 1<<20 || l.DataRoom != 9128 {
		t.Errorf("pool %d mbufs of %d B, want %d of 9128", l.PoolSize, l.DataRoom, 1<<20)
	}
}

// Validate checks every field against DefaultConfig, explicit zeros
// included (rig's flags start from DefaultConfig).
func TestValidateEachField(t *testing.T) {
	base := DefaultConfig(RoleLoop)
	base.VDevs = []string{"net_ring0"}
	if err := base.Validate(); err != nil {
		t.Fatalf("DefaultConfig: %v", err)
	}
	for _, tc := range []struct {
		want string
		mod  func(*Config)
	}{
		{"role", func(c *Config) { c.Role = "pump" }},
		{"ports", func(c *Config) { c.VDevs = []string{"net_ring0", "net_ring1", "net_ring2"} }},
		{"--fwd-mode", func(c *Config) { c.FwdMode = "swap" }},
		{"--cores 0", func(c *Config) { c.Cores = 0 }},
		{"--cores 128", func(c *Config) { c.Cores = 128 }},
		{"--rxq 0", func(c *Config) { c.RxQ = 0 }},
		{"--txq 65", func(c *Config) { c.TxQ = 65 }},
		{"--rxd 0", func(c *Config) { c.RxD = 0 }},
		{"--txd 65536", func(c *Config) { c.TxD = 65536 }},
		{"--burst 0", func(c *Config) { c.Burst = 0 }},
		{"--burst 513", func(c *Config) { c.Burst = 513 }},
		{"--mbuf-cache -1", func(c *Config) { c.MbufCache = -1 }},
		{"--mbufs 1", func(c *Config) { c.Mbufs = 1 }},
		{"--size 63", func(c *Config) { c.FrameSize = 63 }},
		{"--size 9001", func(c *Config) { c.FrameSize = 9001 }},
		{"--tx-first -1", func(c *Config) { c.TxFirst = -1 }},
		{"--tx-retry -1", func(c *Config) { c.TxRetry = -1 }},
		{"--capture -1", func(c *Config) { c.Capture = -1 }},
		{"--duration", func(c *Config) { c.Duration = -time.Second }},
		{"--interval", func(c *Config) { c.Interval = -time.Second }},
		{"--src-ip", func(c *Config) { c.SrcIP = "10.0.0.300" }},
		{"--dst-ip", func(c *Config) { c.DstIP = "" }},
		{"--sport", func(c *Config) { c.SPort = "2000-1000" }},
		{"--dport", func(c *Config) { c.DPort = "-1" }},
		{"--dst-mac", func(c *Config) { c.DstMAC = "02:00:00:00:00" }},
		{"--fwd-dst-mac", func(c *Config) { c.FwdDstMAC = "x" }},
		{"--fwd-src-mac", func(c *Config) { c.FwdSrcMAC = "x" }},
		{"--link-speed", func(c *Config) { c.LinkSpeed = "10Q" }},
		{"--rate", func(c *Config) { c.Rate = "-5Mpps" }},
		{"--eal", func(c *Config) { c.EAL = []string{"--bogus"} }},
		{"--lcores", func(c *Config) { c.Lcores = "a" }},
	} {
		c := base
		tc.mod(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want an error naming it", tc.want, err)
		}
	}
	// zero meaning default: what Run does with a library caller's Config
	c := Config{Role: RoleGen, VDevs: []string{"net_null0"}}
	c.Defaults()
	if err := c.Validate(); err != nil || c.Burst != base.Burst || c.Interval != time.Second {
		t.Errorf("Defaults then Validate: %v (burst %d, interval %v)", err, c.Burst, c.Interval)
	}
}

// bench errors name the object in Error() and keep cause and fix apart.
func TestErrorCauseFix(t *testing.T) {
	inner := errors.New("rte_eth_dev_get_port_by_name: No such device (errno 19)")
	var err error = failure("port net_x0", inner, "", "name a device given with --vdev")
	var cf interface {
		Cause() string
		Fix() string
	}
	if !errors.As(err, &cf) || !errors.Is(err, inner) {
		t.Fatalf("%T does not carry Cause/Fix or unwrap", err)
	}
	if err.Error() != "bench: port net_x0: "+inner.Error() || strings.Contains(err.Error(), "fix") ||
		cf.Cause() != inner.Error() || cf.Fix() != "name a device given with --vdev" {
		t.Errorf("Error %q Cause %q Fix %q", err.Error(), cf.Cause(), cf.Fix())
	}
	if !strings.Contains(ErrNoDataplane.Error(), "the DPDK dataplane was not built into this rig (built without cgo); rebuild with cgo and libdpdk-dev: make build") {
		t.Errorf("ErrNoDataplane: %q", ErrNoDataplane)
	}
}
