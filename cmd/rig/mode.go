package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"rig/playbooks"
	"rig/provision"
	"rig/provision/mlxconfig"
)

// newModeCmd is `rig mode show|set` and, next to it, `rig fwsim` (the
// firmware-config simulator behind --fw-sim).
func newModeCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mode",
		Short: "Show or set the BlueField operation mode (dpu, nic, separated) through mstconfig/mlxconfig",
	}
	var devices []string
	show := &cobra.Command{
		Use:   "show",
		Short: "Print each BlueField's running and next-boot mode (Default/Current/Next Boot of the INTERNAL_CPU_* parameters)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			reps, err := provision.ShowModes(cmd.Context(), a.host(), devices)
			if err != nil {
				return err
			}
			if a.json() {
				return a.emitJSON(map[string]any{"schemaVersion": "rig.mode/v1", "devices": reps})
			}
			tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "DEVICE\tTYPE\tCURRENT\tNEXT BOOT\tPENDING POWER CYCLE\tRESTRICTED")
			for _, r := range reps {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.BDF, r.DeviceType, r.Current, r.Next, yesNo(r.Pending), yesNo(r.ReadOnly))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, r := range reps {
				fmt.Fprintf(a.out, "\n%s (%s):\n", r.BDF, r.Generation)
				tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
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
			return nil
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

// newFwSimCmd drives the firmware-config simulator's state file (--fw-sim).
func newFwSimCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fwsim",
		Short: "Drive the firmware-config simulator behind --fw-sim (init, power-cycle, restrict, show)",
		Long: `rig's firmware-config simulator answers mstconfig, mlxconfig, mstprivhost and
mlxprivhost (same output as mstflint) when rig runs with --fw-sim STATEFILE.
"set" writes Next Boot; "rig fwsim power-cycle" promotes Next Boot to Current.`,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if a.output != "text" && a.output != "json" {
				return withCode(exitUsage, fmt.Errorf("-o/--output: want text or json, got %q", a.output))
			}
			if a.fwSim == "" {
				return withCode(exitUsage, fmt.Errorf("fwsim: give the state file with --fw-sim PATH"))
			}
			return nil
		},
	}
	var devSpecs []string
	var restricted bool
	initCmd := &cobra.Command{
		Use:   "init",
		Short: "Create (replace) the state file: --device BDF=DEVID:MODE, e.g. 0000:03:00.0=a2d6:separated",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			devs := map[string]*mlxconfig.SimDevice{}
			for _, spec := range devSpecs {
				bdf, rest, ok := strings.Cut(spec, "=")
				id, m, _ := strings.Cut(rest, ":")
				if !ok || id == "" {
					return withCode(exitUsage, fmt.Errorf("--device %q: want BDF=DEVID[:MODE], e.g. 0000:03:00.0=a2d6:separated", spec))
				}
				mode := mlxconfig.ModeDPU
				if m != "" {
					var err error
					if mode, err = mlxconfig.ParseMode(m); err != nil {
						return withCode(exitUsage, fmt.Errorf("--device %q: %w", spec, err))
					}
				}
				d, err := mlxconfig.NewSimDevice(id, mode)
				if err != nil {
					return withCode(exitUsage, fmt.Errorf("--device %q: %w", spec, err))
				}
				d.Restricted = restricted
				devs[bdf] = d
			}
			if len(devs) == 0 {
				return withCode(exitUsage, fmt.Errorf("fwsim init: give at least one --device BDF=DEVID[:MODE]"))
			}
			if err := mlxconfig.NewSim(a.fwSim).Init(devs); err != nil {
				return err
			}
			fmt.Fprintf(a.errOut, "fwsim: wrote %s (%d devices)\n", a.fwSim, len(devs))
			return nil
		},
	}
	initCmd.Flags().StringSliceVar(&devSpecs, "device", []string{"0000:03:00.0=a2d6:separated"}, "BDF=DEVID[:MODE]; DEVID a2d6 (BlueField-2), a2dc (BlueField-3), 101d (ConnectX-6 Dx); MODE dpu|nic|separated")
	initCmd.Flags().BoolVar(&restricted, "restricted", false, "start with the host restricted (zero-trust)")

	power := &cobra.Command{
		Use:   "power-cycle",
		Short: "Simulate a power cycle: Next Boot becomes Current on every device",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			changed, err := mlxconfig.NewSim(a.fwSim).PowerCycle()
			if err != nil {
				return err
			}
			if a.json() {
				return a.emitJSON(map[string]any{"changed": changed})
			}
			if len(changed) == 0 {
				fmt.Fprintln(a.out, "power cycle: no pending firmware configuration")
			}
			for _, b := range changed {
				fmt.Fprintf(a.out, "power cycle: %s loaded its next-boot configuration\n", b)
			}
			return nil
		},
	}

	var rDev string
	var off bool
	restrict := &cobra.Command{
		Use:   "restrict",
		Short: "Mark the host zero-trust (restricted) for a device (--off: privileged again)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return mlxconfig.NewSim(a.fwSim).SetRestricted(rDev, !off)
		},
	}
	restrict.Flags().StringVar(&rDev, "device", "", "PCI address (default: every device)")
	restrict.Flags().BoolVar(&off, "off", false, "lift the restriction")

	show := &cobra.Command{
		Use:   "show",
		Short: "Print the simulator state file",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := mlxconfig.NewSim(a.fwSim).Load()
			if err != nil {
				return err
			}
			return a.emitJSON(st)
		},
	}
	cmd.AddCommand(initCmd, power, restrict, show)
	return cmd
}
