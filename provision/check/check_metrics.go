package check

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"rig/playbooks"
)

// CheckMetrics is the check's outcome in the Prometheus text exposition
// format (version 0.0.4), for node_exporter's textfile collector: one
// series per frame size, labelled with the bridge, the topology, the
// ingress and egress ports and the frame size. A frame size the check did
// not measure (it was not run, or failed before that run) has only
// rig_check_pass 0 and rig_check_valid 0, so an alert on pass == 0 fires
// whatever went wrong.
type CheckMetrics struct {
	Spec   *playbooks.CheckSpec // the playbook's check section
	OVS    *playbooks.OVSSpec   // the playbook's ovs section (the default bridge), may be nil
	Result *CheckResult         // what was measured; nil when the check did not get that far
	Time   time.Time            // when the check ended
}

// metricFamily is one metric's name, help and type.
type metricFamily struct{ name, help string }

// The check's metrics; all are gauges.
var (
	metricMpps = metricFamily{"rig_check_mpps", "Frames per second received through the bridge during the check's measured interval, in millions."}
	metricGbps = metricFamily{"rig_check_gbps", "Bits per second received through the bridge during the check's measured interval (Ethernet frames with FCS, without preamble and inter-frame gap), in Gbit/s."}
	metricLoss = metricFamily{"rig_check_loss_ratio", "Frames rig sent but did not receive over the measured interval, as a fraction of those sent (0 to 1)."}
	metricPass = metricFamily{"rig_check_pass", "1 when the check's run for this frame size met every threshold with a valid measurement, else 0 (also when it did not run)."}
	metricOK   = metricFamily{"rig_check_valid", "1 when the run for this frame size produced a measurement that can be right, else 0 (not run, failed before measuring, or invalid)."}
	metricTime = metricFamily{"rig_check_last_run_timestamp_seconds", "Unix time at which rig's check ended."}
	// check.offload (not off): the datapath flows in at the ingress port
	metricDPFlows   = metricFamily{"rig_check_datapath_flows", "Datapath flows in at the check's ingress port after its traffic (ovs-appctl dpctl/dump-flows -m; recirculated ones not counted)."}
	metricOffloaded = metricFamily{"rig_check_offloaded_flows", "Of rig_check_datapath_flows, those fully offloaded to the NIC (offloaded:yes)."}
	metricPartial   = metricFamily{"rig_check_partially_offloaded_flows", "Of rig_check_datapath_flows, those offloaded in part (offloaded:partial: the match, not the actions)."}
)

// series is one labelled sample.
type series struct {
	labels string
	value  float64
}

// WriteTo writes the metrics: HELP and TYPE lines, then the samples of
// each family.
func (m CheckMetrics) WriteTo(w io.Writer) (int64, error) {
	var b bytes.Buffer
	fams := m.samples()
	for _, f := range []metricFamily{metricMpps, metricGbps, metricLoss, metricPass, metricOK, metricDPFlows, metricOffloaded, metricPartial, metricTime} {
		if len(fams[f.name]) == 0 {
			continue
		}
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", f.name, escapeHelp(f.help), f.name)
		for _, s := range fams[f.name] {
			fmt.Fprintf(&b, "%s{%s} %s\n", f.name, s.labels, strconv.FormatFloat(s.value, 'g', -1, 64))
		}
	}
	n, err := w.Write(b.Bytes())
	return int64(n), err
}

// samples are the series of each family, by name.
func (m CheckMetrics) samples() map[string][]series {
	out := map[string][]series{}
	add := func(f metricFamily, labels string, v float64) { out[f.name] = append(out[f.name], series{labels, v}) }
	base := m.baseLabels()
	runs := map[int]*CheckRun{}
	if m.Result != nil {
		for i := range m.Result.Runs {
			runs[m.Result.Runs[i].FrameSize] = &m.Result.Runs[i]
		}
		for _, r := range m.Result.searchRuns() {
			runs[r.FrameSize] = r
		}
	}
	for _, size := range m.Spec.Sizes() {
		l := base + `,frame_size="` + strconv.Itoa(size) + `"`
		run := runs[size]
		if run == nil {
			add(metricPass, l, 0)
			add(metricOK, l, 0)
			continue
		}
		addRun(add, l, run)
	}
	if r := m.Result; r != nil && len(r.Reverse) > 0 {
		// direction both: the way back, its ports the other way round
		back := fmt.Sprintf(`bridge="%s",topology="%s",ingress_port="%s",egress_port="%s"`,
			escapeLabel(r.Bridge), escapeLabel(r.Topology), escapeLabel(r.Egress), escapeLabel(r.Ingress))
		for i := range r.Reverse {
			addRun(add, back+`,frame_size="`+strconv.Itoa(r.Reverse[i].FrameSize)+`"`, &r.Reverse[i])
		}
	}
	if o := m.offload(); o != nil {
		add(metricDPFlows, base, float64(o.Flows))
		add(metricOffloaded, base, float64(o.Offloaded))
		add(metricPartial, base, float64(o.Partial))
	}
	if !m.Time.IsZero() {
		add(metricTime, base, float64(m.Time.UnixMilli())/1000)
	}
	return out
}

// addRun adds one measured run's series under labels l.
func addRun(add func(metricFamily, string, float64), l string, run *CheckRun) {
	valid := run.Invalid == ""
	if valid {
		add(metricMpps, l, run.RxMpps)
		add(metricGbps, l, run.RxGbps)
		add(metricLoss, l, run.LossPct/100)
	}
	add(metricPass, l, b2f(run.Pass && valid))
	add(metricOK, l, b2f(valid))
}

// offload is the check's offload report when its flows were read.
func (m CheckMetrics) offload() *CheckOffload {
	if m.Result == nil || m.Result.Offload == nil || m.Result.Offload.Error != "" {
		return nil
	}
	return m.Result.Offload
}

// baseLabels are bridge, topology and the two ports: from the result when
// the check got that far, else from the playbook.
func (m CheckMetrics) baseLabels() string {
	bridge, topo := m.Spec.BridgeIn(m.OVS), m.Spec.TopologyOrDefault()
	var in, out string
	if topo == playbooks.TopologyThroughPorts && len(m.Spec.Ports) == 2 {
		in, out = m.Spec.Ports[0], m.Spec.Ports[1]
	}
	if r := m.Result; r != nil {
		bridge = cmp.Or(r.Bridge, bridge)
		in, out = cmp.Or(r.Ingress, in), cmp.Or(r.Egress, out)
	}
	return fmt.Sprintf(`bridge="%s",topology="%s",ingress_port="%s",egress_port="%s"`,
		escapeLabel(bridge), escapeLabel(topo), escapeLabel(in), escapeLabel(out))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// escapeLabel escapes a label value: backslash, double quote and line feed
// (the text format's rules); bytes that are not UTF-8 become U+FFFD (a
// label value is UTF-8).
func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(strings.ToValidUTF8(s, "\uFFFD"))
}

// escapeHelp escapes HELP text: backslash and line feed.
func escapeHelp(s string) string { return strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(s) }

// WriteMetricsFile writes m to path the way node_exporter's textfile
// collector needs it: to path.tmp (mode 0644), synced, then renamed over
// path, so the collector never reads half a file.
func WriteMetricsFile(path string, m CheckMetrics) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("metrics file %s: %w", path, err)
	}
	_, werr := m.WriteTo(f)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("metrics file %s: write %s: %w", path, tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("metrics file %s: %w", path, err)
	}
	return nil
}

// CheckMetricsPath validates a --metrics-file path before anything runs:
// a file name (node_exporter reads *.prom) in an existing directory, and
// not a directory itself.
func CheckMetricsPath(path string) error {
	if path == "" || strings.HasSuffix(path, "/") {
		return fmt.Errorf("--metrics-file %q: want a file path, e.g. /var/lib/node_exporter/textfile/rig.prom", path)
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return fmt.Errorf("--metrics-file %s: directory %s does not exist; create it (node_exporter's --collector.textfile.directory) or name another", path, dir)
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("--metrics-file %s: is a directory; name a file in it, e.g. %s", path, filepath.Join(path, "rig.prom"))
	}
	return nil
}
