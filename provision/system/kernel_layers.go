package system

import (
	"context"
	"maps"
	"slices"

	"rig/provision"
)

// handLater splits the kernel record rec into what this down restores
// (the returned record) and what a later playbook also recorded (a file
// rig writes, a sysctl): those are left as they are, and that playbook's
// record takes over this one's value before (provision.Layers), in one op
// that writes only rig's state file.
func (d *kernelDown) handLater(rec *provision.KernelRecord, plan *provision.Plan) (*provision.KernelRecord, error) {
	ls, self, err := provision.Layers(d.s.state)
	if err != nil {
		return nil, &provision.Problem{Object: "kernel", Err: err}
	}
	next := func(holds func(r *provision.KernelRecord) bool) string {
		n, _ := provision.NextLayer(ls, self, func(st provision.RigState) bool { return st.Kernel != nil && holds(st.Kernel) })
		return n
	}
	own := &provision.KernelRecord{Leaving: rec.Leaving}
	files := map[string][]provision.FileRecord{} // playbook -> files it takes over
	sysctls := map[string]map[string]string{}
	var changes []provision.Change
	for _, f := range rec.Files {
		n := next(func(r *provision.KernelRecord) bool {
			return slices.ContainsFunc(r.Files, func(g provision.FileRecord) bool { return g.Path == f.Path })
		})
		if n == "" {
			own.Files = append(own.Files, f)
			continue
		}
		files[n] = append(files[n], f)
		changes = append(changes, provision.Change{Object: "kernel " + f.Path, Action: "left as is: playbook " + n + " wrote it after this one; its record now restores it"})
	}
	for _, k := range slices.Sorted(maps.Keys(rec.Sysctl)) {
		n := next(func(r *provision.KernelRecord) bool { _, ok := r.Sysctl[k]; return ok })
		if n == "" {
			if own.Sysctl == nil {
				own.Sysctl = map[string]string{}
			}
			own.Sysctl[k] = rec.Sysctl[k]
			continue
		}
		if sysctls[n] == nil {
			sysctls[n] = map[string]string{}
		}
		sysctls[n][k] = rec.Sysctl[k]
		changes = append(changes, provision.Change{Object: "sysctl " + k, Action: "left as is: playbook " + n + " set it after this one; its record now restores the value before this playbook"})
	}
	if len(changes) == 0 {
		return rec, nil
	}
	sf := d.s.state
	plan.Add(func(context.Context) error {
		for _, pb := range slices.Sorted(maps.Keys(files)) {
			if err := provision.UpdateState(sf.For(pb), func(st *provision.RigState) {
				for _, f := range files[pb] {
					for i := range st.Kernel.Files {
						if st.Kernel.Files[i].Path == f.Path {
							st.Kernel.Files[i] = f
						}
					}
				}
			}); err != nil {
				return err
			}
		}
		for _, pb := range slices.Sorted(maps.Keys(sysctls)) {
			if err := provision.UpdateState(sf.For(pb), func(st *provision.RigState) { maps.Copy(st.Kernel.Sysctl, sysctls[pb]) }); err != nil {
				return err
			}
		}
		return nil
	}, changes...)
	return own, nil
}
