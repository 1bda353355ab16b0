package provision

import (
	"rig/internal/host"
	"rig/playbooks"
)

// Env is what steps need beyond the playbook: the host seam and the
// command line's targets.
type Env struct {
	Host *host.Host
	// OVSRunDir is a private OvS instance's directory (`rig ovs daemon
	// start --rundir`); OVSDB an ovsdb remote. Both empty: the system OvS.
	OVSRunDir string
	OVSDB     string
	// NetNS is the network namespace (a name under /run/netns) whose
	// netdevs the rdma step reads and sets up; "" = rig's own.
	NetNS string
}

// stepBuilder makes the step for one playbook section, or nil when the
// section is absent.
type stepBuilder struct {
	name  string
	build func(pb *playbooks.Playbook, env *Env) (Step, error)
}

// order is the one ordered step list behind `rig plan`, `rig up` and
// --only/--skip. Firmware and links come first (a mode change needs a power
// cycle before anything above it makes sense), then memory, then OvS.
func order() []stepBuilder {
	return []stepBuilder{
		{"mst", func(pb *playbooks.Playbook, env *Env) (Step, error) {
			if pb.MST == nil {
				return nil, nil
			}
			return NewMSTStep(env.Host, pb.MST)
		}},
		{"mode", func(pb *playbooks.Playbook, env *Env) (Step, error) {
			if pb.Mode == nil {
				return nil, nil
			}
			return NewModeStep(env.Host, pb.Mode)
		}},
		{"rdma", func(pb *playbooks.Playbook, env *Env) (Step, error) {
			if pb.RDMA == nil {
				return nil, nil
			}
			return NewRDMAStep(env, pb.RDMA)
		}},
		{"hugepages", func(pb *playbooks.Playbook, env *Env) (Step, error) {
			if pb.Hugepages == nil {
				return nil, nil
			}
			return NewHugepagesStep(env.Host, pb.Hugepages)
		}},
		{"ovs", func(pb *playbooks.Playbook, env *Env) (Step, error) {
			if pb.OVS == nil {
				return nil, nil
			}
			return NewOVSStep(env.Host, pb.OVS, env.OVSRunDir, env.OVSDB)
		}},
	}
}

// AllStepNames lists every step rig knows, in run order.
func AllStepNames() []string {
	var out []string
	for _, b := range order() {
		out = append(out, b.name)
	}
	return out
}

// NewRunnerFor builds the runner for a playbook: one step per present section, in order.
func NewRunnerFor(pb *playbooks.Playbook, env *Env) (*Runner, error) {
	r := &Runner{}
	for _, b := range order() {
		s, err := b.build(pb, env)
		if err != nil {
			return nil, err
		}
		if s != nil {
			r.Steps = append(r.Steps, s)
		}
	}
	return r, nil
}
