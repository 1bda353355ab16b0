package main

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// row is one scenario's runs: per run, Mpps per port, and per round the
// paired ratio rig/reference of the port sums.
type row struct {
	sc      scenario
	ref, rg [][]float64
	paired  []float64
	errs    []string
}

// runScenario runs rounds paired rounds: in each, rig and the reference
// once, back to back, the reference first in even rounds and rig first in
// odd ones, so neither tool always gets the machine's warmer (or busier)
// moment. A round where either run fails counts for nothing.
func runScenario(sc scenario, rounds int, dur time.Duration) row {
	r := row{sc: sc}
	for i := 0; i < rounds; i++ {
		order := []string{"ref", "rig"}
		if i%2 == 1 {
			order = []string{"rig", "ref"}
		}
		var sum [2]float64 // ref, rig
		ok := true
		for _, who := range order {
			f, k, name := sc.ref, 0, sc.refName
			if who == "rig" {
				f, k, name = sc.rig, 1, "rig"
			}
			v, err := f(dur)
			if err != nil {
				r.errs = append(r.errs, fmt.Sprintf("round %d, %s: %v", i+1, name, err))
				ok = false
				continue
			}
			fmt.Fprintf(os.Stderr, "%-42s round %d %-26s %s Mpps\n", sc.name, i+1, name, fmtMpps(v))
			for _, x := range v {
				sum[k] += x
			}
			if k == 1 {
				r.rg = append(r.rg, v)
			} else {
				r.ref = append(r.ref, v)
			}
		}
		switch {
		case !ok:
		case sum[0] > 0 && sum[1] > 0:
			r.paired = append(r.paired, sum[1]/sum[0])
		default:
			r.errs = append(r.errs, fmt.Sprintf("round %d: %s measured %.3f Mpps, rig %.3f: no ratio", i+1, sc.refName, sum[0], sum[1]))
		}
	}
	return r
}

func fmtMpps(v []float64) string {
	var s []string
	for _, x := range v {
		s = append(s, fmt.Sprintf("%.3f", x))
	}
	return strings.Join(s, " ")
}
