// Package doctor is rig's read-only tuning check: what mlnx_tune and the
// seeds' tuning notes look at (NUMA locality, PCIe link, IOMMU, CPU
// governor, isolated cores vs OvS's PMD mask and rig's lcores, THP,
// irqbalance, hugepages vs OvS's socket memory), each finding with its
// severity, the evidence read and the fix.
package doctor

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"rig/internal/host"
	"rig/smartnic"
)

// SchemaVersion versions the JSON report.
const SchemaVersion = "rig.doctor/v1"

// Severities, most severe first.
const (
	Error   = "error"
	Warning = "warning"
	Info    = "info"
	OK      = "ok"
)

// Finding is one thing doctor looked at.
type Finding struct {
	Check    string `json:"check"`    // numa, pcie, iommu, governor, cpus, thp, irqbalance, hugepages, ovs
	Severity string `json:"severity"` // error, warning, info, ok
	Object   string `json:"object"`   // what it is about: "0000:03:00.0", "pmd-cpu-mask 0x6"
	Evidence string `json:"evidence"` // what was read, with where from
	Fix      string `json:"fix,omitempty"`
}

// Report is every finding, most severe first, and the counts.
type Report struct {
	SchemaVersion string    `json:"schemaVersion"`
	Findings      []Finding `json:"findings"`
	Errors        int       `json:"errors"`
	Warnings      int       `json:"warnings"`
}

// OVS is what doctor knows of OvS-DPDK: the running instance's
// other_config (or a playbook's, before it is applied).
type OVS struct {
	Source      string            // "running OvS (ovsdb …)" or "playbook FILE"
	OtherConfig map[string]string // pmd-cpu-mask, dpdk-lcore-mask, dpdk-socket-mem, dpdk-init
	// Initialized: DPDK in vswitchd already took its memory, so free
	// hugepages no longer have to cover dpdk-socket-mem.
	Initialized bool
}

// Input is what one doctor run looks at.
type Input struct {
	Host *host.Host
	// OVS is nil when no OvS was reachable and no playbook gave one;
	// Skipped then says why (shown as an info finding).
	OVS     *OVS
	Skipped string
	// Cores are rig's dataplane lcores (--cores), nil when not given.
	Cores []int
}

// Run reads the host and returns the findings; it writes nothing.
func Run(ctx context.Context, in Input) (*Report, error) {
	h := in.Host
	inv, err := smartnic.ScanContext(ctx, h)
	if err != nil {
		return nil, fmt.Errorf("doctor: inventory: %w", err)
	}
	var fs []Finding
	cpus, err := readCPUs(h)
	if err != nil {
		fs = append(fs, Finding{Check: "cpus", Severity: Info, Object: "CPUs", Evidence: fmt.Sprintf("%v: CPU checks see no CPU (a fixture root without /sys/devices/system/cpu)", err)})
	}
	fs = append(fs, checkPCIe(inv)...)
	fs = append(fs, checkCPUs(in, cpus)...)
	fs = append(fs, checkNUMA(h, inv, in, cpus)...)
	fs = append(fs, checkIOMMU(h)...)
	fs = append(fs, checkGovernor(h, usedCPUs(in, cpus))...)
	fs = append(fs, checkTHP(h)...)
	fs = append(fs, checkIrqbalance(h, cpus)...)
	fs = append(fs, checkHugepages(h, in)...)
	if in.OVS == nil && in.Skipped != "" {
		fs = append(fs, Finding{Check: "ovs", Severity: Info, Object: "OvS", Evidence: in.Skipped})
	}
	fs = append(fs, checkOVSDPDK(in.OVS)...)
	return newReport(fs), nil
}

// checkOVSDPDK says when the OvS read has no DPDK (dpdk-init neither true
// nor try): ovs-vswitchd then runs without DPDK, so there is no
// dpdk-socket-mem for the hugepages to cover (the hugepages check says
// nothing of OvS) — worth saying on a host meant for OvS-DPDK.
func checkOVSDPDK(o *OVS) []Finding {
	if o == nil || isTrue(o.OtherConfig["dpdk-init"]) {
		return nil
	}
	v := "unset"
	if s := o.OtherConfig["dpdk-init"]; s != "" {
		v = fmt.Sprintf("%q", s)
	}
	return []Finding{{Check: "ovs", Severity: Info, Object: "OvS dpdk-init",
		Evidence: fmt.Sprintf("%s: other_config:dpdk-init is %s, so ovs-vswitchd initialises no DPDK (no dpdk ports, no DPDK socket memory to check hugepages against)", o.Source, v),
		Fix:      `for OvS-DPDK set it (a playbook's ovs.config: dpdk-init: "true"; rig restarts ovs-vswitchd, which reads it only at start)`}}
}

func rank(sev string) int {
	switch sev {
	case Error:
		return 0
	case Warning:
		return 1
	case Info:
		return 2
	}
	return 3
}

func newReport(fs []Finding) *Report {
	sort.SliceStable(fs, func(i, j int) bool { return rank(fs[i].Severity) < rank(fs[j].Severity) })
	r := &Report{SchemaVersion: SchemaVersion, Findings: fs}
	for _, f := range fs {
		switch f.Severity {
		case Error:
			r.Errors++
		case Warning:
			r.Warnings++
		}
	}
	if r.Findings == nil {
		r.Findings = []Finding{}
	}
	return r
}

// WriteText prints the findings for people: one block per finding, most
// severe first, and a summary line.
func WriteText(w io.Writer, r *Report) error {
	for _, f := range r.Findings {
		if _, err := fmt.Fprintf(w, "%-7s %-10s %s: %s\n", strings.ToUpper(f.Severity), f.Check, f.Object, f.Evidence); err != nil {
			return err
		}
		if f.Fix != "" {
			if _, err := fmt.Fprintf(w, "        fix: %s\n", f.Fix); err != nil {
				return err
			}
		}
	}
	_, err := fmt.Fprintf(w, "doctor: %d error(s), %d warning(s), %d finding(s)\n", r.Errors, r.Warnings, len(r.Findings))
	return err
}
