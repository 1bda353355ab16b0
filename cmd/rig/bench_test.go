package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"rig/bench"
	"rig/internal/testutil"
	"rig/internal/testutil/hugetest"
)

func TestBenchLineRateTable(t *testing.T) {
	code, out, errOut := rig(t, "bench", "linerate")
	if code != exitOK || !strings.Contains(out, "148.810") || !strings.Contains(out, "14.881") || !strings.Contains(out, "32.510") {
		t.Fatalf("linerate: code %d\n%s%s", code, out, errOut)
	}
	code, out, _ = rig(t, "bench", "linerate", "--link-speed", "25G", "-o", "json")
	var v struct {
		SchemaVersion string `json:"schemaVersion"`
		Rows          []struct {
			Frame int                `json:"frame"`
			Mpps  map[string]float64 `json:"mpps"`
		} `json:"rows"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &v) != nil || v.SchemaVersion != "rig.bench.linerate/v1" || len(v.Rows) != 7 || v.Rows[0].Mpps["25G"] < 37.20 || v.Rows[0].Mpps["25G"] > 37.21 {
		t.Fatalf("linerate json: code %d %s", code, out)
	}
	if code, _, _ := rig(t, "bench", "linerate", "--link-speed", "fast"); code != exitUsage {
		t.Errorf("bad --link-speed: exit %d, want %d", code, exitUsage)
	}
}

func TestBenchThresholds(t *testing.T) {
	res := &bench.Result{Role: bench.RoleLoop, LinkSpeedGbps: 10, Ports: []bench.PortStats{{RxMpps: 1.0, RxLineRatePct: 6.72}}}
	var ee *exitError
	if err := checkThresholds(res, 2, 0); !errors.As(err, &ee) || ee.code != exitBelowThreshold {
		t.Errorf("1 Mpps vs --min-mpps 2: %v, want exit %d", err, exitBelowThreshold)
	}
	if err := checkThresholds(res, 0.5, 5); err != nil {
		t.Errorf("1 Mpps, 6.72%% vs 0.5 Mpps, 5%%: %v, want ok", err)
	}
	if err := checkThresholds(res, 0, 50); !errors.As(err, &ee) || ee.code != exitBelowThreshold {
		t.Errorf("6.72%% vs --min-linerate-pct 50: %v, want exit %d", err, exitBelowThreshold)
	}
	gen := &bench.Result{Role: bench.RoleGen, Ports: []bench.PortStats{{TxMpps: 3, RxMpps: 0}}}
	if err := checkThresholds(gen, 2, 0); err != nil {
		t.Errorf("gen judges tx: %v", err)
	}
	if err := checkThresholds(gen, 0, 10); !errors.As(err, &ee) || ee.code != exitUsage {
		t.Errorf("%% without a link speed: %v, want usage error", err)
	}
	if code, _, _ := rig(t, "bench", "loop", "--size", "10"); code != exitUsage {
		t.Errorf("--size 10: exit %d, want %d", code, exitUsage)
	}
}

// EAL is once per process: the end-to-end run re-execs this test binary.
func TestPrivilegedBenchLoopEndToEndExitCodes(t *testing.T) {
	if os.Getenv("RIG_CMD_BENCH_CHILD") != "" {
		t.Skip("child")
	}
	testutil.RequirePrivileged(t)
	// one child at a time, each a loop on net_ring0 with 512 descriptors
	hugetest.ReserveFor(t, benchNeed(t, "rig bench loop --vdev net_ring0", bench.Config{Role: bench.RoleLoop, VDevs: []string{"net_ring0"}, RxD: 512, TxD: 512}))
	runChild := func(args ...string) (int, string, string) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestBenchChild$")
		cmd.Env = append(os.Environ(), "RIG_CMD_BENCH_CHILD="+strings.Join(args, "\x1f"))
		var o, e strings.Builder
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		code := 0
		var xe *exec.ExitError
		if errors.As(err, &xe) {
			code = xe.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, o.String(), e.String()
	}
	// net_ring moves frames in memory: 400G is more than it reaches here,
	// 10 Mb/s far less (above 100 % of line rate is no measurement)
	code, out, errOut := runChild("bench", "loop", "--vdev", "net_ring0", "--count", "50000", "--rxd", "512", "--txd", "512", "--link-speed", "400G", "-o", "json")
	var r bench.Result
	if code != exitOK || json.Unmarshal([]byte(out), &r) != nil || r.SchemaVersion != "rig.bench/v1" || r.Sent != 50000 || r.Received != 50000 || r.Lost != 0 || r.LinkSpeedGbps != 400 {
		t.Fatalf("loop: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = runChild("bench", "loop", "--vdev", "net_ring0", "--count", "50000", "--rxd", "512", "--txd", "512", "--link-speed", "10M")
	if code != exitInvalid || !strings.Contains(out, "INVALID MEASUREMENT: port net_ring0 sent") || !strings.Contains(out, "of its 0.01 Gbps line rate") {
		t.Fatalf("above line rate: exit %d, want %d (invalid)\n%s\n%s", code, exitInvalid, out, errOut)
	}
	code, out, errOut = runChild("bench", "loop", "--vdev", "net_ring0", "--count", "50000", "--rxd", "512", "--txd", "512", "--min-mpps", "100000")
	if code != exitBelowThreshold || !strings.Contains(out, "sent 50000, received 50000, lost 0") || !strings.Contains(errOut, "below --min-mpps") {
		t.Fatalf("below threshold: exit %d, want %d\n%s\n%s", code, exitBelowThreshold, out, errOut)
	}
}

// TestBenchChild is the re-exec'd side of TestPrivilegedBenchLoopEndToEndExitCodes.
func TestBenchChild(t *testing.T) {
	args := os.Getenv("RIG_CMD_BENCH_CHILD")
	if args == "" {
		t.Skip("helper for TestPrivilegedBenchLoopEndToEndExitCodes")
	}
	os.Exit(run(strings.Split(args, "\x1f"), os.Stdout, os.Stderr))
}

// Bad flag values are usage errors (exit 2), refused before EAL starts.
func TestBenchBadFlagValuesExitUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--rate", "fast"}, {"--rate", "150%"}, {"--dst-ip", "1.2.3"}, {"--src-ip", "10.0.0.9-10.0.0.1"},
		{"--sport", "70000"}, {"--dst-mac", "02:00"}, {"--size", "10"}, {"--duration", "-1s"},
		{"--cores", "0"}, {"--cores", "-1"}, {"--rxq", "0"}, {"--burst", "0"}, {"--link-speed", "fast"},
		{"--lcores", "0-x"}, {"--eal", "--no-such-flag"},
		{"--latency-load", "150%"}, {"--latency-load", "half"}, {"--latency-load", "50%", "--rate", "1Mpps"},
		{"--latency-warmup", "-1s"}, {"--latency-warmup", "2s", "--duration", "1s"}, {"--latency-plot", "lat.pdf"},
	} {
		code, _, errOut := rig(t, append([]string{"bench", "loop", "--vdev", "net_ring0"}, args...)...)
		if code != exitUsage || !strings.Contains(errOut, args[0]) {
			t.Errorf("bench loop %v: exit %d, want %d naming %s; stderr: %s", args, code, exitUsage, args[0], errOut)
		}
	}
}

// Only loop and rx measure latency: gen refuses --latency-plot and
// --latency-load before EAL starts.
func TestBenchLatencyFlagsNeedAReceiver(t *testing.T) {
	for _, args := range [][]string{{"gen", "--latency-plot", "l.svg"}, {"fwd", "--latency-plot", "l.png"}, {"gen", "--latency-load", "50%"}} {
		code, _, errOut := rig(t, append([]string{"bench"}, append(args, "--vdev", "net_null0")...)...)
		if code != exitUsage || !strings.Contains(errOut, args[1]) {
			t.Errorf("bench %v: exit %d, want %d naming %s; stderr: %s", args, code, exitUsage, args[1], errOut)
		}
	}
}

// An unknown EAL option is named once, by rig, not twice by EAL's getopt
// followed by EAL's whole usage text.
func TestBenchUnknownEALOptionOnce(t *testing.T) {
	code, out, errOut := rig(t, "bench", "loop", "--eal", "--no-such-flag")
	if code != exitUsage || strings.Count(out+errOut, "no-such-flag") != 1 || strings.Contains(out+errOut, "EAL common options") {
		t.Errorf("exit %d, want %d; the option must be named once:\n%s%s", code, exitUsage, out, errOut)
	}
}

// --cores needs one CPU more than it asks for (lcore 0 runs Go): say so at
// once, not with EAL's usage text.
func TestBenchCoresMoreThanCPUs(t *testing.T) {
	n := len(onlineCPUsForTest(t))
	code, out, errOut := rig(t, "bench", "loop", "--cores", fmt.Sprint(n))
	want := fmt.Sprintf("--cores %d needs %d CPUs (lcore 0 runs Go", n, n+1)
	if code != exitUsage || !strings.Contains(errOut, want) || !strings.Contains(errOut, fmt.Sprintf("this host has %d online", n)) || strings.Contains(out, "EAL common options") {
		t.Errorf("--cores %d on %d CPUs: exit %d, want %d and %q\n%s%s", n, n, code, exitUsage, want, out, errOut)
	}
}

func onlineCPUsForTest(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		t.Skipf("no /sys/devices/system/cpu/online: %v", err)
	}
	var cpus []string
	for _, r := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		if !isRange {
			hi = lo
		}
		var a, z int
		fmt.Sscan(lo, &a)
		fmt.Sscan(hi, &z)
		for c := a; c <= z; c++ {
			cpus = append(cpus, fmt.Sprint(c))
		}
	}
	return cpus
}

// The help says what a run does: the default loop is a memif pair.
func TestBenchLoopHelpMatchesDefault(t *testing.T) {
	code, out, _ := rig(t, "bench", "loop", "--help")
	if code != exitOK || strings.Contains(out, "net_ring pair") || !strings.Contains(out, "net_memif server/client pair") {
		t.Errorf("bench loop --help: exit %d\n%s", code, out)
	}
	if v := bench.DefaultLoopVDevs("1"); !strings.HasPrefix(v[0], "net_memif") || !strings.HasPrefix(v[1], "net_memif") {
		t.Errorf("default loop vdevs %v are not a memif pair: fix the help", v)
	}
}

func TestBenchLineRateHeaderUnits(t *testing.T) {
	code, out, _ := rig(t, "bench", "linerate", "--link-speed", "25G")
	if code != exitOK || !strings.Contains(out, "line rate in Mpps") || !strings.Contains(out, "25G Mpps") {
		t.Errorf("linerate: exit %d, header without units:\n%s", code, out)
	}
}

// A bench error's cause and fix are printed on their own lines.
func TestBenchExplainedCauseFix(t *testing.T) {
	code, _, errOut := rig(t, "bench", "loop", "--eal", "--no-such-flag")
	if code != exitUsage || !strings.Contains(errOut, "\n  cause: not an EAL option\n  fix: see DPDK 22.11's EAL parameters") || strings.Contains(errOut, "(fix:") {
		t.Errorf("exit %d, want %d with cause/fix lines:\n%s", code, exitUsage, errOut)
	}
}
