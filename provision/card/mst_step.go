// Package card holds the steps that prepare the NIC and its firmware: mst
// (the firmware tools' device nodes), mode (a BlueField's DPU, NIC or
// separated-host mode) and firmware (any NV parameter), with the firmware
// tool planner the mode and firmware steps share.
package card

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"rig/internal/host"
	"rig/playbooks"
	"rig/provision"
	"rig/smartnic"
)

// mstStep makes the Mellanox devices addressable by the firmware tools.
// NVIDIA MFT (mst, mlxconfig) works on /dev/mst/* nodes that `mst start`
// creates; mstflint (mstconfig, mstflint, mstfwreset) takes a PCI BDF and
// needs no `mst start` (hardware-formats.md §1.4, §2.1). So: with MFT
// installed, run `mst start` when /dev/mst is empty and report the nodes;
// otherwise report the BDFs mstflint will use. Without mstconfig and
// mlxconfig the mode step cannot work: fail naming Debian's mstflint.
type mstStep struct {
	h    *host.Host
	spec *playbooks.MSTSpec
	// fixture is --root when it names a fixture: `mst start` would load
	// modules on this machine, so the apply refuses it.
	fixture string
}

// NewMSTStep builds the mst step.
func NewMSTStep(env *provision.Env, spec *playbooks.MSTSpec) (provision.Step, error) {
	return &mstStep{h: env.Host, spec: spec, fixture: env.FixtureRoot}, nil
}

func (s *mstStep) Name() string { return "mst" }

// mstProbe is a tool's read-only probe, run through the exec seam so a
// simulator (rig --fw-sim) or a test fake answers it like the real tool.
// Only "not found" counts as absent; a tool that runs and fails is present.
func mstProbe(tool string) []string {
	if tool == "mst" {
		return []string{"version"}
	}
	return []string{"-v"} // mstconfig, mlxconfig
}

func (s *mstStep) installed(ctx context.Context, tool string) bool {
	_, err := s.h.Run(ctx, tool, mstProbe(tool)...)
	var te *host.ToolError
	return !(errors.As(err, &te) && te.NotFound())
}

// devNodes lists /dev/mst under the host root (sorted).
func (s *mstStep) devNodes() ([]string, error) {
	ents, err := s.h.ReadDir("/dev/mst")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mst: %w", err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out, nil
}

type mstState struct {
	mft     bool
	nodes   []string
	devices []smartnic.Function
}

func (s *mstStep) state(ctx context.Context) (mstState, error) {
	var st mstState
	hasMstconfig := s.installed(ctx, "mstconfig")
	hasMlxconfig := s.installed(ctx, "mlxconfig")
	st.mft = s.installed(ctx, "mst")
	if !hasMstconfig && !hasMlxconfig {
		return st, &provision.Problem{Object: "mst",
			Err:       errors.New("neither mstconfig (mstflint) nor mlxconfig (NVIDIA MFT) is installed"),
			CauseText: "no firmware configuration tool on this host: the mode step and `rig mode` need one",
			FixText:   "install the Debian package mstflint (`apt-get install mstflint`: mstconfig, mstflint, mstfwreset), or NVIDIA MFT for mlxconfig"}
	}
	inv, err := smartnic.Scan(s.h)
	if err != nil {
		return st, err
	}
	for _, f := range inv.Functions {
		if f.Kind == smartnic.FunctionNIC {
			st.devices = append(st.devices, f)
		}
	}
	if len(st.devices) < s.spec.MinDevices {
		return st, &provision.Problem{Object: "mst",
			Err:       fmt.Errorf("found %d Mellanox NIC functions under %s, playbook wants at least %d", len(st.devices), s.h.Path("/sys/bus/pci/devices"), s.spec.MinDevices),
			CauseText: "the card is not enumerated on PCI (seating, slot power, BIOS), or mlx5_core is not bound",
			FixText:   "check `lspci -d 15b3:` and `dmesg | grep mlx5`"}
	}
	if st.mft {
		if st.nodes, err = s.devNodes(); err != nil {
			return st, err
		}
	}
	return st, nil
}

func (s *mstStep) Check(ctx context.Context) (provision.Plan, error) {
	st, err := s.state(ctx)
	if err != nil {
		return provision.Plan{}, err
	}
	var plan provision.Plan
	switch {
	case !st.mft:
		var devs []string
		for _, f := range st.devices {
			devs = append(devs, fmt.Sprintf("%s (%s, mst name %s)", f.BDF, f.Model, f.MSTName))
		}
		if len(devs) == 0 {
			devs = []string{"none found"}
		}
		plan.Notes = append(plan.Notes, "NVIDIA MFT (mst) not installed: mstflint tools address devices by PCI BDF and need no `mst start`; devices: "+strings.Join(devs, ", "))
	case len(st.nodes) == 0 && s.spec.StartMST():
		var want []string
		for _, f := range st.devices {
			want = append(want, "/dev/mst/"+f.MSTName)
		}
		plan.Add(s.start, provision.Change{Object: "mst", Action: "mst start", From: "/dev/mst empty", To: strings.Join(want, ",")})
		if s.fixture != "" {
			plan.Ops[0].Refused = provision.RefuseLiveWrite("mst", s.fixture, "would load MFT's kernel modules and create /dev/mst on this machine", "")
			plan.Notes = append(plan.Notes, "mst: under --root "+s.fixture+" `mst start` would load MFT's modules on this machine; apply refuses it")
		}
	case len(st.nodes) == 0:
		plan.Notes = append(plan.Notes, "NVIDIA MFT installed but /dev/mst is empty and mst.start is false: MFT tools need `mst start`; mstflint tools work by PCI BDF")
	default:
		plan.Notes = append(plan.Notes, "mst devices: "+describeNodes(st.nodes, st.devices))
	}
	return plan, nil
}

// describeNodes pairs /dev/mst nodes with the functions they name.
func describeNodes(nodes []string, devs []smartnic.Function) string {
	byName := map[string]smartnic.Function{}
	for _, f := range devs {
		byName[f.MSTName] = f
	}
	var out []string
	for _, n := range nodes {
		d := "/dev/mst/" + n
		if f, ok := byName[n]; ok {
			d += fmt.Sprintf(" (%s %s)", f.BDF, f.Model)
		}
		out = append(out, d)
	}
	return strings.Join(out, ", ")
}

// start runs `mst start` and makes sure it created device nodes.
func (s *mstStep) start(ctx context.Context) error {
	if _, err := s.h.Run(ctx, "mst", "start"); err != nil {
		return &provision.Problem{Object: "mst", Err: fmt.Errorf("mst start: %w", err),
			CauseText: "MFT's kernel modules (mst_pci, mst_pciconf) did not load for this kernel, or no privilege",
			FixText:   "run as root; check `mst status` and dmesg; reinstall MFT for this kernel — or remove MFT and use mstflint, which needs no mst start"}
	}
	nodes, err := s.devNodes()
	if err != nil {
		return err
	}
	if len(nodes) == 0 {
		return &provision.Problem{Object: "mst", Err: errors.New("`mst start` succeeded but created no /dev/mst devices"),
			CauseText: "MFT did not recognise the device (too old an MFT for this card) or the driver set failed to load",
			FixText:   "check `mst status -v`; try `mst start --with_unknown`; mstflint tools can address the device by PCI BDF instead"}
	}
	return nil
}
