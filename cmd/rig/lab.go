package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"rig/lab"
	"rig/lab/card"
)

// JSON schema names of the lab commands (list: json_outputs.go).
const (
	labDownSchema = "rig.lab.down/v1"
)

// newLabCmd is `rig lab`: the virtual BlueField.
func newLabCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lab",
		Short: "A virtual BlueField/ConnectX on this host (namespaces, sysfs view, firmware tools, OvS) on which rig runs unchanged",
		Long: `rig lab up KIND gives a virtual card: a network namespace (rig-lab-NAME) with the card's
netdevs as veths; a mount namespace with the card's sysfs view; mstconfig/mlxconfig
answering from the lab's firmware state; the lab's own OvS at /var/run/openvswitch;
and /run/rig/lab.json. Inside "rig lab exec NAME -- rig ...", rig needs no --root,
--fw-sim or --rundir.

A DPU kind's lab is the three machines of a BlueField in DPU mode: the Arm (above);
the x86 host (rig-lab-NAME-host: the host PFs' netdevs joined to pf0hpf/pf1hpf,
tmfifo_net0 ` + lab.HostTmfifoAddr + ` joined to the Arm's ` + lab.ArmTmfifoAddr + `, its own sysfs view
of the card: PFs, RShim function); the peer (rig-lab-NAME-peer: the far ends p0/p1
of the uplinks, mgmt0 ` + lab.PeerMgmtAddr + ` joined to the Arm's oob_net0 ` + lab.ArmOOBAddr + `).
"rig lab exec NAME --on host|peer -- ..." runs on those. The far ends of the other
netdevs sit, same-named, in rig-lab-NAME-wire; --far-ends wire puts every far end there.

Kinds: ` + kindList(),
	}
	cmd.AddCommand(newLabUpCmd(a), newLabDownCmd(a), newLabExecCmd(a), newLabStatusCmd(a), newLabListCmd(a),
		newLabPowerCycleCmd(a), newLabRebootCmd(a), newLabLinkCmd(a))
	cmd.AddCommand(newLabInternalCmds(a)...)
	return cmd
}

func kindList() string {
	var b strings.Builder
	for _, c := range card.Kinds() {
		fmt.Fprintf(&b, "\n  %-11s %s", c.Kind, c.Summary)
	}
	return b.String()
}

// labManager is the lab's manager for this rig binary.
func (a *app) labManager() (*lab.Manager, error) {
	bin, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("lab: find the rig binary: %w", err)
	}
	return &lab.Manager{Binary: bin, Host: a.host()}, nil
}

// noInheritedFDs marks every descriptor above stderr close-on-exec, for
// every rig command (PersistentPreRunE): the long-lived processes rig
// starts (a lab's init, port keeper and OvS; an ovs-vswitchd that rig up
// restarts, also inside a lab) must not hold what rig's caller held (a
// flock, a pipe) for their whole life. rig's own descriptors are
// close-on-exec already.
func noInheritedFDs() {
	_ = unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC)
}

// labManagerFor is the prologue of a command on the lab named name: the
// name checked (exit 2), root required, then the manager.
func (a *app) labManagerFor(name string) (*lab.Manager, error) {
	if err := lab.ValidateName(name); err != nil {
		return nil, withCode(exitUsage, err)
	}
	if err := a.labNeedsRoot(); err != nil {
		return nil, err
	}
	return a.labManager()
}

// labNeedsRoot refuses a non-root user before anything is touched.
func (a *app) labNeedsRoot() error {
	if a.geteuid == nil || a.geteuid() == 0 {
		return nil
	}
	return withCode(exitFailure, fmt.Errorf("%s needs root: a lab is network and mount namespaces, veths and mounts; run it as root", a.cmdPath))
}

// labError maps lab errors to exit codes: a bad name or kind is usage.
func labError(err error) error {
	var le *lab.Error
	if errors.As(err, &le) {
		return withCode(exitFailure, err)
	}
	return err
}

func newLabUpCmd(a *app) *cobra.Command {
	var name, farEnds string
	cmd := &cobra.Command{
		Use:   "up KIND [--name NAME] [--far-ends machines|wire]",
		Short: "Make a lab of KIND (" + strings.Join(card.KindNames(), ", ") + "); NAME defaults to KIND",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, ok := card.Lookup(args[0]); !ok {
				return withCode(exitUsage, fmt.Errorf("lab up: unknown kind %q; kinds: %s", args[0], strings.Join(card.KindNames(), ", ")))
			}
			if _, err := lab.ResolveFarEnds(args[0], farEnds); err != nil {
				return withCode(exitUsage, err)
			}
			if name == "" {
				name = args[0]
			}
			if err := lab.ValidateName(name); err != nil {
				return withCode(exitUsage, fmt.Errorf("--name: %w", err))
			}
			if err := a.labNeedsRoot(); err != nil {
				return err
			}
			m, err := a.labManager()
			if err != nil {
				return err
			}
			st, err := m.Up(cmd.Context(), args[0], name, farEnds)
			if err != nil {
				return labError(err)
			}
			if a.json() {
				return a.emitJSON(st)
			}
			fmt.Fprint(a.out, st.String())
			fmt.Fprintf(a.out, "use it: rig lab exec %s -- rig inventory\n", name)
			if st.FarEnds == lab.FarEndsMachines {
				fmt.Fprintf(a.out, "the host: rig lab exec %s --on host -- rig inventory; the peer: rig lab exec %s --on peer -- ip addr\n", name, name)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "lab name (default: KIND); it names rig-lab-NAME, rig-lab-NAME-wire (and -host, -peer)")
	cmd.Flags().StringVar(&farEnds, "far-ends", "", "where the card netdevs' far ends are: machines (a DPU kind's default: the x86 host in rig-lab-NAME-host, the peer in rig-lab-NAME-peer) or wire (every far end, same-named, in rig-lab-NAME-wire, where a check's local far ends run; the only layout of cx6dx-host)")
	return cmd
}

func newLabDownCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "down NAME",
		Short: "Remove a lab: its processes, mount namespace, network namespaces (veths), state",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := a.labManagerFor(args[0])
			if err != nil {
				return err
			}
			rep, err := m.Down(cmd.Context(), args[0])
			if err != nil && rep == nil {
				return labError(err)
			}
			if a.json() {
				if jerr := a.emitJSON(labDownReport{labDownSchema, rep.Name, rep.Killed, rep.Removed, rep.Hugepages}); jerr != nil {
					return jerr
				}
			} else {
				for _, p := range rep.Killed {
					fmt.Fprintf(a.out, "stopped %d %s (%s)\n", p.PID, p.Comm, p.Where)
				}
				for _, r := range rep.Removed {
					fmt.Fprintf(a.out, "removed %s\n", r)
				}
				for _, h := range rep.Hugepages {
					fmt.Fprintln(a.out, h)
				}
				fmt.Fprintf(a.out, "lab %s is down\n", rep.Name)
			}
			return labError(err)
		},
	}
}

func newLabExecCmd(a *app) *cobra.Command {
	var on string
	cmd := &cobra.Command{
		Use:   "exec NAME [--on arm|host|peer] -- COMMAND [ARG...]",
		Short: "Run COMMAND on a machine of the lab: the Arm (default: the lab's network and mount namespaces, its bin dir first on PATH), the x86 host (its netns and sysfs view of the card) or the peer (its netns)",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 1 {
				return withCode(exitUsage, fmt.Errorf("lab exec: want NAME -- COMMAND [ARG...], e.g. rig lab exec bf2-dpu -- rig inventory"))
			}
			if !slices.Contains(lab.MachineNames(), on) {
				return withCode(exitUsage, fmt.Errorf("lab exec: --on %q: want one of %s", on, strings.Join(lab.MachineNames(), ", ")))
			}
			l, err := lab.ForName(args[0])
			if err != nil {
				return withCode(exitUsage, err)
			}
			if err := a.labNeedsRoot(); err != nil {
				return err
			}
			return labError(l.ExecOn(on, args[1:]))
		},
	}
	cmd.Flags().StringVar(&on, "on", "arm", "the machine: arm (the card's), host (the x86 host) or peer (across the cable); host and peer exist in a DPU kind's lab with far ends on the machines")
	return cmd
}

func newLabStatusCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "status [NAME]",
		Short: "Show a lab (or every lab): namespaces, netdevs and their far ends, RDMA port states, firmware mode, processes; the Arm, host and peer with their netdevs, addresses and processes",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return a.labList()
			}
			if err := lab.ValidateName(args[0]); err != nil {
				return withCode(exitUsage, err)
			}
			st, err := lab.StatusOf(args[0])
			if err != nil {
				return labError(err)
			}
			if a.json() {
				return a.emitJSON(st)
			}
			fmt.Fprint(a.out, st.String())
			if !st.Up {
				return withCode(exitFailure, nil)
			}
			return nil
		},
	}
}

func newLabListCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the labs on this host",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, args []string) error { return a.labList() },
	}
}

func (a *app) labList() error {
	labs, err := lab.List()
	if err != nil {
		return err
	}
	if a.json() {
		return a.emitJSON(labListReport{labListSchema, labs})
	}
	if len(labs) == 0 {
		fmt.Fprintln(a.out, "no labs (rig lab up KIND makes one)")
	}
	for _, st := range labs {
		state := "up"
		if !st.Up {
			state = "NOT UP"
		}
		fmt.Fprintf(a.out, "%-20s %-11s %-7s netns %s, wire %s", st.Name, st.Kind, state, st.NetNS, st.WireNetNS)
		for _, m := range st.Machines {
			if m.Name != "arm" {
				fmt.Fprintf(a.out, ", %s %s", m.Name, m.NetNS)
			}
		}
		fmt.Fprintln(a.out)
	}
	return nil
}
