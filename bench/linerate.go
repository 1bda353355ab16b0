// Package bench is what a run of rig's embedded dataplane benchmark is, in
// pure Go: its Config (defaults, validation, EAL's arguments), the layout
// plan, the Result and its summary, profiles, ports by role, validity, the
// latency histogram and the line-rate arithmetic used to judge the
// results. The run itself is bench/dataplane's (cgo, the hot loops in C
// in internal/dpdk); bench/child runs it in a child process, bench/search
// sweeps and searches with it, bench/peer spans two hosts, bench/report
// draws it.
package bench

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// WireOverhead is preamble (7) + SFD (1) + inter-frame gap (12) bytes
// (RFC 5180 appendix A.1).
const WireOverhead = 20

// FCSLen is the Ethernet frame check sequence; frame sizes include it.
const FCSLen = 4

// LineRatePPS is the maximum frame rate of a link: bps / (8 * (frame + 20)),
// where frame includes the 4-byte FCS (64 B minimum).
func LineRatePPS(bps float64, frame int) float64 {
	if frame <= 0 {
		return 0
	}
	return bps / (8 * float64(frame+WireOverhead))
}

// LineRateSpeeds are the link speeds (Gb/s) of the line-rate table.
func LineRateSpeeds() []float64 { return []float64{10, 25, 40, 50, 100, 200, 400} }

// LineRateFrames are the frame sizes of the line-rate table (RFC 2544 set).
func LineRateFrames() []int { return []int{64, 128, 256, 512, 1024, 1280, 1518} }

// LineRateTable returns Mpps[frame][speed] for the given sizes and speeds.
func LineRateTable(frames []int, speedsGbps []float64) [][]float64 {
	out := make([][]float64, len(frames))
	for i, f := range frames {
		out[i] = make([]float64, len(speedsGbps))
		for j, s := range speedsGbps {
			out[i][j] = LineRatePPS(s*1e9, f) / 1e6
		}
	}
	return out
}

// ParseLinkSpeed parses "100G", "25Gbps", "100000" (Mb/s, as DPDK reports),
// "10g" into bits per second.
func ParseLinkSpeed(s string) (float64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "bps"), "b/s")
	mult := 1e6 // bare numbers are Mb/s (rte_eth_link.link_speed)
	switch {
	case strings.HasSuffix(t, "g"):
		mult, t = 1e9, strings.TrimSuffix(t, "g")
	case strings.HasSuffix(t, "m"):
		mult, t = 1e6, strings.TrimSuffix(t, "m")
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || !(v > 0) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("link speed %q: want e.g. 25G, 100G or Mb/s as a number", s)
	}
	return v * mult, nil
}

// ParseRate parses a rate limit: "100kpps", "1.5Mpps", "2000pps", "10Gbps",
// "500Mbps" (on-wire L1 bit rate) or "50%" of linkBps. It returns frames
// per second for frame-byte frames (FCS included); 0 means unlimited.
func ParseRate(s string, frame int, linkBps float64) (float64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "" || t == "0" || t == "max" {
		return 0, nil
	}
	num := func(x string) (float64, error) {
		v, err := strconv.ParseFloat(x, 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("rate %q: want e.g. 100kpps, 1.5Mpps, 10Gbps or 50%%", s)
		}
		return v, nil
	}
	for _, u := range []struct {
		suf string
		m   float64
		bps bool
	}{{"mpps", 1e6, false}, {"kpps", 1e3, false}, {"pps", 1, false}, {"gbps", 1e9, true}, {"mbps", 1e6, true}, {"kbps", 1e3, true}} {
		if strings.HasSuffix(t, u.suf) {
			v, err := num(strings.TrimSuffix(t, u.suf))
			if err != nil {
				return 0, err
			}
			if u.bps {
				return LineRatePPS(v*u.m, frame), nil
			}
			return v * u.m, nil
		}
	}
	if strings.HasSuffix(t, "%") {
		v, err := num(strings.TrimSuffix(t, "%"))
		if err != nil {
			return 0, err
		}
		if v > 100 {
			return 0, fmt.Errorf("rate %q: percent of line rate must be <= 100", s)
		}
		if linkBps <= 0 {
			return 0, fmt.Errorf("rate %q: percent of line rate needs --link-speed (the port reports no speed)", s)
		}
		return LineRatePPS(linkBps, frame) * v / 100, nil
	}
	return 0, fmt.Errorf("rate %q: want e.g. 100kpps, 1.5Mpps, 10Gbps or 50%%", s)
}
