package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"rig/internal/labinfo"
	"rig/ovs"
	"rig/ovs/diagnose"
)

// ovsFlags select the OvS instance: a private one (--rundir) or a remote (--db).
type ovsFlags struct {
	rundir string
	db     string
}

func (f *ovsFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.rundir, "rundir", "", "private OvS instance directory (rig ovs daemon start --rundir DIR)")
	cmd.Flags().StringVar(&f.db, "db", "", "ovsdb remote, e.g. unix:/tmp/x/db.sock (default: the system OvS)")
}

func newOVSCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{Use: "ovs", Short: "Verify OvS-DPDK and manage a private OvS-DPDK instance"}
	cmd.AddCommand(newOVSStatusCmd(a), newOVSDaemonCmd(a))
	return cmd
}

func newOVSStatusCmd(a *app) *cobra.Command {
	f := &ovsFlags{}
	var flows bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show dpdk_initialized, the vswitchd behind it and every port; explain failures (exit 1 on a problem)",
		Long: `Show dpdk_initialized, the vswitchd behind it and every port, and explain
failures (exit 1 on a problem). --flows also reads the datapath flows
(ovs-appctl dpctl/dump-flows -m) and says, per port, how many came in there,
their packets, whether they were offloaded to the NIC (offloaded:yes, partial,
not) on which layer (dp:ovs, dpdk, tc, doca), and why not: hw-offload off or
not applied, tc-policy, a port that is no uplink or representor of the card, a
legacy eSwitch, the refusals ovs-vswitchd logged.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			h := a.host()
			c := ovs.NewClient(h, ovs.TargetFor(h, f.rundir, f.db))
			st, err := diagnose.ReadStatus(cmd.Context(), c)
			if err != nil {
				return err
			}
			if flows && st.Vswitchd.Alive {
				lab, _ := labinfo.Read(h.Root)
				fs, err := diagnose.ReadFlows(cmd.Context(), c, st, lab)
				if err != nil {
					return fmt.Errorf("ovs status --flows: %w", err)
				}
				st.Flows = fs
			}
			if a.json() {
				if err := a.emitJSON(st); err != nil {
					return err
				}
			} else if err := st.WriteText(a.out); err != nil {
				return err
			}
			if !st.OK {
				return withCode(exitFailure, nil)
			}
			return nil
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&flows, "flows", false, "also the datapath flows per port: offloaded to the NIC or not, on which layer, and why not")
	return cmd
}

func newOVSDaemonCmd(a *app) *cobra.Command {
	var rundir string
	cmd := &cobra.Command{
		Use:   "daemon start|stop|status --rundir DIR",
		Short: "Start, stop or show a private ovsdb-server + ovs-vswitchd-dpdk with every file in DIR",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if rundir == "" {
				return withCode(exitUsage, fmt.Errorf("ovs daemon: --rundir DIR is required"))
			}
			d, err := ovs.NewDaemon(a.host(), rundir)
			if err != nil {
				return withCode(exitUsage, err)
			}
			ctx := cmd.Context()
			var stopped []ovs.ProcStop
			switch args[0] {
			case "start":
				err = d.Start(ctx)
			case "stop":
				stopped, err = d.StopReport(ctx)
				if err != nil && len(stopped) > 0 && !a.json() {
					for _, p := range stopped {
						fmt.Fprintln(a.out, p.String())
					}
				}
			case "status":
			default:
				return withCode(exitUsage, fmt.Errorf("ovs daemon: want start, stop or status, got %q", args[0]))
			}
			if err != nil {
				return err
			}
			st := d.Status()
			st.Stopped = stopped
			if a.json() {
				if err := a.emitJSON(st); err != nil {
					return err
				}
			} else if args[0] == "stop" {
				// what stop did, per daemon, not the (now empty) status
				for _, p := range stopped {
					fmt.Fprintln(a.out, p.String())
				}
			} else {
				for _, p := range []ovs.ProcStatus{st.OVSDB, st.Vswitchd} {
					state := "stopped"
					if p.Alive {
						state = fmt.Sprintf("running (pid %d)", p.PID)
					} else if p.Note != "" {
						state += " (" + p.Note + ")"
					}
					fmt.Fprintf(a.out, "%-13s %s\n", p.Name+":", state)
				}
				fmt.Fprintf(a.out, "%-13s %s\n", "db:", st.DB)
			}
			if args[0] == "status" && !st.Running {
				return withCode(exitFailure, nil)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&rundir, "rundir", "", "directory for the database, sockets, pidfiles and logs")
	return cmd
}
