// Command testsummary runs `go test -json` with the arguments it is given
// and prints what a plain `go test` prints (each package's result line,
// the whole output of a failed test, build errors), then the ten slowest
// tests of the run and the wall time. With -log FILE (its first argument)
// it also writes every test's whole output there, as go test -v prints it,
// passing tests' too. It exits with go test's status. make test runs the
// suite through it.
//
// When DPDK's runtime base, /var/run/dpdk, was absent as the run began (a
// fresh host has none) and is empty at its end, testsummary removes it and
// says so: each package's TestMain removes it only when it was absent as
// that package began (testutil.KeepNoRuntimeBase), and with go test -p 2 a
// package that began while another package's test had made it leaves it.
//
//	go run ./internal/cmd/testsummary [-log FILE] [go test flags] [packages]
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Elapsed    float64
	Output     string
	ImportPath string
}

// timing is one finished test; waited: the seconds of it spent waiting
// for another test binary's host lock (testutil.WaitedFormat).
type timing struct {
	pkg, test string
	secs      float64
	waited    float64
	outcome   string
}

// waitedRe matches testutil.WaitedFormat's lines (as t.Logf prints them).
var waitedRe = regexp.MustCompile(`hostlock: waited ([0-9.]+)s for (\S+)`)

// waitedIn is the seconds the output says its test waited for locks.
func waitedIn(lines []string) float64 {
	w := 0.0
	for _, l := range lines {
		if m := waitedRe.FindStringSubmatch(l); m != nil {
			v, _ := strconv.ParseFloat(m[1], 64)
			w += v
		}
	}
	return w
}

// summary collects a run's output and timings from its events.
type summary struct {
	w       io.Writer
	log     io.Writer           // every output line (-log), or io.Discard
	buf     map[string][]string // package/test -> output so far
	waited  map[string]float64  // package/top-level test -> seconds waited for locks so far
	timings []timing
	failed  []string
}

func newSummary(w, log io.Writer) *summary {
	return &summary{w: w, log: log, buf: map[string][]string{}, waited: map[string]float64{}}
}

func (s *summary) add(e event) {
	key := e.Package + "/" + e.Test
	if e.Action == "output" || e.Action == "build-output" {
		fmt.Fprint(s.log, e.Output)
	}
	switch e.Action {
	case "build-output":
		fmt.Fprint(s.w, e.Output)
	case "output":
		if e.Test == "" {
			// the package's own lines: its result line, a panic outside a test, coverage
			if !strings.HasPrefix(e.Output, "=== ") && !strings.HasPrefix(e.Output, "PASS\n") && e.Output != "FAIL\n" {
				fmt.Fprint(s.w, e.Output)
			}
			return
		}
		s.buf[key] = append(s.buf[key], e.Output)
	case "pass", "fail", "skip":
		if e.Test == "" {
			return
		}
		if e.Action == "fail" {
			fmt.Fprint(s.w, strings.Join(s.buf[key], ""))
			s.failed = append(s.failed, e.Package+" "+e.Test)
		}
		top, _, _ := strings.Cut(e.Test, "/")
		s.waited[e.Package+"/"+top] += waitedIn(s.buf[key]) // a subtest's lines are its own
		if top == e.Test {                                  // subtests are inside their test's time
			s.timings = append(s.timings, timing{e.Package, e.Test, e.Elapsed, s.waited[key], e.Action})
			delete(s.waited, key)
		}
		delete(s.buf, key)
	}
}

// slowest is the n longest tests, longest first, by their time without
// what they waited for another test binary's lock.
func (s *summary) slowest(n int) []timing {
	t := append([]timing(nil), s.timings...)
	sort.SliceStable(t, func(i, j int) bool { return t[i].secs-t[i].waited > t[j].secs-t[j].waited })
	if len(t) > n {
		t = t[:n]
	}
	return t
}

func (s *summary) report(wall time.Duration) {
	fmt.Fprintf(s.w, "\nthe %d slowest tests:\n", len(s.slowest(10)))
	for _, t := range s.slowest(10) {
		fmt.Fprintf(s.w, "  %7.1fs  %-4s  %s %s", t.secs-t.waited, t.outcome, t.pkg, t.test)
		if t.waited > 0 {
			fmt.Fprintf(s.w, " (and %.1fs waiting for another test binary's lock)", t.waited)
		}
		fmt.Fprintln(s.w)
	}
	if len(s.failed) > 0 {
		fmt.Fprintf(s.w, "failed: %s\n", strings.Join(s.failed, ", "))
	}
	fmt.Fprintf(s.w, "go test: %d tests in %s\n", len(s.timings), wall.Round(time.Second))
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	start := time.Now()
	log := io.Discard
	if len(args) >= 2 && args[0] == "-log" {
		f, err := os.Create(args[1])
		if err != nil {
			fmt.Fprintf(stderr, "testsummary: -log: %v\n", err)
			return 2
		}
		defer f.Close()
		log, args = f, args[2:]
	}
	cmd := exec.Command("go", append([]string{"test", "-json"}, args...)...)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintf(stderr, "testsummary: %v\n", err)
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "testsummary: go test: %v\n", err)
		return 1
	}
	removeBase := keepNoDirMade(dpdkRuntimeBase)
	s := newSummary(stdout, log)
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Action == "" {
			fmt.Fprintln(stdout, sc.Text()) // not an event: go test's own line
			continue
		}
		s.add(e)
	}
	err = cmd.Wait()
	if removeBase() {
		fmt.Fprintf(stdout, "removed %s: absent when the run began, empty at its end\n", dpdkRuntimeBase)
	}
	s.report(time.Since(start))
	if f, ok := log.(*os.File); ok {
		fmt.Fprintf(stdout, "every test's output: %s\n", f.Name())
	}
	var xe *exec.ExitError
	switch {
	case errors.As(err, &xe):
		return xe.ExitCode()
	case err != nil:
		fmt.Fprintf(stderr, "testsummary: go test: %v\n", err)
		return 1
	}
	return 0
}

// dpdkRuntimeBase is where DPDK's EAL makes its runtime dirs (as root).
const dpdkRuntimeBase = "/var/run/dpdk"

// keepNoDirMade returns a func that removes dir when it did not exist as
// keepNoDirMade was called and is empty now, reporting whether it did.
func keepNoDirMade(dir string) func() bool {
	if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
		return func() bool { return false }
	}
	return func() bool { return os.Remove(dir) == nil }
}
