package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"rig/doctor"
	"rig/internal/cpuset"
	"rig/ovs"
	"rig/playbooks"
)

// newDoctorCmd is `rig doctor`: read-only tuning findings.
func newDoctorCmd(a *app) *cobra.Command {
	var pbRef, cores string
	f := &ovsFlags{}
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Read-only tuning check (like mlnx_tune): NUMA, PCIe link, IOMMU, governor, isolated CPUs vs PMD mask and rig's lcores, THP, irqbalance, hugepages vs OvS socket-mem; exit 1 on an error",
		Long: `rig doctor reads the host and says what is mistuned for DPDK, each finding with
its severity, the evidence and the fix. OvS's other_config (pmd-cpu-mask,
dpdk-socket-mem, ...) comes from the running OvS (--rundir/--db to pick one),
or with -p from a playbook before it is applied. --cores names rig's own
dataplane CPUs. It writes nothing. Exit 1 when a finding is an error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			h := a.host()
			in := doctor.Input{Host: h}
			if cores != "" {
				cpus, err := cpuset.ParseCPUList(cores)
				if err != nil {
					return withCode(exitUsage, fmt.Errorf("--cores %q: %w (a CPU list like 2,3 or 2-5)", cores, err))
				}
				in.Cores = cpus
			}
			if pbRef != "" {
				pb, err := playbooks.Load(pbRef)
				if err != nil {
					return withCode(exitUsage, err)
				}
				if pb.OVS == nil {
					in.Skipped = fmt.Sprintf("playbook %s has no ovs section: OvS checks skipped", pb.Source)
				} else {
					in.OVS = &doctor.OVS{Source: "playbook " + pb.Source, OtherConfig: pb.OVS.Config.OtherConfig()}
				}
			} else if !h.IsRealRoot() && f.rundir == "" && f.db == "" {
				in.Skipped = "reading a fixture root (--root): this machine's OvS is not that host's, so the OvS checks were skipped; -p PLAYBOOK checks a playbook's values"
			} else {
				c := ovs.NewClient(h, ovs.TargetFor(h, f.rundir, f.db))
				if st, err := c.ReadState(cmd.Context()); ovs.Unreachable(err) {
					in.Skipped = "no ovsdb-server answers (OvS not running, or another instance: --rundir/--db): the PMD mask and socket-mem checks were skipped; -p PLAYBOOK checks a playbook's values"
				} else if err != nil {
					in.Skipped = fmt.Sprintf("OvS could not be read (%v): the PMD mask and socket-mem checks were skipped", err)
				} else {
					in.OVS = &doctor.OVS{Source: "running OvS", OtherConfig: st.OtherConfig, Initialized: st.DPDKInitialized}
				}
			}
			rep, err := doctor.Run(cmd.Context(), in)
			if err != nil {
				return withCode(exitFailure, err)
			}
			if a.json() {
				err = a.emitJSON(rep)
			} else {
				err = doctor.WriteText(a.out, rep)
			}
			if err != nil {
				return err
			}
			if rep.Errors > 0 {
				return withCode(exitFailure, nil)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&pbRef, "playbook", "p", "", "check this playbook's OvS settings instead of the running OvS's")
	cmd.Flags().StringVar(&cores, "cores", "", "rig's dataplane CPUs (e.g. 2,3) to check against the PMD mask, NUMA and isolation")
	f.register(cmd)
	return cmd
}
