package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"syscall"
	"time"

	"rig/bench"
)

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
