package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// runner is one run of one tool: Mpps per port.
type runner = func(time.Duration) ([]float64, error)

// scenario is one row of make bench: rig against a reference on the same
// vdevs and cores. target is the least ratio rig/reference the row asks
// for (0: shown for information, no verdict).
type scenario struct {
	name    string
	refName string // "testpmd ...", or "rig ..." for a row comparing rig to itself
	ref     runner
	rig     runner
	ports   []string
	target  float64
}

// scenarios are what make bench compares: testpmd and rig on the same
// vdevs (issue 12's Done means: the generator rows, single flow and 64
// flows, and the io-fwd rows).
func scenarios(rig, testpmd, tmp, prefix string) []scenario {
	tp := testpmdRunner(testpmd, prefix)
	rg := rigRunner(rig)
	null := []string{"net_null0", "net_null1"}
	ring := []string{"net_ring0", "net_ring1"}
	s1, s2 := filepath.Join(tmp, "a.sock"), filepath.Join(tmp, "b.sock")
	memifDUT := []string{"net_memif0,role=client,socket=" + s1, "net_memif1,role=client,socket=" + s2}
	memifGen := []string{"net_memif0,role=server,socket=" + s1, "net_memif1,role=server,socket=" + s2}
	chain := func(dut runner) runner { return chainRun(rig, memifGen, s2, dut) }
	flows64 := []string{"--src-ip", "10.0.0.1-10.0.0.64"}
	single := rg(null[:1], "gen", "--size", "64")
	multi := rg(null[:1], "gen", append([]string{"--size", "64"}, flows64...)...)
	return []scenario{
		{name: "io fwd, net_null pair", refName: "testpmd io", ref: tp(null, "io"), rig: rg(null, "fwd"), ports: null, target: 1.05},
		{name: "io fwd, net_ring pair (tx-first)", refName: "testpmd io --tx-first", ref: tp(ring, "io", "--tx-first"),
			rig: rg(ring, "fwd", "--tx-first", "32"), ports: ring, target: 1.05},
		{name: "gen 64 B, 1 flow, net_null", refName: "testpmd txonly", ref: tp(null[:1], "txonly", "--txpkts=60"),
			rig: single, ports: null[:1], target: 1.3},
		// 64 flows: testpmd --txonly-multi-flow varies the source IP per
		// frame; rig's generator prebuilds each flow's headers (issue 12)
		{name: "gen 64 B, 64 flows, net_null", refName: "testpmd txonly-multi-flow",
			ref: tp(null[:1], "txonly", "--txpkts=60", "--txonly-multi-flow"), rig: multi, ports: null[:1], target: 1.15},
		// rig against itself: 64 flows must not cost more than 10 % of
		// the single-flow rate
		{name: "gen 64 B, 64 flows vs rig 1 flow", refName: "rig gen 1 flow", ref: single, rig: multi, ports: null[:1], target: 0.9},
		{name: "memif chain gen->DUT io->rx", refName: "testpmd io (DUT)", ref: chain(tp(memifDUT, "io")), rig: chain(rg(memifDUT, "fwd")),
			ports: []string{"rx port"}, target: 1.05},
		{name: "io fwd, net_null, Go threads NOT pinned", refName: "testpmd io", ref: tp(null, "io"), rig: rg(null, "fwd", "--no-pin-go"), ports: null},
	}
}

// testpmdRunner runs testpmd with one forwarding lcore on CPU 1, its EAL
// runtime dir named by prefix (run removes it).
func testpmdRunner(testpmd, prefix string) func(vdevs []string, mode string, extra ...string) runner {
	eal := []string{"-l", "0-1", "--no-pci", "--in-memory", "--file-prefix", prefix, "--log-level", "5"}
	return func(vdevs []string, mode string, extra ...string) runner {
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
}

// rigRunner runs `rig bench SUB -o json` (its worker lcore on CPU 1).
func rigRunner(rig string) func(vdevs []string, sub string, extra ...string) runner {
	return func(vdevs []string, sub string, extra ...string) runner {
		return func(d time.Duration) ([]float64, error) {
			args := []string{"bench", sub, "-o", "json", "--duration", d.String()}
			for _, v := range vdevs {
				args = append(args, "--vdev", v)
			}
			args = append(args, extra...)
			return runRig(rig, args, sub == "gen")
		}
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
