package main

import (
	"math"
	"strings"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }

// The sign test's verdicts, p-values and spread, by hand: p is
// sum_{i>=k} C(n,i) / 2^n.
func TestJudgeSignTest(t *testing.T) {
	for _, tc := range []struct {
		name               string
		ratios             []float64
		target             float64
		above, below, ties int
		pAbove, pBelow     float64
		verdict            string
		median, min, max   float64
		q1, q3             float64
	}{
		{name: "all won", ratios: []float64{1.40, 1.35, 1.42, 1.38, 1.31, 1.45, 1.39}, target: 1.3,
			above: 7, pAbove: 1.0 / 128, pBelow: 1, verdict: verdictMet,
			median: 1.39, min: 1.31, max: 1.45, q1: 1.365, q3: 1.41},
		{name: "all lost", ratios: []float64{0.91, 0.88, 0.95, 0.90, 0.93, 0.87, 0.92}, target: 1.15,
			below: 7, pAbove: 1, pBelow: 1.0 / 128, verdict: verdictNotMet,
			median: 0.91, min: 0.87, max: 0.95, q1: 0.89, q3: 0.925},
		{name: "6 of 7 is not enough", ratios: []float64{1.1, 1.1, 1.1, 1.1, 1.1, 1.1, 1.0}, target: 1.05,
			above: 6, below: 1, pAbove: 8.0 / 128, pBelow: 127.0 / 128, verdict: verdictInconclusive,
			median: 1.1, min: 1.0, max: 1.1, q1: 1.1, q3: 1.1},
		{name: "mixed (the README's 1.047 vs 1.05)", ratios: []float64{1.02, 1.08, 1.04, 1.06, 1.047, 1.03, 1.07}, target: 1.05,
			above: 3, below: 4, pAbove: 99.0 / 128, pBelow: 64.0 / 128, verdict: verdictInconclusive,
			median: 1.047, min: 1.02, max: 1.08, q1: 1.035, q3: 1.065},
		{name: "9 of 10", ratios: []float64{2, 2, 2, 2, 2, 2, 2, 2, 2, 0.5}, target: 1,
			above: 9, below: 1, pAbove: 11.0 / 1024, pBelow: 1023.0 / 1024, verdict: verdictMet,
			median: 2, min: 0.5, max: 2, q1: 2, q3: 2},
		{name: "8 of 10", ratios: []float64{2, 2, 2, 2, 2, 2, 2, 2, 0.5, 0.5}, target: 1,
			above: 8, below: 2, pAbove: 56.0 / 1024, pBelow: 1013.0 / 1024, verdict: verdictInconclusive,
			median: 2, min: 0.5, max: 2, q1: 2, q3: 2},
		{name: "a tie leaves the test", ratios: []float64{0.9, 0.95, 0.9, 0.92, 0.94, 0.91, 1.0}, target: 1,
			below: 6, ties: 1, pAbove: 1, pBelow: 1.0 / 64, verdict: verdictNotMet,
			median: 0.92, min: 0.9, max: 1.0, q1: 0.905, q3: 0.945},
		{name: "all ties", ratios: []float64{1, 1, 1, 1, 1, 1, 1}, target: 1,
			ties: 7, pAbove: 1, pBelow: 1, verdict: verdictInconclusive,
			median: 1, min: 1, max: 1, q1: 1, q3: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, err := judge(tc.ratios, tc.target)
			if err != nil {
				t.Fatal(err)
			}
			if j.N != len(tc.ratios) || j.Above != tc.above || j.Below != tc.below || j.Ties != tc.ties {
				t.Errorf("n %d above %d below %d ties %d, want %d %d %d %d", j.N, j.Above, j.Below, j.Ties, len(tc.ratios), tc.above, tc.below, tc.ties)
			}
			if !near(j.PAbove, tc.pAbove) || !near(j.PBelow, tc.pBelow) {
				t.Errorf("p above %v below %v, want %v %v", j.PAbove, j.PBelow, tc.pAbove, tc.pBelow)
			}
			if j.Verdict != tc.verdict {
				t.Errorf("verdict %q, want %q", j.Verdict, tc.verdict)
			}
			if !near(j.Median, tc.median) || j.Min != tc.min || j.Max != tc.max || !near(j.Q1, tc.q1) || !near(j.Q3, tc.q3) {
				t.Errorf("median %v min %v max %v IQR %v..%v, want %v %v %v %v..%v", j.Median, j.Min, j.Max, j.Q1, j.Q3, tc.median, tc.min, tc.max, tc.q1, tc.q3)
			}
		})
	}
}

// No verdict rests on fewer than 7 rounds, on a ratio that is not a
// positive number, or on a target that is not one.
func TestJudgeRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ratios []float64
		target float64
		want   string
	}{
		{"6 rounds", []float64{2, 2, 2, 2, 2, 2}, 1, "6 paired round(s), a verdict needs at least 7"},
		{"no rounds", nil, 1, "0 paired round(s)"},
		{"zero ratio", []float64{2, 2, 2, 0, 2, 2, 2}, 1, "paired ratio 0"},
		{"NaN ratio", []float64{2, 2, 2, math.NaN(), 2, 2, 2}, 1, "paired ratio NaN"},
		{"infinite ratio", []float64{2, 2, 2, math.Inf(1), 2, 2, 2}, 1, "paired ratio +Inf"},
		{"no target", []float64{2, 2, 2, 2, 2, 2, 2}, 0, "target 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, err := judge(tc.ratios, tc.target)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("judge = %+v, %v; want error %q", j, err, tc.want)
			}
		})
	}
}

// The binomial tail against its definition, and the rounds a decision
// needs at the sizes make bench uses.
func TestBinomTailAndRoundsNeeded(t *testing.T) {
	for n := 0; n <= 30; n++ {
		// P(X >= k) + P(X <= k-1) = 1 and P(X <= k-1) = P(X >= n-k+1)
		for k := 0; k <= n+1; k++ {
			if s := binomTail(n, k) + binomTail(n, n-k+1); !near(s, 1) {
				t.Fatalf("n %d k %d: tails sum to %v", n, k, s)
			}
		}
	}
	if p := binomTail(20, 15); !near(p, 21700.0/1048576) {
		t.Errorf("P(X>=15 | n=20) = %v, want 21700/2^20", p)
	}
	for n, want := range map[int]int{4: 0, 5: 5, 7: 7, 10: 9, 15: 12, 20: 15} {
		if got := roundsNeeded(n); got != want {
			t.Errorf("roundsNeeded(%d) = %d, want %d", n, got, want)
		}
	}
}
