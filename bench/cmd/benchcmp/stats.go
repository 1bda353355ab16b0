package main

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"sort"
)

// minRounds is the fewest paired rounds a verdict rests on. With 7, only 7
// of 7 rounds on one side of the target reach p <= 0.05 (1/128 = 0.008;
// 6 of 7 is 8/128 = 0.0625); with 10, 9 of 10 (0.011).
const minRounds = 7

// alpha is the sign test's level: MET or NOT MET only when a coin toss
// would give so lopsided a count with probability at most alpha.
const alpha = 0.05

// Verdicts.
const (
	verdictMet          = "MET"
	verdictNotMet       = "NOT MET"
	verdictInconclusive = "inconclusive"
)

// spreadStats describes the paired ratios of one row.
type spreadStats struct {
	N                int
	Median, Min, Max float64
	Q1, Q3           float64 // interquartile range (linear interpolation between ranks)
}

// judgement is a row's verdict from its paired ratios and a target.
type judgement struct {
	spreadStats
	Target float64
	// rounds whose paired ratio rig/reference was above, below, equal to
	// the target (ties are left out of the sign test, as usual)
	Above, Below, Ties int
	// one-sided sign test p-values: PAbove is P(at least Above of
	// Above+Below rounds above | each round a fair coin); small means the
	// ratio exceeds the target. PBelow likewise for below.
	PAbove, PBelow float64
	Verdict        string
}

// summarize is n, median, min, max and quartiles of the ratios.
func summarize(ratios []float64) (spreadStats, error) {
	if len(ratios) == 0 {
		return spreadStats{}, errors.New("no paired rounds")
	}
	s := append([]float64(nil), ratios...)
	for _, r := range s {
		if !(r > 0) || math.IsInf(r, 0) {
			return spreadStats{}, fmt.Errorf("paired ratio %v: want a positive finite number", r)
		}
	}
	sort.Float64s(s)
	return spreadStats{N: len(s), Median: quantile(s, 0.5), Min: s[0], Max: s[len(s)-1],
		Q1: quantile(s, 0.25), Q3: quantile(s, 0.75)}, nil
}

// quantile of sorted s, linear between closest ranks (R's type 7).
func quantile(s []float64, q float64) float64 {
	pos := q * float64(len(s)-1)
	i := int(pos)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (pos-float64(i))*(s[i+1]-s[i])
}

// judge is the sign test of the paired ratios against target (> 0): MET
// when the rounds say the ratio is above it (p <= alpha), NOT MET when
// they say it is below with the same confidence, inconclusive otherwise.
// Fewer than minRounds rounds are refused: no verdict can rest on them.
func judge(ratios []float64, target float64) (judgement, error) {
	if len(ratios) < minRounds {
		return judgement{}, fmt.Errorf("%d paired round(s), a verdict needs at least %d", len(ratios), minRounds)
	}
	if !(target > 0) || math.IsInf(target, 0) {
		return judgement{}, fmt.Errorf("target %v: want a positive ratio", target)
	}
	st, err := summarize(ratios)
	if err != nil {
		return judgement{}, err
	}
	j := judgement{spreadStats: st, Target: target}
	for _, r := range ratios {
		switch {
		case r > target:
			j.Above++
		case r < target:
			j.Below++
		default:
			j.Ties++
		}
	}
	m := j.Above + j.Below
	j.PAbove, j.PBelow = binomTail(m, j.Above), binomTail(m, j.Below)
	switch {
	case j.PAbove <= alpha:
		j.Verdict = verdictMet
	case j.PBelow <= alpha:
		j.Verdict = verdictNotMet
	default:
		j.Verdict = verdictInconclusive
	}
	return j, nil
}

// binomTail is P(X >= k) for X ~ Binomial(n, 1/2), exactly (n = 0: 1).
func binomTail(n, k int) float64 {
	if k <= 0 {
		return 1
	}
	if k > n {
		return 0
	}
	sum := new(big.Int)
	c := new(big.Int)
	for i := k; i <= n; i++ {
		sum.Add(sum, c.Binomial(int64(n), int64(i)))
	}
	p, _ := new(big.Rat).SetFrac(sum, new(big.Int).Lsh(big.NewInt(1), uint(n))).Float64()
	return p
}

// roundsNeeded is the fewest rounds of n (no ties) on one side of the
// target that make the sign test decide (p <= alpha); 0 when none can.
func roundsNeeded(n int) int {
	for k := 0; k <= n; k++ {
		if binomTail(n, k) <= alpha {
			return k
		}
	}
	return 0
}
