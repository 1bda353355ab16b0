package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A run's events: a passing test's output is dropped, a failing test's is
// printed whole, package lines and build errors pass through; the slowest
// top-level tests come out longest first, subtests not counted apart.
func TestSummary(t *testing.T) {
	var b, log bytes.Buffer
	s := newSummary(&b, &log)
	for _, e := range []event{
		{Action: "build-output", ImportPath: "rig/x [rig/x.test]", Output: "x.go:1:1: syntax error\n"},
		{Action: "output", Package: "rig/a", Test: "TestFast", Output: "=== RUN   TestFast\n"},
		{Action: "output", Package: "rig/a", Test: "TestFast", Output: "    a_test.go:3: noise\n"},
		{Action: "pass", Package: "rig/a", Test: "TestFast", Elapsed: 0.1},
		{Action: "output", Package: "rig/a", Test: "TestSlow/sub", Output: "    a_test.go:9: inside\n"},
		{Action: "fail", Package: "rig/a", Test: "TestSlow/sub", Elapsed: 7},
		{Action: "output", Package: "rig/a", Test: "TestSlow", Output: "--- FAIL: TestSlow (7.50s)\n"},
		{Action: "fail", Package: "rig/a", Test: "TestSlow", Elapsed: 7.5},
		{Action: "skip", Package: "rig/a", Test: "TestSkipped", Elapsed: 0},
		{Action: "output", Package: "rig/a", Output: "FAIL\n"},
		{Action: "output", Package: "rig/a", Output: "FAIL\trig/a\t7.6s\n"},
		{Action: "fail", Package: "rig/a", Elapsed: 7.6},
		{Action: "output", Package: "rig/b", Test: "TestWaited", Output: "    priv.go:40: hostlock: waited 11.5s for rig-privileged\n"},
		{Action: "output", Package: "rig/b", Test: "TestWaited/sub", Output: "    priv.go:40: hostlock: waited 1.0s for rig-hugetest\n"},
		{Action: "pass", Package: "rig/b", Test: "TestWaited/sub", Elapsed: 1},
		{Action: "pass", Package: "rig/b", Test: "TestWaited", Elapsed: 13},
		{Action: "pass", Package: "rig/b", Test: "TestMiddle", Elapsed: 2},
		{Action: "output", Package: "rig/b", Output: "ok  \trig/b\t2.1s\n"},
	} {
		raw, _ := json.Marshal(e)
		var back event
		if err := json.Unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		s.add(back)
	}
	s.report(0)
	out := b.String()
	for _, want := range []string{"x.go:1:1: syntax error", "a_test.go:9: inside", "--- FAIL: TestSlow (7.50s)", "FAIL\trig/a\t7.6s", "ok  \trig/b\t2.1s",
		"the 5 slowest tests:\n      7.5s  fail  rig/a TestSlow\n      2.0s  pass  rig/b TestMiddle\n" +
			"      0.5s  pass  rig/b TestWaited (and 12.5s waiting for another test binary's lock)\n      0.1s  pass  rig/a TestFast\n      0.0s  skip  rig/a TestSkipped\n",
		"failed: rig/a TestSlow/sub, rig/a TestSlow", "go test: 5 tests in"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "noise") || strings.Contains(out, "=== RUN") {
		t.Errorf("a passing test's output was printed:\n%s", out)
	}
	if l := log.String(); !strings.Contains(l, "=== RUN   TestFast\n    a_test.go:3: noise\n") || !strings.Contains(l, "x.go:1:1: syntax error") {
		t.Errorf("the log lacks a passing test's output or the build error:\n%s", l)
	}
}

// A dir made during the run goes when empty; one that was there stays, and
// so does one made with something in it.
func TestKeepNoDirMade(t *testing.T) {
	d := filepath.Join(t.TempDir(), "dpdk")
	remove := keepNoDirMade(d)
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if !remove() {
		t.Fatalf("%s made during the run, empty: not removed", d)
	}
	if _, err := os.Lstat(d); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s still there: %v", d, err)
	}
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if keepNoDirMade(d)() {
		t.Errorf("%s was there as the run began: removed", d)
	}
	remove = keepNoDirMade(filepath.Join(d, "x"))
	if err := os.MkdirAll(filepath.Join(d, "x", "rte"), 0o755); err != nil {
		t.Fatal(err)
	}
	if remove() {
		t.Errorf("%s/x holds a runtime dir: removed", d)
	}
}
