package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"rig/playbooks"
	"rig/provision"
	"rig/provision/check"
)

// metricsFlagUsage is --metrics-file's help (rig check, rig up).
const metricsFlagUsage = "write the check's figures to `FILE` in the Prometheus text format (node_exporter textfile collector: FILE.tmp, then renamed); " +
	"rig_check_mpps, rig_check_gbps, rig_check_loss_ratio, rig_check_pass, rig_check_valid per bridge, ports and frame size"

func registerMetricsFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVar(p, "metrics-file", "", metricsFlagUsage)
}

// metricsTarget is a validated --metrics-file: where, and the playbook
// whose check it describes.
type metricsTarget struct {
	path string
	pb   *playbooks.Playbook
}

// newMetricsTarget validates --metrics-file before anything runs (exit 2):
// the playbook has a check that this run selects, and the file's
// directory exists. An empty path is no target.
func newMetricsTarget(path string, pb *playbooks.Playbook, steps []provision.Step) (*metricsTarget, error) {
	if path == "" {
		return nil, nil
	}
	if pb.Check == nil {
		return nil, withCode(exitUsage, fmt.Errorf("--metrics-file: playbook %s has no check: section, so there is nothing to write; add one or drop the flag", pb.Source))
	}
	selected := false
	for _, s := range steps {
		selected = selected || s.Name() == "check"
	}
	if !selected {
		return nil, withCode(exitUsage, fmt.Errorf("--metrics-file: the check step is not selected (--only/--skip), so there is nothing to write; select it or drop the flag"))
	}
	if err := check.CheckMetricsPath(path); err != nil {
		return nil, withCode(exitUsage, err)
	}
	return &metricsTarget{path: path, pb: pb}, nil
}

// write writes the check step's outcome in rep: its figures when it
// measured, pass 0 and valid 0 when it did not run or failed before.
func (m *metricsTarget) write(rep *provision.Report, now time.Time) error {
	if m == nil {
		return nil
	}
	cm := check.CheckMetrics{Spec: m.pb.Check, OVS: m.pb.OVS}
	for _, st := range rep.Steps {
		if st.Name != "check" {
			continue
		}
		cm.Result, _ = st.Result.(*check.CheckResult)
		if st.Status != provision.StatusNotRun {
			cm.Time = now
		}
	}
	return check.WriteMetricsFile(m.path, cm)
}
