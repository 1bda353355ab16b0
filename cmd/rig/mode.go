package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"rig/mlxconfig"
	"rig/playbooks"
	"rig/provision/card"
)

// newModeCmd is `rig mode show|set` (`rig fwsim`, the firmware-config
// simulator behind --fw-sim, is in fwsim.go).
func newModeCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mode",
		Short: "Show or set the BlueField operation mode (dpu, nic, separated) through mstconfig/mlxconfig",
	}
	var devices []string
	show := &cobra.Command{
		Use:   "show",
		Short: "Print each card's running and next-boot mode (Default/Current/Next Boot of the INTERNAL_CPU_* parameters; n/a on a ConnectX)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			reps, err := card.ShowModes(cmd.Context(), &a.env().Env, devices)
			if err != nil {
				return err
			}
			if a.json() {
				return a.emitJSON(modeReport{modeSchema, reps})
			}
			return printModes(a.out, reps)
		},
	}
	show.Flags().StringSliceVar(&devices, "device", nil, "PCI address(es) of the BlueField (default: every BlueField PF under --root)")

	var setDevices []string
	var dryRun bool
	set := &cobra.Command{
		Use:   "set dpu|nic|separated",
		Short: "Write the mode's parameters to Next Boot (only those that differ); exit 3 when a power cycle is needed",
		Long: `Write the wanted mode's INTERNAL_CPU_* parameters with one
"mstconfig -y -d BDF set ..." per device, only those whose Next Boot value
differs. Firmware config takes effect at the next power cycle; a host reboot
does not reload NIC firmware in DPU mode.

` + exitCodesHelp,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			spec := &playbooks.ModeSpec{Want: args[0], Devices: setDevices}
			if err := fieldErrors("mode set", spec.Validate()); err != nil {
				return err
			}
			return a.provisionSection(cmd.Context(), &playbooks.Playbook{Mode: spec}, dryRun)
		},
	}
	set.Flags().StringSliceVar(&setDevices, "device", nil, "PCI address(es) of the BlueField (default: every BlueField PF under --root)")
	set.Flags().BoolVar(&dryRun, "dry-run", false, "only print what would be written")
	a.registerLockFlags(set)
	cmd.AddCommand(show, set)
	return cmd
}

// printModes is `rig mode show`'s text: one summary row per card, then
// each BlueField's parameters (Default/Current/Next Boot as the tool
// printed them, "-" where it printed no column) and what was not read.
func printModes(w io.Writer, reps []card.ModeReport) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DEVICE\tTYPE\tCURRENT\tNEXT BOOT\tPENDING POWER CYCLE\tRESTRICTED")
	for _, r := range reps {
		pending, restricted := yesNo(r.Pending), yesNo(r.ReadOnly)
		switch {
		case !r.Applicable || len(r.Params) == 0:
			pending, restricted = "-", "-"
		case !r.CurrentRead:
			pending = "unknown"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.BDF, orNA(r.DeviceType), modeText(r.Current), modeText(r.Next), pending, restricted)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range reps {
		fmt.Fprintf(w, "\n%s (%s):\n", r.BDF, r.Model)
		if r.Note != "" {
			fmt.Fprintf(w, "  %s\n", r.Note)
		}
		if len(r.Params) > 0 {
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "  PARAMETER\tDEFAULT\tCURRENT\tNEXT BOOT")
			for _, p := range r.Params {
				name := p.Name
				if p.ReadOnly {
					name += " (RO)"
				}
				fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", name, orNA(p.Default.Text), orNA(p.Current.Text), orNA(p.Next.Text))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		for _, u := range r.Unread {
			fmt.Fprintf(w, "  not read: %s\n", u)
		}
	}
	return nil
}

// modeText renders a mode for the summary table.
func modeText(m mlxconfig.DPUMode) string {
	if m == mlxconfig.ModeNotRead {
		return "not read"
	}
	return string(m)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orNA(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
