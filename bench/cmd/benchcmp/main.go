// Command benchcmp is `make bench`: it runs dpdk-testpmd 22.11 and rig's
// embedded dataplane alternately on the same vdevs and cores and prints Mpps
// per port and the ratio rig/testpmd (median of the runs).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"rig/bench"
)

type scenario struct {
	name    string
	testpmd func(dur time.Duration) ([]float64, error) // Mpps per port
	rig     func(dur time.Duration) ([]float64, error)
	ports   []string
	target  float64
}

func main() {
	rig := flag.String("rig", "bin/rig", "rig binary")
	testpmd := flag.String("testpmd", "dpdk-testpmd", "testpmd binary")
	runs := flag.Int("runs", 3, "runs per tool and scenario (median)")
	dur := flag.Duration("duration", 5*time.Second, "run time")
	only := flag.String("only", "", "run only scenarios whose name contains this")
	flag.Parse()
	if *dur < 5*time.Second || *runs < 3 {
		// testpmd's per-second samples skip the first two (startup); below
		// 5 s too few are left and its median is biased low (seen: a 3 s
		// run reported testpmd at half its 5 s rate).
		fmt.Fprintln(os.Stderr, "benchcmp: -duration must be >= 5s and -runs >= 3 for a fair median")
		os.Exit(2)
	}
	if err := run(*rig, *testpmd, *runs, *dur, *only); err != nil {
		fmt.Fprintln(os.Stderr, "benchcmp:", err)
		os.Exit(1)
	}
}

func run(rig, testpmd string, runs int, dur time.Duration, only string) error {
	tmp, err := os.MkdirTemp("", "rigbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var rows []row
	ovs := &ovsCheck{rig: rig, testpmd: testpmd, dir: tmp}
	defer ovs.teardown()
	for _, sc := range append(scenarios(rig, testpmd, tmp), ovs.scenario()) {
		if only != "" && !strings.Contains(sc.name, only) {
			continue
		}
		rows = append(rows, runScenario(sc, runs, dur))
	}
	return report(rows, runs, dur)
}

type runner = func(time.Duration) ([]float64, error)

// scenarios are what make bench compares: testpmd and rig on the same vdevs.
func scenarios(rig, testpmd, tmp string) []scenario {
	eal := []string{"-l", "0-1", "--no-pci", "--in-memory", "--log-level", "5"}
	tp := func(vdevs []string, mode string, extra ...string) runner {
		return func(d time.Duration) ([]float64, error) {
			args := append([]string{}, eal...)
			for _, v := range vdevs {
				args = append(args, "--vdev", v)
			}
			args = append(args, "--", "--forward-mode="+mode, "--stats-period", "1", "--nb-cores=1", "--total-num-mbufs=16384")
			args = append(args, extra...)
			return runTestpmd(testpmd, args, d, len(vdevs), mode == "txonly")
		}
	}
	rg := func(vdevs []string, sub string, extra ...string) runner {
		return func(d time.Duration) ([]float64, error) {
			args := []string{"bench", sub, "-o", "json", "--duration", d.String()}
			for _, v := range vdevs {
				args = append(args, "--vdev", v)
			}
			args = append(args, extra...)
			return runRig(rig, args, sub == "gen")
		}
	}
	null := []string{"net_null0", "net_null1"}
	ring := []string{"net_ring0", "net_ring1"}
	s1, s2 := filepath.Join(tmp, "a.sock"), filepath.Join(tmp, "b.sock")
	memifDUT := []string{"net_memif0,role=client,socket=" + s1, "net_memif1,role=client,socket=" + s2}
	memifGen := []string{"net_memif0,role=server,socket=" + s1, "net_memif1,role=server,socket=" + s2}
	chain := func(dut runner) runner { return chainRun(rig, memifGen, s2, dut) }
	return []scenario{
		{name: "io fwd, net_null pair", testpmd: tp(null, "io"), rig: rg(null, "fwd"), ports: null, target: 1.05},
		{name: "io fwd, net_ring pair (tx-first)", testpmd: tp(ring, "io", "--tx-first"), rig: rg(ring, "fwd", "--tx-first", "32"), ports: ring, target: 1.05},
		{name: "txonly 64 B, net_null", testpmd: tp(null[:1], "txonly", "--txpkts=60"), rig: rg(null[:1], "gen", "--size", "64"), ports: null[:1], target: 1.0},
		// 64 flows: testpmd --txonly-multi-flow varies the source IP per
		// frame; rig's generator prebuilds each flow's headers (issue 12)
		{name: "txonly 64 B, 64 flows, net_null", testpmd: tp(null[:1], "txonly", "--txpkts=60", "--txonly-multi-flow"),
			rig: rg(null[:1], "gen", "--size", "64", "--src-ip", "10.0.0.1-10.0.0.64"), ports: null[:1], target: 1.15},
		{name: "memif chain gen->DUT io->rx", testpmd: chain(tp(memifDUT, "io")), rig: chain(rg(memifDUT, "fwd")), ports: []string{"rx port"}, target: 1.05},
		{name: "io fwd, net_null, Go threads NOT pinned", testpmd: tp(null, "io"), rig: rg(null, "fwd", "--no-pin-go"), ports: null, target: 0},
	}
}

// chainRun: generator+receiver (rig loop, worker on CPU 0) -> DUT (worker
// on CPU 1), over memif; the result is what came back to the generator.
func chainRun(rig string, memifGen []string, s2 string, dut runner) runner {
	return func(d time.Duration) ([]float64, error) {
		type r struct {
			v   []float64
			err error
		}
		ch := make(chan r, 1)
		// the generator owns the memif servers: start it first, the DUT's
		// clients connect to its sockets; it measures once links are up
		go func() {
			v, err := runRig(rig, append([]string{"bench", "loop", "-o", "json", "--duration", d.String(), "--lcores", "0@1,1@0"},
				"--vdev", memifGen[0], "--vdev", memifGen[1]), false)
			ch <- r{v, err}
		}()
		for i := 0; i < 100; i++ {
			if _, err := os.Stat(s2); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		_, derr := dut(d + 2*time.Second) // the DUT's own rates are not the measure
		gr := <-ch
		if gr.err != nil {
			return nil, fmt.Errorf("chain generator: %w", gr.err)
		}
		if derr != nil {
			return nil, fmt.Errorf("chain DUT: %w", derr)
		}
		return gr.v[1:], nil // what came back on the generator's rx port
	}
}

type row struct {
	sc     scenario
	tp, rg [][]float64
	paired []float64 // rig/testpmd of each back-to-back pair (port sums)
	errs   []string
}

// runScenario runs testpmd and rig alternately, runs times each.
func runScenario(sc scenario, runs int, dur time.Duration) row {
	r := row{sc: sc}
	for i := 0; i < runs; i++ {
		var pair [2]float64
		for k, who := range []string{"testpmd", "rig"} { // alternating
			f := sc.testpmd
			if who == "rig" {
				f = sc.rig
			}
			v, err := f(dur)
			if err != nil {
				r.errs = append(r.errs, fmt.Sprintf("%s run %d: %v", who, i+1, err))
				continue
			}
			fmt.Fprintf(os.Stderr, "%-42s %-7s run %d: %v Mpps\n", sc.name, who, i+1, fmtMpps(v))
			for _, x := range v {
				pair[k] += x
			}
			if who == "rig" {
				r.rg = append(r.rg, v)
			} else {
				r.tp = append(r.tp, v)
			}
		}
		if pair[0] > 0 && pair[1] > 0 {
			r.paired = append(r.paired, pair[1]/pair[0])
		}
	}
	return r
}

// report prints the table and says whether every target was met.
func report(rows []row, runs int, dur time.Duration) error {
	var unmet []string
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "scenario\tport\ttestpmd Mpps\trig Mpps\trig/testpmd\ttarget\ttestpmd runs\trig runs\tpaired ratio\t\n")
	for _, r := range rows {
		var tpSum, rgSum float64
		for p, name := range r.sc.ports {
			t := medianAt(r.tp, p)
			g := medianAt(r.rg, p)
			tpSum += t
			rgSum += g
			fmt.Fprintf(tw, "%s\t%s\t%.3f\t%.3f\t%s\t\t\t\t\t\n", r.sc.name, portLabel(name), t, g, ratio(g, t))
		}
		verdict := "info"
		if r.sc.target > 0 {
			verdict = fmt.Sprintf(">= %.2fx: ", r.sc.target)
			if tpSum > 0 && rgSum/tpSum >= r.sc.target {
				verdict += "MET"
			} else {
				verdict += "NOT MET"
				unmet = append(unmet, r.sc.name)
			}
		}
		fmt.Fprintf(tw, "%s\tall\t%.3f\t%.3f\t%s\t%s\t%s\t%s\t%s\t\n", r.sc.name, tpSum, rgSum, ratio(rgSum, tpSum), verdict, spread(r.tp), spread(r.rg), pairedRatio(r.paired))
	}
	tw.Flush()
	fmt.Printf("(median of %d alternating runs of %v each; cores: EAL -l 0-1, one forwarding lcore on CPU 1)\n", runs, dur)
	fmt.Println("(paired ratio: median of rig/testpmd over back-to-back pairs, min..max; robust to the machine's speed drifting during the run. The verdict uses the medians.)")
	nerr := 0
	for _, r := range rows {
		for _, e := range r.errs {
			fmt.Printf("error: %s: %s\n", r.sc.name, e)
			nerr++
		}
	}
	switch {
	case nerr > 0:
		return fmt.Errorf("%d run(s) failed", nerr)
	case len(unmet) > 0:
		return fmt.Errorf("target not met: %s", strings.Join(unmet, "; "))
	}
	return nil
}

// spread is the min..max of the runs' port sums: on a shared 2-core VM the
// spread shows how far the medians can be trusted.
func spread(runs [][]float64) string {
	if len(runs) == 0 {
		return "-"
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range runs {
		var s float64
		for _, v := range r {
			s += v
		}
		lo, hi = math.Min(lo, s), math.Max(hi, s)
	}
	return fmt.Sprintf("%.1f..%.1f", lo, hi)
}

func portLabel(s string) string { n, _, _ := strings.Cut(s, ","); return n }

func ratio(a, b float64) string {
	if b <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f", a/b)
}

func fmtMpps(v []float64) string {
	var s []string
	for _, x := range v {
		s = append(s, fmt.Sprintf("%.3f", x))
	}
	return strings.Join(s, " ")
}

func medianAt(runs [][]float64, p int) float64 {
	var v []float64
	for _, r := range runs {
		if p < len(r) {
			v = append(v, r[p])
		}
	}
	return bench.Median(v)
}

var (
	portHdr = regexp.MustCompile(`NIC statistics for port (\d+)`)
	ppsLine = regexp.MustCompile(`^\s*(Rx|Tx)-pps:\s+(\d+)`)
)

// runTestpmd runs testpmd for d, stops it with SIGINT and returns, per port,
// the median of its per-second Rx-pps (Tx-pps for txonly), first period
// skipped.
func runTestpmd(bin string, args []string, d time.Duration, nports int, tx bool) ([]float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	time.Sleep(d + time.Second)
	_ = cmd.Process.Signal(syscall.SIGINT)
	_ = cmd.Wait()
	res, err := testpmdRates(out.Bytes(), nports, tx)
	if err != nil {
		return nil, fmt.Errorf("testpmd %v: %w", args, err)
	}
	return res, nil
}

// testpmdRates is, per port, the median of testpmd's per-second Rx-pps
// (Tx-pps for tx), the first two periods skipped (since start; startup).
func testpmdRates(out []byte, nports int, tx bool) ([]float64, error) {
	samples := make([][]float64, nports)
	port := -1
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		l := sc.Text()
		if m := portHdr.FindStringSubmatch(l); m != nil {
			port, _ = strconv.Atoi(m[1])
			continue
		}
		if m := ppsLine.FindStringSubmatch(l); m != nil && port >= 0 && port < nports {
			if (m[1] == "Tx") == tx {
				v, _ := strconv.ParseFloat(m[2], 64)
				samples[port] = append(samples[port], v/1e6)
			}
		}
	}
	res := make([]float64, nports)
	for p := range samples {
		s := samples[p]
		if len(s) > 2 {
			s = s[2:]
		}
		if len(s) == 0 {
			return nil, fmt.Errorf("no rate samples for port %d; output: %s", p, tail(string(out)))
		}
		res[p] = bench.Median(s)
	}
	return res, nil
}

// runRig runs `rig bench ... -o json` and returns, per port, the median of
// the per-second rx (tx for gen) samples, first one skipped.
func runRig(bin string, args []string, tx bool) ([]float64, error) {
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s %v: %v: %s", bin, args, err, tail(errb.String()))
	}
	var r bench.Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		return nil, fmt.Errorf("%s %v: %w", bin, args, err)
	}
	if r.SchemaVersion != bench.SchemaVersion {
		return nil, fmt.Errorf("%s %v: result schemaVersion %q, want %q (rig and benchcmp from different builds?)", bin, args, r.SchemaVersion, bench.SchemaVersion)
	}
	res := make([]float64, len(r.Ports))
	for p := range r.Ports {
		var s []float64
		for i, smp := range r.Samples {
			if i == 0 && len(r.Samples) > 2 {
				continue
			}
			if tx {
				s = append(s, smp.TxMpps[p])
			} else {
				s = append(s, smp.RxMpps[p])
			}
		}
		res[p] = bench.Median(s)
	}
	return res, nil
}

func tail(s string) string {
	if len(s) > 1500 {
		return s[len(s)-1500:]
	}
	return s
}

// pairedRatio is the median (and min..max) of per-pair ratios: each rig run
// against the testpmd run just before it, so a slow phase of the machine
// hits both sides of a pair instead of skewing one tool's median.
func pairedRatio(rs []float64) string {
	if len(rs) == 0 {
		return "-"
	}
	s := append([]float64(nil), rs...)
	sort.Float64s(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return fmt.Sprintf("%.3f (%.3f..%.3f)", med, s[0], s[len(s)-1])
}
