package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func rowOf(name string, target float64, paired []float64, errs ...string) row {
	return row{sc: scenario{name: name, refName: "testpmd", target: target}, paired: paired, errs: errs}
}

var seven = func(v float64) []float64 { return []float64{v, v, v, v, v, v, v} }

// What make bench exits with: a failed run or a NOT MET row fails it, an
// inconclusive one is exit 3, a row without a target never decides, and
// fewer than 7 rounds decide nothing (a failure unless -smoke).
func TestVerdictError(t *testing.T) {
	mixed := []float64{1.1, 1.0, 1.1, 1.0, 1.1, 1.0, 1.1}
	for _, tc := range []struct {
		name         string
		rows         []row
		smoke        bool
		want         string // "" nil; else a substring
		inconclusive bool
	}{
		{"all met", []row{rowOf("a", 1.05, seven(1.2)), rowOf("info", 0, seven(0.5))}, false, "", false},
		{"not met", []row{rowOf("a", 1.05, seven(1.2)), rowOf("b", 1.3, seven(1.1))}, false, "target NOT MET: b", false},
		{"inconclusive", []row{rowOf("a", 1.05, mixed)}, false, "inconclusive", true},
		{"not met wins over inconclusive", []row{rowOf("a", 1.05, mixed), rowOf("b", 1.3, seven(1.1))}, false, "NOT MET: b", false},
		{"a failed round", []row{rowOf("a", 1.05, seven(1.2)[:6], "round 3, rig: boom")}, false, "run(s) failed: a", false},
		{"too few rounds", []row{rowOf("a", 1.05, seven(1.2)[:3])}, false, "a (not judged (n=3 < 7))", false},
		{"smoke: too few rounds is fine", []row{rowOf("a", 1.05, seven(1.2)[:1])}, true, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outs := make([]outcome, len(tc.rows))
			for i, r := range tc.rows {
				outs[i] = decide(r)
			}
			err := verdictError(tc.rows, outs, tc.smoke)
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
			var inc errInconclusive
			if errors.As(err, &inc) != tc.inconclusive {
				t.Errorf("inconclusive %v, want %v", errors.As(err, &inc), tc.inconclusive)
			}
		})
	}
}

// The README's table: dated, one line per row with its n, median, spread,
// rounds above target, p-values and verdict.
func TestWriteMarkdown(t *testing.T) {
	rows := []row{rowOf("gen 64 B, 1 flow", 1.3, []float64{1.41, 1.38, 1.44, 1.36, 1.40, 1.39, 1.42}), rowOf("unpinned", 0, seven(1))}
	outs := []outcome{decide(rows[0]), decide(rows[1])}
	p := filepath.Join(t.TempDir(), "bench.md")
	if err := writeMarkdown(p, rows, outs, options{runs: 7, dur: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{"### make bench, " + time.Now().Format("2006-01-02") + " (BENCH_RUNS=7, BENCH_DURATION=5s;",
		"| gen 64 B, 1 flow | testpmd | >= 1.30x | 7 | 1.400 | 1.360..1.440 | 1.385..1.415 | 7/7 | 0.00781 | 1 | MET |",
		"| unpinned | testpmd | - | 7 | 1.000 | 1.000..1.000 | 1.000..1.000 | - | - | - | info |"} {
		if !strings.Contains(s, want) {
			t.Errorf("markdown lacks %q:\n%s", want, s)
		}
	}
}
