package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"rig/bench"
	"rig/internal/devargs"
)

// outcome is what a row's rounds say.
type outcome struct {
	st      spreadStats
	j       *judgement // nil: no sign test (info row, too few rounds)
	verdict string
}

// decide judges a row: info rows (no target) and rows with fewer than
// minRounds paired rounds get no verdict.
func decide(r row) outcome {
	st, _ := summarize(r.paired) // zero when no round paired
	switch {
	case r.sc.target <= 0:
		return outcome{st: st, verdict: "info"}
	case len(r.paired) < minRounds:
		return outcome{st: st, verdict: fmt.Sprintf("not judged (n=%d < %d)", len(r.paired), minRounds)}
	}
	j, err := judge(r.paired, r.sc.target)
	if err != nil {
		return outcome{st: st, verdict: "not judged: " + err.Error()}
	}
	return outcome{st: st, j: &j, verdict: j.Verdict}
}

// report prints the rates and the verdicts, writes the Markdown table when
// asked, and returns what make bench exits with.
func report(rows []row, o options) error {
	printRates(os.Stdout, rows)
	fmt.Println()
	outs := make([]outcome, len(rows))
	for i, r := range rows {
		outs[i] = decide(r)
	}
	printVerdicts(os.Stdout, rows, outs)
	fmt.Printf("(%d paired round(s) of %v runs per row, the order alternating each round; cores: EAL -l 0-1, one forwarding lcore on CPU 1)\n", o.runs, o.dur)
	fmt.Printf("(ratio: rig/reference per round; above target: rounds whose ratio exceeds the row's target; p(>), p(<): one-sided sign test,"+
		" the chance of so many rounds on that side if each were a coin toss; MET needs p(>) <= %.2f (n=7: 7 of 7, n=10: 9 of 10), NOT MET p(<) <= %.2f; otherwise inconclusive)\n",
		alpha, alpha)
	if o.md != "" {
		if err := writeMarkdown(o.md, rows, outs, o); err != nil {
			return err
		}
	}
	return verdictError(rows, outs, o.smoke)
}

// printRates: the median Mpps of each tool, per port and summed.
func printRates(w io.Writer, rows []row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "row\tport\treference\tref Mpps\trig Mpps\trig/ref (medians)\t\n")
	for _, r := range rows {
		var refSum, rgSum float64
		for p, name := range r.sc.ports {
			t, g := medianAt(r.ref, p), medianAt(r.rg, p)
			refSum, rgSum = refSum+t, rgSum+g
			if len(r.sc.ports) > 1 {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%.3f\t%.3f\t%s\t\n", r.sc.name, portLabel(name), r.sc.refName, t, g, ratio(g, t))
			}
		}
		fmt.Fprintf(tw, "%s\tall\t%s\t%.3f\t%.3f\t%s\t\n", r.sc.name, r.sc.refName, refSum, rgSum, ratio(rgSum, refSum))
	}
	tw.Flush()
}

// verdictCells are a row's cells in the verdict table (text and Markdown).
func verdictCells(r row, o outcome) []string {
	c := []string{r.sc.name, r.sc.refName, targetText(r.sc.target), fmt.Sprint(o.st.N), "-", "-", "-", "-", "-", "-", o.verdict}
	if o.st.N > 0 {
		c[4] = fmt.Sprintf("%.3f", o.st.Median)
		c[5] = fmt.Sprintf("%.3f..%.3f", o.st.Min, o.st.Max)
		c[6] = fmt.Sprintf("%.3f..%.3f", o.st.Q1, o.st.Q3)
	}
	if j := o.j; j != nil {
		c[7] = fmt.Sprintf("%d/%d", j.Above, j.N)
		if j.Ties > 0 {
			c[7] += fmt.Sprintf(" (%d tie)", j.Ties)
		}
		c[8], c[9] = fmt.Sprintf("%.3g", j.PAbove), fmt.Sprintf("%.3g", j.PBelow)
	}
	return c
}

var verdictHeader = []string{"row", "reference", "target", "n", "ratio (median)", "min..max", "IQR", "above target", "p(>)", "p(<)", "verdict"}

func printVerdicts(w io.Writer, rows []row, outs []outcome) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(verdictHeader, "\t")+"\t")
	for i, r := range rows {
		fmt.Fprintln(tw, strings.Join(verdictCells(r, outs[i]), "\t")+"\t")
	}
	tw.Flush()
}

// writeMarkdown writes the verdict table for the README, dated, with the
// run's parameters and the host it ran on.
func writeMarkdown(path string, rows []row, outs []outcome, o options) error {
	var b strings.Builder
	fmt.Fprintf(&b, "### make bench, %s (BENCH_RUNS=%d, BENCH_DURATION=%v; %s)\n\n", time.Now().Format("2006-01-02"), o.runs, o.dur, hostLine())
	fmt.Fprintf(&b, "| %s |\n|%s\n", strings.Join(verdictHeader, " | "), strings.Repeat("---|", len(verdictHeader)))
	for i, r := range rows {
		fmt.Fprintf(&b, "| %s |\n", strings.Join(verdictCells(r, outs[i]), " | "))
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("-md: %w", err)
	}
	return nil
}

// hostLine: CPUs, CPU model and kernel, as the figures depend on them.
func hostLine() string {
	s := fmt.Sprintf("%d CPUs", runtime.NumCPU())
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				s += ", " + strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		s += ", Linux " + strings.TrimSpace(string(b))
	}
	return s
}

// verdictError: failed runs and NOT MET rows fail make bench; otherwise
// inconclusive rows make it exit 3 (errInconclusive).
func verdictError(rows []row, outs []outcome, smoke bool) error {
	var failed, notMet, inconclusive []string
	for i, r := range rows {
		for _, e := range r.errs {
			fmt.Printf("error: %s: %s\n", r.sc.name, e)
		}
		if len(r.errs) > 0 {
			failed = append(failed, r.sc.name)
		}
		switch v := outs[i].verdict; {
		case v == verdictNotMet:
			notMet = append(notMet, r.sc.name)
		case v == verdictInconclusive:
			inconclusive = append(inconclusive, r.sc.name)
		case strings.HasPrefix(v, "not judged") && !smoke && len(r.errs) == 0:
			failed = append(failed, r.sc.name+" ("+v+")")
		}
	}
	switch {
	case len(failed) > 0:
		return fmt.Errorf("run(s) failed: %s", strings.Join(failed, "; "))
	case len(notMet) > 0:
		return fmt.Errorf("target NOT MET: %s", strings.Join(notMet, "; "))
	case len(inconclusive) > 0:
		return errInconclusive{rows: inconclusive}
	}
	return nil
}

func targetText(t float64) string {
	if t <= 0 {
		return "-"
	}
	return fmt.Sprintf(">= %.2fx", t)
}

func portLabel(s string) string { return devargs.Device(s) }

func ratio(a, b float64) string {
	if b <= 0 || math.IsNaN(a) {
		return "-"
	}
	return fmt.Sprintf("%.3f", a/b)
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
