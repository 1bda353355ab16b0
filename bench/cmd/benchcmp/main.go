// Command benchcmp is `make bench`: it runs rig's embedded dataplane and a
// reference (dpdk-testpmd 22.11 on the same vdevs and cores, or rig itself
// in another configuration) in paired rounds whose order alternates, and
// judges every row from the paired ratios rig/reference with a sign test:
// MET, NOT MET, or inconclusive when the rounds disagree.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// options are benchcmp's flags.
type options struct {
	rig, testpmd string
	runs         int
	dur          time.Duration
	only         string
	list, smoke  bool
	md           string
}

// Exit codes: 1 a run failed or a target is NOT MET, 2 bad flags, 3 no
// target failed but at least one is inconclusive.
const (
	exitFailed       = 1
	exitUsage        = 2
	exitInconclusive = 3
)

func main() {
	var o options
	flag.StringVar(&o.rig, "rig", "bin/rig", "rig binary")
	flag.StringVar(&o.testpmd, "testpmd", "dpdk-testpmd", "testpmd binary")
	flag.IntVar(&o.runs, "runs", minRounds, fmt.Sprintf("paired rounds per row (each: rig and the reference once, order alternating); a verdict needs >= %d", minRounds))
	flag.DurationVar(&o.dur, "duration", 5*time.Second, "run time of each run (>= 5s)")
	flag.StringVar(&o.only, "only", "", "run only rows whose name contains one of these comma-separated strings")
	flag.BoolVar(&o.list, "list", false, "list the rows and their targets, run nothing")
	flag.BoolVar(&o.smoke, "smoke", false, "allow -runs >= 1 and -duration >= 3s to check that the rows run end to end: no verdicts")
	flag.StringVar(&o.md, "md", "", "also write the verdict table as dated Markdown to this file (for the README)")
	flag.Parse()
	if err := o.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "benchcmp:", err)
		os.Exit(exitUsage)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "benchcmp:", err)
		var inc errInconclusive
		if errors.As(err, &inc) {
			os.Exit(exitInconclusive)
		}
		os.Exit(exitFailed)
	}
}

func (o options) validate() error {
	switch {
	case o.smoke && (o.runs < 1 || o.dur < 3*time.Second):
		// testpmd's first per-second samples are startup (0 pps): a 1 s
		// run leaves it nothing to measure
		return errors.New("-smoke: -runs must be >= 1 and -duration >= 3s")
	case !o.smoke && o.runs < minRounds:
		// with fewer rounds no sign test can reach p <= 0.05 in a
		// useful way (7 of 7 is p = 0.008, 6 of 7 already 0.0625)
		return fmt.Errorf("-runs %d: a verdict needs >= %d paired rounds (or -smoke to check the rows run)", o.runs, minRounds)
	case !o.smoke && o.dur < 5*time.Second:
		// testpmd's per-second samples skip the first two (startup);
		// below 5 s too few are left and its median is biased low (seen:
		// a 3 s run reported testpmd at half its 5 s rate)
		return errors.New("-duration must be >= 5s for testpmd's median (or -smoke)")
	}
	return nil
}

// errInconclusive: nothing failed, but some rows could not be decided.
type errInconclusive struct{ rows []string }

func (e errInconclusive) Error() string {
	return "inconclusive (the rounds disagree; rerun with more, e.g. make bench BENCH_RUNS=15): " + strings.Join(e.rows, "; ")
}

func run(o options) error {
	tmp, err := os.MkdirTemp("", "rigbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	// testpmd's EAL runtime dir: even with --in-memory DPDK 22.11 makes
	// /var/run/dpdk/PREFIX and leaves it (with the default prefix, "rte",
	// shared with any other DPDK app of the host); rig removes its own
	prefix := fmt.Sprintf("benchcmp%d", os.Getpid())
	defer os.RemoveAll(filepath.Join("/var/run/dpdk", prefix))
	// the OvS row's ovs-vswitchd-dpdk makes the default one ("rte")
	defer removeIfMadeEmpty(defaultDPDKRuntimeDir)()
	ovs := &ovsCheck{rig: o.rig, testpmd: o.testpmd, dir: tmp, prefix: prefix}
	defer ovs.teardown()
	var rows []row
	for _, sc := range append(scenarios(o.rig, o.testpmd, tmp, prefix), ovs.scenario()) {
		if !selected(sc.name, o.only) {
			continue
		}
		if o.list {
			fmt.Printf("%s\t(vs %s, target %s)\n", sc.name, sc.refName, targetText(sc.target))
			continue
		}
		rows = append(rows, runScenario(sc, o.runs, o.dur))
	}
	if o.list {
		return nil
	}
	if len(rows) == 0 {
		return fmt.Errorf("-only %q selects no row (see -list)", o.only)
	}
	return report(rows, o)
}

// selected: only is empty, or name contains one of its comma-separated parts.
func selected(name, only string) bool {
	if only == "" {
		return true
	}
	for _, p := range strings.Split(only, ",") {
		if p = strings.TrimSpace(p); p != "" && strings.Contains(name, p) {
			return true
		}
	}
	return false
}

// defaultDPDKRuntimeDir is EAL's runtime dir under the default prefix.
const defaultDPDKRuntimeDir = "/var/run/dpdk/rte"

// removeIfMadeEmpty returns a func that removes dir if it did not exist
// now and is empty then (a dir with files may be another DPDK app's).
func removeIfMadeEmpty(dir string) func() {
	if _, err := os.Stat(dir); err == nil {
		return func() {}
	}
	return func() {
		if ents, err := os.ReadDir(dir); err == nil && len(ents) == 0 {
			_ = os.Remove(dir)
		}
	}
}
