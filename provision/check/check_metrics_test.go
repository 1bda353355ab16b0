package check

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"rig/ovs/diagnose"
	"rig/playbooks"
)

// parseMetrics parses text with Prometheus's own text-format parser
// (what node_exporter's textfile collector uses).
func parseMetrics(t testing.TB, text []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("expfmt: %v\n%s", err, text)
	}
	return fams
}

// promSample is one parsed series: its labels and value.
type promSample struct {
	labels map[string]string
	value  float64
}

func samplesOf(t testing.TB, fams map[string]*dto.MetricFamily, name string) []promSample {
	t.Helper()
	f, ok := fams[name]
	if !ok {
		return nil
	}
	if f.GetType() != dto.MetricType_GAUGE {
		t.Errorf("%s: type %s, want gauge", name, f.GetType())
	}
	if f.GetHelp() == "" {
		t.Errorf("%s: no HELP", name)
	}
	var out []promSample
	for _, m := range f.GetMetric() {
		l := map[string]string{}
		for _, lp := range m.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		out = append(out, promSample{l, m.GetGauge().GetValue()})
	}
	return out
}

func metricsText(t testing.TB, m CheckMetrics) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := m.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// twoRuns: 64 B passed, 1518 B measured but below min_mpps.
func twoRuns() *CheckResult {
	return &CheckResult{Topology: "through-ports", Bridge: "ovs_dpdk_br0", Ingress: "p0", Egress: "pf0hpf", Runs: []CheckRun{
		{FrameSize: 64, RxMpps: 0.512, RxGbps: 0.3441, LossPct: 31.5, Pass: true},
		{FrameSize: 1518, RxMpps: 0.08, RxGbps: 0.9728, LossPct: 0, Pass: false,
			Thresholds: []ThresholdVerdict{{Name: "min_mpps", Limit: 0.1, Measured: 0.08}}},
	}}
}

func TestCheckMetricsParsesWithLabelsAndFigures(t *testing.T) {
	spec := &playbooks.CheckSpec{Topology: "through-ports", Ports: []string{"p0", "pf0hpf"}, FrameSizes: []int{64, 1518}}
	at := time.Unix(1767225600, 250e6)
	text := metricsText(t, CheckMetrics{Spec: spec, Result: twoRuns(), Time: at})
	fams := parseMetrics(t, text)
	want := map[string][2]float64{ // family: 64 B value, 1518 B value
		"rig_check_mpps":       {0.512, 0.08},
		"rig_check_gbps":       {0.3441, 0.9728},
		"rig_check_loss_ratio": {0.315, 0},
		"rig_check_pass":       {1, 0},
		"rig_check_valid":      {1, 1},
	}
	for name, vals := range want {
		ss := samplesOf(t, fams, name)
		if len(ss) != 2 {
			t.Fatalf("%s: %d series, want 2 (one per frame size)\n%s", name, len(ss), text)
		}
		for i, size := range []string{"64", "1518"} {
			l := ss[i].labels
			if l["frame_size"] != size || l["bridge"] != "ovs_dpdk_br0" || l["topology"] != "through-ports" || l["ingress_port"] != "p0" || l["egress_port"] != "pf0hpf" {
				t.Errorf("%s series %d: labels %v", name, i, l)
			}
			if math.Abs(ss[i].value-vals[i]) > 1e-12 {
				t.Errorf("%s{frame_size=%s} = %v, want %v", name, size, ss[i].value, vals[i])
			}
		}
	}
	ts := samplesOf(t, fams, "rig_check_last_run_timestamp_seconds")
	if len(ts) != 1 || ts[0].value != 1767225600.25 || ts[0].labels["bridge"] != "ovs_dpdk_br0" || ts[0].labels["frame_size"] != "" {
		t.Errorf("timestamp: %+v", ts)
	}
	if len(fams) != 6 {
		t.Errorf("%d families, want 6:\n%s", len(fams), text)
	}
	for _, line := range []string{"# TYPE rig_check_mpps gauge", "# HELP rig_check_pass 1 when"} {
		if !strings.Contains(string(text), line) {
			t.Errorf("no line %q:\n%s", line, text)
		}
	}
}

// With its datapath flows read, the check's offload counts: one series
// each, labelled like the rest without a frame size; not read: none.
func TestCheckMetricsOffloadCounts(t *testing.T) {
	spec := &playbooks.CheckSpec{Topology: "through-ports", Ports: []string{"p0", "pf0hpf"}, FrameSizes: []int{64, 1518}}
	res := twoRuns()
	res.Offload = &CheckOffload{Mode: playbooks.OffloadPreferred, OffloadReport: diagnose.OffloadReport{Port: "p0", Flows: 3, Offloaded: 2, Partial: 1}, Pass: true}
	fams := parseMetrics(t, metricsText(t, CheckMetrics{Spec: spec, Result: res}))
	for name, want := range map[string]float64{"rig_check_datapath_flows": 3, "rig_check_offloaded_flows": 2, "rig_check_partially_offloaded_flows": 1} {
		ss := samplesOf(t, fams, name)
		if len(ss) != 1 || ss[0].value != want || ss[0].labels["ingress_port"] != "p0" || ss[0].labels["frame_size"] != "" {
			t.Errorf("%s: %+v, want one series = %v", name, ss, want)
		}
	}
	res.Offload.Error = "ovs-appctl: cannot connect"
	if fams := parseMetrics(t, metricsText(t, CheckMetrics{Spec: spec, Result: res})); fams["rig_check_datapath_flows"] != nil {
		t.Errorf("flows not read, yet %v", fams["rig_check_datapath_flows"])
	}
}

// A check that did not measure (not run, failed in setup) or measured
// something that cannot be right: pass 0, valid 0, and no figures.
func TestCheckMetricsWithoutValidMeasurement(t *testing.T) {
	ovsSpec := &playbooks.OVSSpec{Bridges: []playbooks.OVSBridge{{Name: "br-chk"}}}
	spec := &playbooks.CheckSpec{FrameSize: 128}
	fams := parseMetrics(t, metricsText(t, CheckMetrics{Spec: spec, OVS: ovsSpec}))
	for _, name := range []string{"rig_check_pass", "rig_check_valid"} {
		ss := samplesOf(t, fams, name)
		if len(ss) != 1 || ss[0].value != 0 || ss[0].labels["bridge"] != "br-chk" || ss[0].labels["topology"] != "through-bridge" || ss[0].labels["frame_size"] != "128" {
			t.Errorf("not run: %s = %+v, want one series 0 on br-chk, through-bridge, 128 B", name, ss)
		}
	}
	for _, name := range []string{"rig_check_mpps", "rig_check_loss_ratio", "rig_check_last_run_timestamp_seconds"} {
		if _, ok := fams[name]; ok {
			t.Errorf("not run: %s present", name)
		}
	}

	res := &CheckResult{Bridge: "br-chk", Ingress: "rig-chk-in", Egress: "rig-chk-out", Runs: []CheckRun{{FrameSize: 128, RxMpps: 9, Invalid: "received more than sent"}}}
	fams = parseMetrics(t, metricsText(t, CheckMetrics{Spec: spec, OVS: ovsSpec, Result: res, Time: time.Now()}))
	if _, ok := fams["rig_check_mpps"]; ok {
		t.Error("invalid measurement: rig_check_mpps present")
	}
	for _, name := range []string{"rig_check_pass", "rig_check_valid"} {
		if ss := samplesOf(t, fams, name); len(ss) != 1 || ss[0].value != 0 || ss[0].labels["ingress_port"] != "rig-chk-in" {
			t.Errorf("invalid measurement: %s = %+v", name, ss)
		}
	}
}

func TestCheckMetricsEscapesLabels(t *testing.T) {
	odd := "br\"0\\x\nnew\xff"
	spec := &playbooks.CheckSpec{Bridge: odd}
	fams := parseMetrics(t, metricsText(t, CheckMetrics{Spec: spec}))
	ss := samplesOf(t, fams, "rig_check_pass")
	if len(ss) != 1 || ss[0].labels["bridge"] != "br\"0\\x\nnew\uFFFD" {
		t.Errorf("bridge label %q, want the name back (invalid UTF-8 as U+FFFD)", ss[0].labels["bridge"])
	}
}

func TestWriteMetricsFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "rig.prom")
	if err := os.WriteFile(p, []byte("old\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	spec := &playbooks.CheckSpec{Topology: "through-ports", Ports: []string{"p0", "pf0hpf"}, FrameSizes: []int{64, 1518}}
	if err := WriteMetricsFile(p, CheckMetrics{Spec: spec, Result: twoRuns(), Time: time.Now()}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if ss := samplesOf(t, parseMetrics(t, b), "rig_check_mpps"); len(ss) != 2 {
		t.Errorf("file: %d mpps series\n%s", len(ss), b)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644 (node_exporter reads it as another user)", st.Mode().Perm())
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("dir holds %d entries, want rig.prom alone (no .tmp left)", len(ents))
	}
	missing := filepath.Join(dir, "no", "rig.prom")
	if err := WriteMetricsFile(missing, CheckMetrics{Spec: spec}); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("write into a missing dir: %v", err)
	}
}

func TestCheckMetricsPath(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ path, want string }{
		{filepath.Join(dir, "rig.prom"), ""},
		{"", "want a file path"},
		{dir + "/", "want a file path"},
		{dir, "is a directory"},
		{filepath.Join(dir, "nope", "rig.prom"), "does not exist"},
	} {
		err := CheckMetricsPath(c.path)
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("CheckMetricsPath(%q) = %v, want %q", c.path, err, c.want)
		}
	}
}

// FuzzCheckMetrics: whatever the names and figures, the text parses and
// gives the labels back.
func FuzzCheckMetrics(f *testing.F) {
	f.Add("br0", "p0", "pf0hpf", 0.5, 64)
	f.Add("a\"b\\c\nd", "", "x y", math.Inf(1), 1518)
	f.Add("\xff\xfe", "é", "\x00", math.NaN(), 9000)
	f.Fuzz(func(t *testing.T, bridge, in, out string, mpps float64, size int) {
		spec := &playbooks.CheckSpec{Bridge: bridge, FrameSize: size}
		res := &CheckResult{Bridge: bridge, Ingress: in, Egress: out, Runs: []CheckRun{{FrameSize: spec.Sizes()[0], RxMpps: mpps, Pass: true}}}
		fams := parseMetrics(t, metricsText(t, CheckMetrics{Spec: spec, Result: res, Time: time.Unix(1, 0)}))
		ss := samplesOf(t, fams, "rig_check_mpps")
		if len(ss) != 1 {
			t.Fatalf("%d mpps series", len(ss))
		}
		want := func(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
		if l := ss[0].labels; l["bridge"] != want(bridge) || l["ingress_port"] != want(in) || l["egress_port"] != want(out) {
			t.Errorf("labels %q, want bridge %q in %q out %q", l, bridge, in, out)
		}
		if v := ss[0].value; v != mpps && !(math.IsNaN(v) && math.IsNaN(mpps)) {
			t.Errorf("mpps %v, want %v", v, mpps)
		}
	})
}
