package steps

import (
	"rig/playbooks"
	"rig/provision"
)

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
func NewDownRunnerFor(pb *playbooks.Playbook, env *Env, opts provision.DownOptions) (*provision.Runner, error) {
	up, err := NewRunnerFor(pb, env)
	if err != nil {
		return nil, err
	}
	r := &provision.Runner{Now: env.Now, StateFile: up.StateFile}
	for i := len(up.Steps) - 1; i >= 0; i-- {
		s := up.Steps[i]
		if d, ok := s.(provision.Downer); ok {
			r.Steps = append(r.Steps, d.Down(opts))
			continue
		}
		r.Steps = append(r.Steps, provision.Kept(s.Name(), keptWhy(s.Name())))
	}
	return r, nil
}
