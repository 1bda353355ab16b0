package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"rig/lab/fwsim"
	"rig/mlxconfig"
)

// fwsimPowerCycleSchema names `rig fwsim power-cycle -o json`'s shape.
const fwsimPowerCycleSchema = "rig.fwsim.power-cycle/v1"

// newFwSimCmd drives the firmware-config simulator's state file (--fw-sim).
func newFwSimCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fwsim",
		Short: "Drive the firmware-config simulator behind --fw-sim (init, power-cycle, restrict, show)",
		Long: `rig's firmware-config simulator answers mstconfig, mlxconfig, mstprivhost and
mlxprivhost (same output as mstflint) when rig runs with --fw-sim STATEFILE.
"set" writes Next Boot; "rig fwsim power-cycle" promotes Next Boot to Current;
"rig fwsim reboot" is a warm host reboot: Current stays, and a card whose mode
was changed then refuses NV access (as real BlueFields do) until a power cycle.`,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if a.output != "text" && a.output != "json" {
				return withCode(exitUsage, fmt.Errorf("-o/--output: want text or json, got %q", a.output))
			}
			if a.fwSim == "" {
				return withCode(exitUsage, fmt.Errorf("fwsim: give the state file with --fw-sim PATH"))
			}
			return a.checkFwSim()
		},
	}
	cmd.AddCommand(newFwSimInitCmd(a), newFwSimPowerCycleCmd(a), newFwSimRebootCmd(a), newFwSimRestrictCmd(a), newFwSimShowCmd(a))
	return cmd
}

// newFwSimInitCmd is `rig fwsim init`: a fresh state file.
func newFwSimInitCmd(a *app) *cobra.Command {
	var devSpecs []string
	var restricted bool
	initCmd := &cobra.Command{
		Use:   "init",
		Short: "Create (replace) the state file: --device BDF=DEVID:MODE, e.g. 0000:03:00.0=a2d6:separated",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			devs := map[string]*fwsim.Device{}
			for _, spec := range devSpecs {
				bdf, d, err := parseFwSimDevice(spec)
				if err != nil {
					return withCode(exitUsage, err)
				}
				d.Restricted = restricted
				devs[bdf] = d
			}
			if len(devs) == 0 {
				return withCode(exitUsage, fmt.Errorf("fwsim init: give at least one --device BDF=DEVID[:MODE]"))
			}
			if err := fwsim.New(a.fwSim).Init(devs); err != nil {
				return err
			}
			fmt.Fprintf(a.errOut, "fwsim: wrote %s (%d devices)\n", a.fwSim, len(devs))
			return nil
		},
	}
	initCmd.Flags().StringSliceVar(&devSpecs, "device", []string{"0000:03:00.0=a2d6:separated"}, "BDF=DEVID[:MODE]; DEVID a2d6 (BlueField-2), a2dc (BlueField-3), 101d (ConnectX-6 Dx); MODE dpu|nic|separated")
	initCmd.Flags().BoolVar(&restricted, "restricted", false, "start with the host restricted (zero-trust)")
	return initCmd
}

// parseFwSimDevice reads one --device BDF=DEVID[:MODE].
func parseFwSimDevice(spec string) (string, *fwsim.Device, error) {
	bdf, rest, ok := strings.Cut(spec, "=")
	id, m, _ := strings.Cut(rest, ":")
	if !ok || id == "" {
		return "", nil, fmt.Errorf("--device %q: want BDF=DEVID[:MODE], e.g. 0000:03:00.0=a2d6:separated", spec)
	}
	mode := mlxconfig.ModeDPU
	if m != "" {
		var err error
		if mode, err = mlxconfig.ParseDPUMode(m); err != nil {
			return "", nil, fmt.Errorf("--device %q: %w", spec, err)
		}
	}
	d, err := fwsim.NewDevice(id, mode)
	if err != nil {
		return "", nil, fmt.Errorf("--device %q: %w", spec, err)
	}
	return bdf, d, nil
}

// newFwSimPowerCycleCmd is `rig fwsim power-cycle`.
func newFwSimPowerCycleCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "power-cycle",
		Short: "Simulate a power cycle: Next Boot becomes Current on every device",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			changed, err := fwsim.New(a.fwSim).PowerCycle()
			if err != nil {
				return err
			}
			if a.json() {
				return a.emitJSON(fwsimPowerCycleReport{fwsimPowerCycleSchema, changed})
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
}

// fwsimRebootSchema names `rig fwsim reboot -o json`'s shape.
const fwsimRebootSchema = "rig.fwsim.reboot/v1"

// newFwSimRebootCmd is `rig fwsim reboot`: a warm host reboot.
func newFwSimRebootCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "reboot",
		Short: "Simulate a warm host reboot: Current stays; a card with a pending mode change refuses NV access until power-cycle",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			stale, err := fwsim.New(a.fwSim).WarmReboot()
			if err != nil {
				return err
			}
			if a.json() {
				return a.emitJSON(fwsimRebootReport{fwsimRebootSchema, stale})
			}
			if len(stale) == 0 {
				fmt.Fprintln(a.out, "reboot: no pending mode change; the firmware kept running")
			}
			for _, b := range stale {
				fmt.Fprintf(a.out, "reboot: %s kept its running firmware with a pending mode change; NV access fails until a power cycle\n", b)
			}
			return nil
		},
	}
}

// newFwSimRestrictCmd is `rig fwsim restrict`.
func newFwSimRestrictCmd(a *app) *cobra.Command {
	var rDev string
	var off bool
	restrict := &cobra.Command{
		Use:   "restrict",
		Short: "Mark the host zero-trust (restricted) for a device (--off: privileged again)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return fwsim.New(a.fwSim).SetRestricted(rDev, !off)
		},
	}
	restrict.Flags().StringVar(&rDev, "device", "", "PCI address (default: every device)")
	restrict.Flags().BoolVar(&off, "off", false, "lift the restriction")
	return restrict
}

// newFwSimShowCmd is `rig fwsim show`: the state file as JSON.
func newFwSimShowCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "show",
		Short: "Print the simulator state file",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := fwsim.New(a.fwSim).Load()
			if err != nil {
				return err
			}
			return a.emitJSON(st)
		},
	}
}
