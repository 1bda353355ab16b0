package bench

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// --latency-load and --latency-warmup are checked before anything runs.
func TestCheckLatencyOptions(t *testing.T) {
	loop := func(f func(*Config)) Config {
		c := Config{Role: RoleLoop, VDevs: []string{"net_ring0"}, Duration: 5 * time.Second}
		f(&c)
		c.Defaults()
		return c
	}
	for _, tc := range []struct {
		name string
		c    Config
		want string // "" valid
	}{
		{"50%", loop(func(c *Config) { c.LatencyLoad = "50%" }), ""},
		{"100%", loop(func(c *Config) { c.LatencyLoad = "100%" }), ""},
		{"0.5%", loop(func(c *Config) { c.LatencyLoad = "0.5%" }), ""},
		{"after the probe: rate and capacity", loop(func(c *Config) { c.LatencyLoad, c.Rate, c.CapacityMpps = "50%", "1000pps", 0.002 }), ""},
		{"no percent sign", loop(func(c *Config) { c.LatencyLoad = "50" }), "--latency-load \"50\": want a percentage"},
		{"0%", loop(func(c *Config) { c.LatencyLoad = "0%" }), "want a percentage"},
		{"150%", loop(func(c *Config) { c.LatencyLoad = "150%" }), "want a percentage"},
		{"words", loop(func(c *Config) { c.LatencyLoad = "half%" }), "want a percentage"},
		{"with --rate", loop(func(c *Config) { c.LatencyLoad, c.Rate = "50%", "1Mpps" }), "drop --rate 1Mpps"},
		{"with --pcap", loop(func(c *Config) { c.LatencyLoad, c.Pcap = "50%", "x.pcap" }), "replayed frames carry no latency stamp"},
		{"rx", Config{Role: RoleRx, VDevs: []string{"net_ring0"}, LatencyLoad: "50%"}, "bench rx: --latency-load needs the generator in this run"},
		{"warm-up", loop(func(c *Config) { c.LatWarmup = time.Second }), ""},
		{"warm-up as long as the run", loop(func(c *Config) { c.LatWarmup = 5 * time.Second }), "--latency-warmup 5s: want 0 (the default: 500ms) up to less than --duration (5s)"},
		{"negative warm-up", loop(func(c *Config) { c.LatWarmup = -time.Second }), "--latency-warmup -1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.c.checkLatency()
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("checkLatency: %v, want %q", err, tc.want)
			}
		})
	}
	if w := (&Config{LatWarmup: 2 * time.Second}).LatWarmupOrDefault(); w != 2*time.Second {
		t.Errorf("latWarmup %v, want the flag's 2s", w)
	}
	if w := (&Config{Duration: time.Second}).LatWarmupOrDefault(); w != 250*time.Millisecond {
		t.Errorf("latWarmup %v, want the default 250ms for a 1 s run", w)
	}
}

// fakeProbe records the probe's config and answers with a result.
type fakeProbe struct {
	got Config
	res *Result
	err error
}

func (f *fakeProbe) Run(_ context.Context, c Config) (*Result, error) { f.got = c; return f.res, f.err }

// The probe drives the path without a rate limit for capacityProbe; the
// run that follows offers the asked fraction of what came back.
func TestAtLatencyLoad(t *testing.T) {
	c := Config{Role: RoleLoop, VDevs: []string{"net_ring0"}, Duration: 10 * time.Second, Count: 1000, Capture: 5,
		LatencyLoad: "25%", LatWarmup: time.Second, FilePrefix: "rig1", FrameSize: 128}
	fp := &fakeProbe{res: &Result{Sent: 10, Ports: []PortStats{{Name: "a", TxMpps: 9}, {Name: "b", RxMpps: 8}}}}
	out, err := AtLatencyLoad(context.Background(), fp, c)
	if err != nil {
		t.Fatal(err)
	}
	p := fp.got
	if p.Rate != "" || p.LatencyLoad != "" || p.Count != 0 || p.Capture != 0 || p.Duration != capacityProbe || p.FilePrefix != "" || p.FrameSize != 128 || p.VDevs[0] != "net_ring0" {
		t.Errorf("probe config %+v: want c without rate, count, capture, prefix, for %v", p, capacityProbe)
	}
	if out.CapacityMpps != 8 || out.Rate != "2000000pps" || out.Duration != 10*time.Second || out.Count != 1000 || out.LatencyLoad != "25%" {
		t.Errorf("run config %+v: want capacity 8 (the receiver's), rate 2000000pps, the rest as given", out)
	}
	if err := out.checkLatency(); err != nil {
		t.Errorf("the prepared run does not validate: %v", err)
	}
	for _, tc := range []struct {
		name string
		fp   *fakeProbe
		want string
	}{
		{"probe fails", &fakeProbe{err: errors.New("boom")}, "the capacity probe (2s without a rate limit) failed: boom"},
		{"probe invalid", &fakeProbe{res: &Result{Invalid: []string{"link lost"}}}, "measured nothing valid: link lost"},
		{"nothing back", &fakeProbe{res: &Result{Sent: 5, Ports: []PortStats{{}, {}}}}, "received nothing (5 sent)"},
	} {
		if _, err := AtLatencyLoad(context.Background(), tc.fp, c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	same, err := AtLatencyLoad(context.Background(), &fakeProbe{err: errors.New("must not run")}, Config{Role: RoleLoop})
	if err != nil || same.Rate != "" || same.CapacityMpps != 0 {
		t.Errorf("no --latency-load: %+v, %v; want unchanged, no probe", same, err)
	}
}
