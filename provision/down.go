package provision

import (
	"context"

	"rig/playbooks"
)

// DownOptions are `rig down`'s choices.
type DownOptions struct {
	// Firmware restores firmware parameters (the DPU mode) too; they only
	// take effect after a power cycle, so it is asked for explicitly.
	Firmware bool
}

// Downer is a step that can undo what it configured: Down returns the
// step whose Check plans the undo from rig's state file (read-only, as
// every Check), so `rig plan --down` and `rig down` share the runner's
// plan, apply and verify.
type Downer interface {
	Down(opts DownOptions) Step
}

// keptStep is a step rig down leaves as it is; its Check says why.
type keptStep struct{ name, why string }

func (k keptStep) Name() string { return k.name }

func (k keptStep) Check(context.Context) (Plan, error) {
	return Plan{Notes: []string{k.why}}, nil
}

// keptWhy says why rig down leaves a step's work in place.
func keptWhy(step string) string {
	switch step {
	case "mst":
		return "mst: left as is (`mst start` only makes device nodes)"
	case "rdma":
		return "rdma: links left up (setting them down could cut off this host)"
	case "check":
		return "check: nothing to undo (each check removes its ports and flows when it ends)"
	}
	return step + ": rig down cannot undo this step yet; left as is"
}

// NewDownRunnerFor builds the runner of `rig down`: the playbook's steps in
// reverse order, each as the step that undoes it.
func NewDownRunnerFor(pb *playbooks.Playbook, env *Env, opts DownOptions) (*Runner, error) {
	up, err := NewRunnerFor(pb, env)
	if err != nil {
		return nil, err
	}
	r := &Runner{Now: env.Now, StateFile: up.StateFile}
	for i := len(up.Steps) - 1; i >= 0; i-- {
		s := up.Steps[i]
		if d, ok := s.(Downer); ok {
			r.Steps = append(r.Steps, d.Down(opts))
			continue
		}
		r.Steps = append(r.Steps, keptStep{name: s.Name(), why: keptWhy(s.Name())})
	}
	return r, nil
}
