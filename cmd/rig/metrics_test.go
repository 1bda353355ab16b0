package main

import (
	"os"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// promGauges parses a --metrics-file with Prometheus's text-format parser
// and returns each family's gauges by their labels
// ("bridge=…,egress_port=…,…", sorted by label name).
func promGauges(t *testing.T, path string) map[string]map[string]float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("metrics file: %v", err)
	}
	defer f.Close()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(f)
	if err != nil {
		t.Fatalf("metrics file %s: %v", path, err)
	}
	out := map[string]map[string]float64{}
	for name, fam := range fams {
		if fam.GetType() != dto.MetricType_GAUGE {
			t.Errorf("%s: %s, want gauge", name, fam.GetType())
		}
		out[name] = map[string]float64{}
		for _, m := range fam.GetMetric() {
			var ls []string
			for _, l := range m.GetLabel() {
				ls = append(ls, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(ls)
			out[name][strings.Join(ls, ",")] = m.GetGauge().GetValue()
		}
	}
	if _, err := os.Stat(path + ".tmp"); err == nil {
		t.Errorf("%s.tmp left behind", path)
	}
	return out
}
