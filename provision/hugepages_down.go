package provision

import (
	"context"
	"fmt"

	"rig/hugepages"
)

// record updates the hugepages part of rig's state file (before a write).
func (s *HugepagesStep) record(change func(rec *hugeRecord)) error {
	err := updateState(s.state, func(st *rigState) {
		if st.Hugepages == nil {
			st.Hugepages = &hugeRecord{}
		}
		change(st.Hugepages)
	})
	if err != nil {
		return fmt.Errorf("hugepages: %w; nothing was written", err)
	}
	return nil
}

// recordPool keeps a pool's count from before rig's first change.
func (r *hugeRecord) recordPool(sizeKB int64, node, before int) {
	for _, p := range r.Pools {
		if p.SizeKB == sizeKB && p.Node == node {
			return
		}
	}
	r.Pools = append(r.Pools, poolRecord{SizeKB: sizeKB, Node: node, Before: before})
}

func (r *hugeRecord) recordMount(path string, created bool) {
	for _, m := range r.Mounts {
		if m.Path == path {
			return
		}
	}
	r.Mounts = append(r.Mounts, mountRecord{Path: path, Created: created})
}

// Down implements Downer: the step that restores what the hugepages step
// recorded.
func (s *HugepagesStep) Down(DownOptions) Step { return &hugepagesDown{s: s} }

type hugepagesDown struct{ s *HugepagesStep }

func (d *hugepagesDown) Name() string { return "hugepages" }

// Check plans, in order: unmount rig's mounts (and remove the directories
// rig made), give the pools back to their counts before rig (never below
// the pages in use), restore or remove the boot-time files, forget the
// record.
func (d *hugepagesDown) Check(ctx context.Context) (Plan, error) {
	s := d.s
	st, err := loadState(s.state)
	if err != nil {
		return Plan{}, &Problem{Object: "hugepages", Err: err}
	}
	rec := st.Hugepages
	var plan Plan
	if rec == nil {
		plan.Notes = append(plan.Notes, "hugepages: no rig record in "+s.state.String()+" (rig changed nothing here, or down restored it)")
		return plan, nil
	}
	hs, err := hugepages.ReadState(s.fs)
	if err != nil {
		return Plan{}, err
	}
	for _, m := range rec.Mounts {
		d.planUnmount(hs, m, &plan)
	}
	for _, p := range rec.Pools {
		if err := d.planPool(hs, p, &plan); err != nil {
			return Plan{}, err
		}
	}
	for _, f := range rec.Files {
		planRestoreFile(s.fs, f, "hugepages persist", &plan)
	}
	plan.add(func(context.Context) error {
		return updateState(s.state, func(st *rigState) { st.Hugepages = nil })
	}, Change{Object: "rig state", Action: "forget the hugepages record", From: s.state.String()})
	return plan, nil
}

func (d *hugepagesDown) planUnmount(hs *hugepages.State, m mountRecord, plan *Plan) {
	s := d.s
	if _, ok := hugepages.MountAt(hs.Mounts, m.Path); ok {
		plan.add(func(context.Context) error { return s.mounter.UnmountHugetlbfs(m.Path) },
			Change{Object: "hugetlbfs " + m.Path, Action: "umount (rig mounted it)"})
		if s.fixtureRoot != "" {
			plan.Ops[len(plan.Ops)-1].Refused = s.refuseFixtureMount("hugetlbfs " + m.Path)
		}
	}
	if m.Created && s.fs.Exists(m.Path) {
		plan.add(func(context.Context) error { return s.fs.Remove(m.Path) },
			Change{Object: "hugetlbfs " + m.Path, Action: "remove the directory rig made"})
	}
}

func (d *hugepagesDown) planPool(hs *hugepages.State, p poolRecord, plan *Plan) error {
	obj := "hugepages " + hugepages.PoolName(p.SizeKB, p.Node)
	cur, ok := hs.Pool(p.SizeKB, p.Node)
	if !ok || cur.Total == p.Before {
		return nil
	}
	if p.Before < cur.InUse() {
		return &Problem{Object: obj, Err: fmt.Errorf("restoring %d pages (the count before rig) would free pages in use (%d of %d); nothing was written", p.Before, cur.InUse(), cur.Total),
			FixText: "stop what uses them (DPDK applications, ovs-vswitchd; `rig hugepages show`), then `rig down` again"}
	}
	r := hugepages.Reservation{SizeKB: p.SizeKB, Node: p.Node, Count: p.Before, Exact: true}
	plan.add(func(context.Context) error { return d.s.setPages(r) },
		Change{Object: obj, Action: "set nr_hugepages (back to before rig)", From: fmt.Sprint(cur.Total), To: fmt.Sprint(p.Before)})
	return nil
}
