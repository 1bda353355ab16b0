package system

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"rig/provision"
)

// record updates the kernel part of rig's state file (before a write).
func (s *kernelStep) record(change func(rec *provision.KernelRecord)) error {
	err := provision.UpdateState(s.state, func(st *provision.RigState) {
		if st.Kernel == nil {
			st.Kernel = &provision.KernelRecord{}
		}
		change(st.Kernel)
	})
	if err != nil {
		return &provision.Problem{Object: "kernel", Err: fmt.Errorf("%w; nothing was written", err)}
	}
	return nil
}

func recordSysctl(r *provision.KernelRecord, key, before string) {
	if r.Sysctl == nil {
		r.Sysctl = map[string]string{}
	}
	if _, ok := r.Sysctl[key]; !ok {
		r.Sysctl[key] = before
	}
}

// Down implements Downer.
func (s *kernelStep) Down(provision.DownOptions) provision.Step { return &kernelDown{s: s} }

type kernelDown struct{ s *kernelStep }

func (d *kernelDown) Name() string { return "kernel" }

// Check plans the restore: the GRUB drop-in (then update-grub) and the
// sysctl file as they were before rig, each sysctl's live value, then
// forgetting the record. Boot parameters leave the running kernel only at
// its next boot: while the running command line still has parameters rig's
// drop-in put there, the step is pending a reboot (exit 3, as on the way
// up) and the record keeps just those (Leaving), so a down after the reboot
// sees them gone and forgets it.
func (d *kernelDown) Check(ctx context.Context) (provision.Plan, error) {
	s := d.s
	st, err := provision.LoadState(s.state)
	if err != nil {
		return provision.Plan{}, &provision.Problem{Object: "kernel", Err: err}
	}
	var plan provision.Plan
	rec := st.Kernel
	if rec == nil {
		plan.Notes = append(plan.Notes, "kernel: no rig record in "+s.state.String()+" (rig changed nothing here, or down restored it)")
		return plan, nil
	}
	if err := d.vet(rec); err != nil {
		return provision.Plan{}, err
	}
	full := rec
	if rec, err = d.handLater(rec, &plan); err != nil {
		return provision.Plan{}, err
	}
	composed, dropIn, err := d.planComposed(&plan)
	if err != nil {
		return provision.Plan{}, err
	}
	for _, f := range rec.Files {
		if composed[f.Path] {
			continue
		}
		n := len(plan.Ops)
		provision.PlanRestoreFile(s.h, f, "kernel", &plan)
		if f.Path == grubDropIn && len(plan.Ops) > n {
			op := &plan.Ops[len(plan.Ops)-1]
			restore := op.Do
			op.Do = func(ctx context.Context) error {
				if err := restore(ctx); err != nil {
					return err
				}
				return s.updateGrub(ctx)
			}
			op.Changes = append(op.Changes, provision.Change{Object: "grub", Action: "run update-grub"})
			op.Refused = s.refuseHostWrite()
			f := f
			dropIn = &f
		}
	}
	d.planSysctlRestore(rec, &plan)
	leaving := d.bootLeaving(rec, dropIn, &plan)
	if len(leaving) > 0 {
		plan.AddPending(provision.ResetHostReboot, fmt.Sprintf("reboot required: the running kernel's command line (/proc/cmdline) still has %s from rig's %s; they leave at the next boot",
			strings.Join(leaving, " "), grubDropIn))
	}
	switch {
	case len(leaving) == 0:
		plan.Add(func(context.Context) error {
			return provision.UpdateState(s.state, func(st *provision.RigState) { st.Kernel = nil })
		}, provision.Change{Object: "rig state", Action: "forget the kernel record", From: s.state.String()})
	case len(full.Files) > 0 || len(full.Sysctl) > 0 || strings.Join(rec.Leaving, " ") != strings.Join(leaving, " "):
		plan.Add(func(context.Context) error {
			return provision.UpdateState(s.state, func(st *provision.RigState) { st.Kernel = &provision.KernelRecord{Leaving: leaving} })
		}, provision.Change{Object: "rig state", Action: "keep only the boot parameters still on the running command line (until the next boot)", To: strings.Join(leaving, " ")})
	}
	return plan, nil
}

// planSysctlRestore puts each recorded sysctl back to its value before rig.
func (d *kernelDown) planSysctlRestore(rec *provision.KernelRecord, plan *provision.Plan) {
	s := d.s
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
		plan.Add(func(context.Context) error { return s.h.WriteFile(sysctlPath(k), []byte(before+"\n")) },
			provision.Change{Object: "sysctl " + k, Action: "set (back to before rig)", From: normSysctl(cur), To: before})
	}
}

// bootLeaving lists the boot parameters down takes off the command line
// that the running kernel still has: those of rig's drop-in that the
// restored file (dropIn: its record, when restored now) does not hold, and
// those recorded as leaving by an earlier down.
func (d *kernelDown) bootLeaving(rec *provision.KernelRecord, dropIn *provision.FileRecord, plan *provision.Plan) []string {
	s := d.s
	cand := append([]string(nil), rec.Leaving...)
	if dropIn != nil {
		now, _ := s.h.ReadFile(grubDropIn)
		cur, _ := parseDropIn(string(now))
		var keep []string
		if dropIn.Existed {
			keep, _ = parseDropIn(dropIn.Content)
		}
		cand = append(cand, missingFrom(cur, keep)...)
	}
	if len(cand) == 0 {
		return nil
	}
	_, raw, err := s.readCmdline()
	if err != nil {
		plan.Notes = append(plan.Notes, "kernel cmdline: the running kernel keeps rig's boot parameters until the next boot")
		return nil
	}
	live := map[string]bool{}
	for _, t := range splitCmdline(raw) {
		live[t] = true
	}
	var out []string
	seen := map[string]bool{}
	for _, t := range cand {
		if live[t] && !seen[t] {
			out = append(out, t)
			seen[t] = true
		}
	}
	return out
}

// kernelFiles are the files the kernel step writes (grubOp, planSysctl):
// the only paths a kernel file record may name.
func kernelFiles() []string { return []string{grubDropIn, sysctlDropIn} }

// VetRecords implements RecordVetter.
func (d *kernelDown) VetRecords(context.Context) error {
	st, err := provision.LoadState(d.s.state)
	if err != nil {
		return &provision.Problem{Object: "kernel", Err: err}
	}
	if st.Kernel == nil {
		return nil
	}
	return d.vet(st.Kernel)
}

// vet refuses the records the kernel step could not have written for this
// playbook: a file other than its drop-ins (or recorded as a link, or
// with content over MaxRecordedContent), a sysctl the playbook does not
// set, a value with a control character or over MaxRecordedValue.
func (d *kernelDown) vet(rec *provision.KernelRecord) error {
	c := provision.RecordCheck{State: d.s.state}
	for i, f := range rec.Files {
		field := fmt.Sprintf("kernel.files[%d]", i)
		switch {
		case !slices.Contains(kernelFiles(), f.Path):
			c.Refuse(field+".path", "%q is not a file the kernel step writes (%s)", f.Path, strings.Join(kernelFiles(), ", "))
		case f.Link:
			c.Refuse(field+".link", "true for %s, which the kernel step writes as a regular file", f.Path)
		case len(f.Content) > provision.MaxRecordedContent:
			c.Refuse(field+".content", "%d bytes, more than the %d rig records", len(f.Content), provision.MaxRecordedContent)
		case f.Existed:
			if why := kernelBeforeWhy(f.Path, f.Content); why != "" {
				c.Refuse(field+".content", "the content before rig of %s: %s; rig restores into its own drop-in only what it could have written there", f.Path, why)
			}
		}
	}
	if len(rec.BootArgs) > 0 {
		if why := kernelBeforeWhy(grubDropIn, renderDropIn(rec.BootArgs)); why != "" {
			c.Refuse("kernel.bootArgs", "the boot parameters this playbook put in %s: %s", grubDropIn, why)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(rec.SysctlFile)) {
		if _, ok := d.s.want[k]; !ok {
			c.Refuse(fmt.Sprintf("kernel.sysctlFile[%q]", k), "%q is not a sysctl this playbook's kernel section sets (%s)", k, provision.OrNoneList(d.s.keys))
		}
	}
	if len(rec.SysctlFile) > 0 {
		if why := kernelBeforeWhy(sysctlDropIn, renderSysctl(slices.Sorted(maps.Keys(rec.SysctlFile)), rec.SysctlFile)); why != "" {
			c.Refuse("kernel.sysctlFile", "the sysctls this playbook put in %s: %s", sysctlDropIn, why)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(rec.Sysctl)) {
		field := fmt.Sprintf("kernel.sysctl[%q]", k)
		if _, ok := d.s.want[k]; !ok {
			c.Refuse(field, "%q is not a sysctl this playbook's kernel section sets (%s)", k, provision.OrNoneList(d.s.keys))
			continue
		}
		if why := provision.BadText(rec.Sysctl[k], provision.MaxRecordedValue); why != "" {
			c.Refuse(field, "the value before rig: %s", why)
		}
	}
	return c.Err()
}

// planComposed plans rig's drop-ins that other playbooks still up put
// settings in (composeSysctl, composeBoot): each is written with theirs
// (the GRUB one followed by update-grub) instead of restored, and says
// which (composed); for the GRUB drop-in it returns what the file holds
// after, for bootLeaving. This playbook's record of them is forgotten
// with the rest (a later playbook's record holds the file before rig).
func (d *kernelDown) planComposed(plan *provision.Plan) (map[string]bool, *provision.FileRecord, error) {
	s := d.s
	ls, self, err := provision.Layers(s.state)
	if err != nil {
		return nil, nil, &provision.Problem{Object: "kernel", Err: err}
	}
	composed := map[string]bool{}
	keys, vals, _, err := composeSysctl(s.state, ls, self, nil, false)
	if err != nil {
		return nil, nil, err
	}
	if len(keys) > 0 {
		composed[sysctlDropIn] = true
		content := renderSysctl(keys, vals)
		now, err := s.h.ReadFile(sysctlDropIn)
		if adds := downAdds(vals, parseSysctlDropIn(string(now)), func(k string) bool { _, ok := s.want[k]; return ok },
			func(k, v string) string { return k + " = " + v }); adds != "" {
			return nil, nil, refuseAdds(s.state, ls, self, sysctlDropIn, adds)
		}
		if err != nil || string(now) != content {
			plan.Add(func(context.Context) error { return s.h.ReplaceFile(sysctlDropIn, []byte(content), 0o644) },
				provision.Change{Object: "kernel " + sysctlDropIn, Action: "write the sysctls of the playbooks still up (" + otherNames(ls, self) + ")", To: strings.Join(keys, ", ")})
		}
	}
	tokens, _, err := composeBoot(s.state, ls, self, nil, false)
	if err != nil || len(tokens) == 0 {
		return composed, nil, err
	}
	composed[grubDropIn] = true
	content := renderDropIn(tokens)
	now, err := s.h.ReadFile(grubDropIn)
	var nowTokens []string
	if cur, ours := parseDropIn(string(now)); ours && kernelBeforeWhy(grubDropIn, string(now)) == "" {
		nowTokens = cur
	}
	var ownItems []string
	for _, it := range s.items {
		ownItems = append(ownItems, it.tokens...)
	}
	ownKeys := bootItemMap(ownItems)
	if adds := downAdds(bootItemMap(tokens), bootItemMap(nowTokens), func(k string) bool { _, ok := ownKeys[k]; return ok },
		func(_, v string) string { return v }); adds != "" {
		return nil, nil, refuseAdds(s.state, ls, self, grubDropIn, adds)
	}
	if err != nil || string(now) != content {
		plan.Ops = append(plan.Ops, provision.Op{Changes: []provision.Change{
			{Object: "kernel " + grubDropIn, Action: "write the boot parameters of the playbooks still up (" + otherNames(ls, self) + ")", To: strings.Join(tokens, " ")},
			{Object: "grub", Action: "run update-grub"}},
			Do: func(ctx context.Context) error {
				if err := s.h.ReplaceFile(grubDropIn, []byte(content), 0o644); err != nil {
					return err
				}
				return s.updateGrub(ctx)
			}, Refused: s.refuseHostWrite()})
	}
	return composed, &provision.FileRecord{Path: grubDropIn, Existed: true, Content: content}, nil
}

// otherNames lists the playbooks of ls other than position self.
func otherNames(ls []provision.PlaybookRecords, self int) string {
	var out []string
	for i, l := range ls {
		if i != self {
			out = append(out, l.Playbook)
		}
	}
	return strings.Join(out, ", ")
}
