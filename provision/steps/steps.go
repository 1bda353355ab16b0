// Package steps is rig's ordered step list: one StepDef per playbook
// section, from which rig up, rig plan, rig down (NewDownRunnerFor),
// --only/--skip and a single step's command are built.
package steps

import (
	"rig/playbooks"
	"rig/provision"
	"rig/provision/card"
	"rig/provision/check"
	"rig/provision/ovsstep"
	"rig/provision/pcidev"
	"rig/provision/system"
)

// Env is what the step list builds its steps with: the engine's Env,
// which every step takes, and the dataplane the check step runs.
type Env = check.Env

// StepDef is one entry of the ordered step list: its name (also its
// playbook section's key), what it does (the help table), and how it is
// built.
type StepDef struct {
	Name    string
	Summary string
	// build makes the step from the playbook, or nil when its section is
	// absent.
	build func(pb *playbooks.Playbook, env *Env) (provision.Step, error)
}

// section adapts a uniform constructor to the step list: nil spec, no step.
func section[S any](get func(*playbooks.Playbook) *S, newStep func(*provision.Env, *S) (provision.Step, error)) func(*playbooks.Playbook, *Env) (provision.Step, error) {
	return func(pb *playbooks.Playbook, env *Env) (provision.Step, error) {
		spec := get(pb)
		if spec == nil {
			return nil, nil
		}
		return newStep(&env.Env, spec)
	}
}

// whole adapts a constructor that reads more of the playbook than its
// own section (firmware reads the mode section too) to the step list.
func whole(build func(*playbooks.Playbook, *provision.Env) (provision.Step, error)) func(*playbooks.Playbook, *Env) (provision.Step, error) {
	return func(pb *playbooks.Playbook, env *Env) (provision.Step, error) { return build(pb, &env.Env) }
}

// Steps is the one ordered step list behind `rig plan`, `rig up`,
// --only/--skip, `rig step NAME`, `hugepages set`/`mode set` and the help
// table. Firmware and links come first (a mode change needs a power cycle
// before anything above it makes sense), then memory, then OvS.
func Steps() []StepDef {
	return []StepDef{
		{"mst", "make the Mellanox devices addressable by the firmware tools (mst start)",
			section(func(pb *playbooks.Playbook) *playbooks.MSTSpec { return pb.MST }, card.NewMSTStep)},
		{"mode", "put each BlueField in DPU, NIC or separated-host mode (firmware, next boot)",
			section(func(pb *playbooks.Playbook) *playbooks.ModeSpec { return pb.Mode }, card.NewModeStep)},
		{"firmware", "any firmware (NV) parameter per device (mlxconfig names and values), next boot; exit 3 until a power cycle",
			whole(card.BuildFirmware)},
		{"kernel", "kernel boot parameters (GRUB drop-in, live after a reboot) and sysctls (persisted and live)",
			section(func(pb *playbooks.Playbook) *playbooks.KernelSpec { return pb.Kernel }, system.NewKernelStep)},
		{"rdma", "bring RDMA ports to ACTIVE / LINK_UP (sets their netdevs up)",
			section(func(pb *playbooks.Playbook) *playbooks.RDMASpec { return pb.RDMA }, system.NewRDMAStep)},
		{"sriov", "create VFs per PF (sriov_numvfs) and set the eSwitch mode (devlink); VFs and representors verified",
			section(func(pb *playbooks.Playbook) *playbooks.SRIOVSpec { return pb.SRIOV }, pcidev.NewSRIOVStep)},
		{"bind", "bind PCI functions (by address or netdev) to vfio-pci/uio_pci_generic for DPDK; mlx5 stays on mlx5_core",
			section(func(pb *playbooks.Playbook) *playbooks.BindSpec { return pb.Bind }, pcidev.NewBindStep)},
		{"hugepages", "reserve hugepages per size and node, mount hugetlbfs, optionally persist",
			section(func(pb *playbooks.Playbook) *playbooks.HugepagesSpec { return pb.Hugepages }, system.NewHugepagesStep)},
		{"ovs", "configure OvS-DPDK: other_config, netdev bridges and DPDK ports, verified attached",
			section(func(pb *playbooks.Playbook) *playbooks.OVSSpec { return pb.OVS }, ovsstep.NewOVSStep)},
		{"check", "send rig's traffic through the OvS bridge; report Mpps, loss (and where), latency; pass/fail per threshold", buildCheck},
	}
}

// AllStepNames lists every step rig knows, in run order.
func AllStepNames() []string {
	var out []string
	for _, d := range Steps() {
		out = append(out, d.Name)
	}
	return out
}

// NewRunnerFor builds the runner for a playbook: one step per present section, in order.
func NewRunnerFor(pb *playbooks.Playbook, env *Env) (*provision.Runner, error) {
	if env.Playbook == "" {
		env.Playbook = pb.Name // the state file keeps this playbook's records apart
	}
	r := &provision.Runner{Now: env.Now, StateFile: env.State().Path}
	for _, d := range Steps() {
		s, err := d.build(pb, env)
		if err != nil {
			return nil, err
		}
		if s != nil {
			r.Steps = append(r.Steps, s)
		}
	}
	return r, nil
}

// buildCheck builds the check step, which also reads the ovs section.
func buildCheck(pb *playbooks.Playbook, env *Env) (provision.Step, error) {
	if pb.Check == nil {
		return nil, nil
	}
	return check.NewCheckStep(env, pb.Check, pb.OVS)
}
