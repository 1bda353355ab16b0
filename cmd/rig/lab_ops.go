package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"rig/internal/labinfo"
	"rig/lab"
	"rig/lab/fwsim"
)

func newLabPowerCycleCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "power-cycle NAME",
		Short: "Power-cycle the lab's card and host: next-boot firmware becomes current; every lab process ends; the host boots (as rig lab reboot); OvS starts again from its database",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := a.labManagerFor(args[0])
			if err != nil {
				return err
			}
			rep, err := m.PowerCycle(cmd.Context(), args[0])
			if err != nil {
				return labError(err)
			}
			if a.json() {
				return a.emitJSON(rep)
			}
			if len(rep.Loaded) == 0 {
				fmt.Fprintln(a.out, "firmware: no pending configuration")
			}
			for _, b := range rep.Loaded {
				fmt.Fprintf(a.out, "firmware: %s loaded its next-boot configuration\n", b)
			}
			for _, p := range rep.Stopped {
				fmt.Fprintf(a.out, "stopped %d %s\n", p.PID, p.Comm)
			}
			printBoot(a.out, rep.Boot)
			for _, r := range rep.Restarted {
				fmt.Fprintf(a.out, "started %s\n", r)
			}
			return nil
		},
	}
}

func newLabLinkCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "link NAME NETDEV down|up",
		Short: "Pull (down) or put back (up) the cable of a card netdev: carrier, RDMA port state/phys_state, speed",
		Args:  cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := lab.ValidateName(args[0]); err != nil {
				return withCode(exitUsage, err)
			}
			if args[2] != "up" && args[2] != "down" {
				return withCode(exitUsage, fmt.Errorf("lab link: state %q: want down or up", args[2]))
			}
			if err := a.labNeedsRoot(); err != nil {
				return err
			}
			if err := lab.Link(args[0], args[1], args[2] == "up"); err != nil {
				return labError(err)
			}
			fmt.Fprintf(a.out, "lab %s: %s cable %s\n", args[0], args[1], map[bool]string{true: "plugged in", false: "pulled"}[args[2] == "up"])
			return nil
		},
	}
}

// newLabInternalCmds are what the lab runs of the rig binary inside
// itself: its init (`rig lab __init NAME`, builds the mount namespace) and
// its OvS starter (`rig lab __ovs NAME start`), its port keeper (`rig lab
// __ports NAME`: RDMA port states follow the netdevs), its kernel (`rig lab
// __kernel NAME`: writes to sriov_numvfs and compat/devlink/mode make VFs,
// representors and the eSwitch mode). Hidden.
func newLabInternalCmds(a *app) []*cobra.Command {
	initCmd := &cobra.Command{
		Use: "__init NAME [MACHINE]", Hidden: true, Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			machine := "arm"
			if len(args) == 2 {
				machine = args[1]
			}
			return lab.InitView(args[0], machine, os.Stdin, a.out)
		},
	}
	ovsCmd := &cobra.Command{
		Use: "__ovs NAME start", Hidden: true, Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			info, err := labinfo.Read("/")
			if err != nil || info == nil || info.Name != args[0] || args[1] != "start" {
				return fmt.Errorf("lab __ovs: not inside lab %s, or not `start` (/run/rig/lab.json: %+v, %v)", args[0], info, err)
			}
			return lab.StartOVS(cmd.Context())
		},
	}
	portsCmd := &cobra.Command{
		Use: "__ports NAME [MACHINE]", Hidden: true, Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			machine := "arm"
			if len(args) == 2 {
				machine = args[1]
			}
			return lab.FollowPorts(cmd.Context(), args[0], machine)
		},
	}
	kernelCmd := &cobra.Command{
		Use: "__kernel NAME", Hidden: true, Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return lab.RunKernel(cmd.Context(), args[0], os.Stdout, os.Stderr)
		},
	}
	return []*cobra.Command{initCmd, ovsCmd, portsCmd, kernelCmd}
}

// firmwareTool says whether argv0 names under which the rig binary acts as the lab's
// firmware tool (multi-call, by argv[0]).
func firmwareTool(argv0 string) (string, bool) {
	switch t := filepath.Base(argv0); t {
	case "mstconfig", "mlxconfig", "mstprivhost", "mlxprivhost":
		return t, true
	}
	return "", false
}

// runFirmwareTool answers a firmware tool's command line from the lab's
// firmware state (labinfo's FirmwareState, through lab/fwsim), in the
// tool's own output format and exit codes. Outside a lab it refuses.
func runFirmwareTool(tool string, args []string, stdout, stderr io.Writer) int {
	info, err := labinfo.Read("/")
	if err != nil {
		fmt.Fprintf(stderr, "-E- %s (rig): %v\n", tool, err)
		return 1
	}
	if info == nil || info.FirmwareState == "" {
		fmt.Fprintf(stderr, "-E- %s: this is rig's firmware simulator, which answers only inside a rig lab (no %s); install mstflint for the real tool\n", tool, labinfo.Path)
		return 1
	}
	out, code := fwsim.New(info.FirmwareState).Run(tool, args...)
	fmt.Fprint(stdout, out)
	return code
}
