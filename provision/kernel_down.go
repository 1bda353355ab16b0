package provision

import (
	"context"
	"fmt"
	"sort"
)

// record updates the kernel part of rig's state file (before a write).
func (s *kernelStep) record(change func(rec *kernelRecord)) error {
	err := updateState(s.h, func(st *rigState) {
		if st.Kernel == nil {
			st.Kernel = &kernelRecord{}
		}
		change(st.Kernel)
	})
	if err != nil {
		return &Problem{Object: "kernel", Err: fmt.Errorf("%w; nothing was written", err)}
	}
	return nil
}

func (r *kernelRecord) recordSysctl(key, before string) {
	if r.Sysctl == nil {
		r.Sysctl = map[string]string{}
	}
	if _, ok := r.Sysctl[key]; !ok {
		r.Sysctl[key] = before
	}
}

// Down implements Downer.
func (s *kernelStep) Down(DownOptions) Step { return &kernelDown{s: s} }

type kernelDown struct{ s *kernelStep }

func (d *kernelDown) Name() string { return "kernel" }

// Check plans the restore: the GRUB drop-in (then update-grub) and the
// sysctl file as they were before rig, each sysctl's live value, then
// forgetting the record. Boot parameters leave the running kernel only at
// its next boot; a note says so.
func (d *kernelDown) Check(ctx context.Context) (Plan, error) {
	s := d.s
	st, err := loadState(s.h)
	if err != nil {
		return Plan{}, &Problem{Object: "kernel", Err: err}
	}
	var plan Plan
	rec := st.Kernel
	if rec == nil {
		plan.Notes = append(plan.Notes, "kernel: nothing recorded in "+stateFilePath()+" (rig changed nothing here, or it was restored)")
		return plan, nil
	}
	for _, f := range rec.Files {
		n := len(plan.Ops)
		planRestoreFile(s.h, f, "kernel", &plan)
		if f.Path == grubDropIn && len(plan.Ops) > n {
			op := &plan.Ops[len(plan.Ops)-1]
			restore := op.Do
			op.Do = func(ctx context.Context) error {
				if err := restore(ctx); err != nil {
					return err
				}
				return s.updateGrub(ctx)
			}
			op.Changes = append(op.Changes, Change{Object: "grub", Action: "run update-grub"})
			op.Refused = s.refuseHostWrite()
			plan.Notes = append(plan.Notes, "kernel cmdline: the running kernel keeps rig's boot parameters until the next boot")
		}
	}
	keys := make([]string, 0, len(rec.Sysctl))
	for k := range rec.Sysctl {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		k, before := k, rec.Sysctl[k]
		cur, err := s.h.ReadString(sysctlPath(k))
		if err != nil || normSysctl(cur) == before {
			continue
		}
		plan.add(func(context.Context) error { return s.h.WriteFile(sysctlPath(k), []byte(before+"\n")) },
			Change{Object: "sysctl " + k, Action: "set (back to before rig)", From: normSysctl(cur), To: before})
	}
	plan.add(func(context.Context) error {
		return updateState(s.h, func(st *rigState) { st.Kernel = nil })
	}, Change{Object: "rig state", Action: "forget the kernel record", From: stateFilePath()})
	return plan, nil
}
