package system

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"rig/hugepages"
	"rig/provision"
)

// record updates the hugepages part of rig's state file (before a write).
func (s *HugepagesStep) record(change func(rec *provision.HugeRecord)) error {
	err := provision.UpdateState(s.state, func(st *provision.RigState) {
		if st.Hugepages == nil {
			st.Hugepages = &provision.HugeRecord{}
		}
		change(st.Hugepages)
	})
	if err != nil {
		return fmt.Errorf("hugepages: %w; nothing was written", err)
	}
	return nil
}

// recordPool keeps a pool's count from before rig's first change.
func recordPool(r *provision.HugeRecord, sizeKB int64, node, before int) {
	for _, p := range r.Pools {
		if p.SizeKB == sizeKB && p.Node == node {
			return
		}
	}
	r.Pools = append(r.Pools, provision.PoolRecord{SizeKB: sizeKB, Node: node, Before: before})
}

func recordMount(r *provision.HugeRecord, path string, created bool) {
	for _, m := range r.Mounts {
		if m.Path == path {
			return
		}
	}
	r.Mounts = append(r.Mounts, provision.MountRecord{Path: path, Created: created})
}

// Down implements Downer: the step that restores what the hugepages step
// recorded.
func (s *HugepagesStep) Down(provision.DownOptions) provision.Step { return &hugepagesDown{s: s} }

type hugepagesDown struct{ s *HugepagesStep }

func (d *hugepagesDown) Name() string { return "hugepages" }

// Check plans, in order: unmount rig's mounts (and remove the directories
// rig made), give the pools back to their counts before rig (never below
// the pages in use), restore or remove the boot-time files, forget the
// record.
func (d *hugepagesDown) Check(ctx context.Context) (provision.Plan, error) {
	s := d.s
	st, err := provision.LoadState(s.state)
	if err != nil {
		return provision.Plan{}, &provision.Problem{Object: "hugepages", Err: err}
	}
	rec := st.Hugepages
	var plan provision.Plan
	if rec == nil {
		plan.Notes = append(plan.Notes, "hugepages: no rig record in "+s.state.String()+" (rig changed nothing here, or down restored it)")
		return plan, nil
	}
	hs, err := hugepages.ReadState(s.fs)
	if err != nil {
		return provision.Plan{}, err
	}
	if err := d.vet(rec, hs); err != nil {
		return provision.Plan{}, err
	}
	l, err := s.layers()
	if err != nil {
		return provision.Plan{}, err
	}
	for _, m := range rec.Mounts {
		if !d.handMount(l, m, &plan) {
			d.planUnmount(hs, m, &plan)
		}
	}
	for _, p := range rec.Pools {
		if d.handPool(l, hs, p, &plan) {
			continue
		}
		if err := d.planPool(ctx, hs, p, &plan); err != nil {
			return provision.Plan{}, err
		}
	}
	others, err := composePools(s.state, l.ls, l.self, nil, false, persistPoolOK(hs))
	if err != nil {
		return provision.Plan{}, err
	}
	if len(others) > 0 {
		// the playbooks still up put pools in the drop-in: it keeps theirs
		f := hugepages.PersistFiles(others, nil)[0]
		now, err := s.fs.ReadFile(f.Path)
		if adds := downAdds(poolCounts(others), poolCounts(parseTmpfiles(string(now))), func(k [2]int64) bool {
			return slices.ContainsFunc(s.res, func(r hugepages.Reservation) bool { return r.SizeKB == k[0] && int64(r.Node) == k[1] })
		}, func(k [2]int64, n int) string { return fmt.Sprintf("%s: %d", hugepages.PoolName(k[0], int(k[1])), n) }); adds != "" {
			return provision.Plan{}, refuseAdds(s.state, l.ls, l.self, f.Path, adds)
		}
		if err != nil || string(now) != f.Content {
			plan.Add(func(context.Context) error { return s.fs.ReplaceFile(f.Path, []byte(f.Content), 0o644) },
				provision.Change{Object: "hugepages persist " + f.Path, Action: "write the pools of the playbooks still up (" + otherNames(l.ls, l.self) + ")"})
		}
	}
	for _, f := range rec.Files {
		if d.handFile(l, f, &plan) || (f.Path == hugepages.TmpfilesPath && len(others) > 0) {
			continue
		}
		provision.PlanRestoreFile(s.fs, f, "hugepages persist", &plan)
	}
	plan.Add(func(context.Context) error {
		return provision.UpdateState(s.state, func(st *provision.RigState) { st.Hugepages = nil })
	}, provision.Change{Object: "rig state", Action: "forget the hugepages record", From: s.state.String()})
	return plan, nil
}

// planUnmount unmounts a mount rig made when it is a hugetlbfs mount now
// (hs.Mounts holds only those), and removes the directory rig made for it
// only while it is empty: a directory someone filled since is left, said
// in a note.
func (d *hugepagesDown) planUnmount(hs *hugepages.State, m provision.MountRecord, plan *provision.Plan) {
	s := d.s
	obj := "hugetlbfs " + m.Path
	if m.Mounted { // mounted before this playbook, by another one of rig's
		return
	}
	_, mounted := hugepages.MountAt(hs.Mounts, m.Path)
	if mounted {
		plan.Add(func(context.Context) error { return s.mounter.UnmountHugetlbfs(m.Path) },
			provision.Change{Object: obj, Action: "umount (rig mounted it)"})
		if s.fixtureRoot != "" {
			plan.Ops[len(plan.Ops)-1].Refused = s.refuseFixtureMount(obj)
		}
	}
	if !m.Created || !s.fs.Exists(m.Path) {
		return
	}
	if !mounted { // under a mount the directory's own entries cannot be seen
		if why := notEmptyDir(s.fs, m.Path); why != "" {
			plan.Notes = append(plan.Notes, fmt.Sprintf("%s: the directory rig made is left in place: it %s (rig removes it only while empty)", obj, why))
			return
		}
	}
	plan.Add(func(context.Context) error {
		if why := notEmptyDir(s.fs, m.Path); why != "" {
			return &provision.Problem{Object: obj, Err: fmt.Errorf("not removed: it %s once unmounted", why),
				FixText: "look at what is in it; remove it by hand (rmdir " + m.Path + ") if nothing there is needed"}
		}
		return s.fs.Remove(m.Path)
	}, provision.Change{Object: obj, Action: "remove the directory rig made (empty)"})
}

// notEmptyDir says why p is not an empty directory ("" when it is one).
func notEmptyDir(fsys hugepages.FS, p string) string {
	ents, err := fsys.ReadDir(p)
	switch {
	case err != nil:
		return "is not a directory rig can read (" + err.Error() + ")"
	case len(ents) > 0:
		return fmt.Sprintf("holds %d entries (e.g. %s)", len(ents), ents[0].Name())
	}
	return ""
}

// VetRecords implements RecordVetter.
func (d *hugepagesDown) VetRecords(context.Context) error {
	s := d.s
	st, err := provision.LoadState(s.state)
	if err != nil {
		return &provision.Problem{Object: "hugepages", Err: err}
	}
	if st.Hugepages == nil {
		return nil
	}
	hs, err := hugepages.ReadState(s.fs)
	if err != nil {
		return nil // Check says so in its turn
	}
	return d.vet(st.Hugepages, hs)
}

// vet refuses the records the hugepages step could not have written for
// this playbook on this host: a file other than the persistence files it
// writes (hugepages.PersistFiles and their enable links, as planPersist
// makes them), a mount other than the playbook's, a pool of a size or node
// the host lacks, or a count before rig below 0 or above what the host's
// memory holds.
func (d *hugepagesDown) vet(rec *provision.HugeRecord, hs *hugepages.State) error {
	s := d.s
	c := provision.RecordCheck{State: s.state}
	mounts := s.desiredMounts(hs)
	isLink := map[string]bool{} // path -> the step makes a symbolic link there
	var names []string
	for _, f := range hugepages.PersistFiles(s.res, mounts) {
		isLink[f.Path] = false
		names = append(names, f.Path)
		if strings.HasSuffix(f.Path, ".mount") {
			link, _ := unitLink(f.Path)
			isLink[link] = true
			names = append(names, link)
		}
	}
	for i, f := range rec.Files {
		field := fmt.Sprintf("hugepages.files[%d]", i)
		link, ok := isLink[f.Path]
		switch {
		case !ok:
			c.Refuse(field+".path", "%q is not a file the hugepages step writes for this playbook (%s)", f.Path, provision.OrNoneList(names))
		case f.Link != link:
			c.Refuse(field+".link", "%v for %s, which the step writes as %s", f.Link, f.Path, map[bool]string{true: "a symbolic link", false: "a regular file"}[link])
		case f.Link && f.Existed && f.Content != unitTarget(f.Path):
			c.Refuse(field+".existed", "true for the link %s with target %q: the step makes it only where there is none, or relies on one to %s that another playbook of rig's made", f.Path, f.Content, unitTarget(f.Path))
		case len(f.Content) > provision.MaxRecordedContent:
			c.Refuse(field+".content", "%d bytes, more than the %d rig records", len(f.Content), provision.MaxRecordedContent)
		case f.Existed && !f.Link:
			if why := hugepagesBeforeWhy(f.Path, f.Content, hs.Sizes, mounts); why != "" {
				c.Refuse(field+".content", "the content before rig of %s: %s; rig restores into its own drop-in only what it could have written there", f.Path, why)
			}
		}
	}
	var paths []string
	for _, m := range mounts {
		paths = append(paths, m.Path)
	}
	for i, m := range rec.Mounts {
		if !slices.Contains(paths, m.Path) {
			c.Refuse(fmt.Sprintf("hugepages.mounts[%d].path", i), "%q is not a mount of this playbook's hugepages section (%s)", m.Path, provision.OrNoneList(paths))
		}
	}
	for i, p := range rec.Persist {
		if why := persistPoolOK(hs)(p); why != "" {
			c.Refuse(fmt.Sprintf("hugepages.persist[%d]", i), "a pool this playbook put in %s: %s", hugepages.TmpfilesPath, why)
		}
	}
	for i, p := range rec.Pools {
		field := fmt.Sprintf("hugepages.pools[%d]", i)
		switch {
		case !hs.HasSize(p.SizeKB):
			c.Refuse(field+".sizeKB", "%d: this host has no %d kB pages (/sys/kernel/mm/hugepages/hugepages-%dkB; it has %s)", p.SizeKB, p.SizeKB, p.SizeKB, sizeList(hs.Sizes))
		case p.Node != hugepages.AllNodes && !hs.HasNode(p.Node):
			c.Refuse(field+".node", "%d: this host has no such NUMA node with hugepages (nodes: %v; -1 is system-wide)", p.Node, hs.Nodes)
		case p.Before < 0:
			c.Refuse(field+".before", "%d: a page count is never negative", p.Before)
		case hs.Meminfo.MemTotalKB <= 0:
			c.Refuse(field+".before", "%d: /proc/meminfo shows no MemTotal to bound it by", p.Before)
		case int64(p.Before) > hs.Meminfo.MemTotalKB/p.SizeKB:
			c.Refuse(field+".before", "%d pages of %s is more than this host's memory holds (MemTotal %s: at most %d)",
				p.Before, hugepages.FormatSize(p.SizeKB), hugepages.FormatAmount(hs.Meminfo.MemTotalKB), hs.Meminfo.MemTotalKB/p.SizeKB)
		}
	}
	return c.Err()
}

func (d *hugepagesDown) planPool(ctx context.Context, hs *hugepages.State, p provision.PoolRecord, plan *provision.Plan) error {
	obj := "hugepages " + hugepages.PoolName(p.SizeKB, p.Node)
	cur, ok := hs.Pool(p.SizeKB, p.Node)
	if !ok || cur.Total == p.Before {
		return nil
	}
	if p.Before < cur.InUse() {
		if first := provision.RestartsBefore(ctx); len(first) > 0 {
			// a plan: an earlier step of this down stops or restarts what
			// holds pages (ovs-vswitchd); rig down checks again after it
			r := hugepages.Reservation{SizeKB: p.SizeKB, Node: p.Node, Count: p.Before, Exact: true}
			plan.Add(func(context.Context) error { return d.s.setPages(r) },
				provision.Change{Object: obj, Action: fmt.Sprintf("set nr_hugepages (back to before rig) once %s frees the %d pages in use now", strings.Join(first, " and "), cur.InUse()),
					From: fmt.Sprint(cur.Total), To: fmt.Sprint(p.Before)})
			return nil
		}
		return &provision.Problem{Object: obj, Err: fmt.Errorf("restoring %d pages (the count before rig) would free pages in use (%d of %d); nothing was written", p.Before, cur.InUse(), cur.Total),
			FixText: "stop what uses them (DPDK applications, ovs-vswitchd; `rig hugepages show`), then `rig down` again"}
	}
	r := hugepages.Reservation{SizeKB: p.SizeKB, Node: p.Node, Count: p.Before, Exact: true}
	plan.Add(func(context.Context) error { return d.s.setPages(r) },
		provision.Change{Object: obj, Action: "set nr_hugepages (back to before rig)", From: fmt.Sprint(cur.Total), To: fmt.Sprint(p.Before)})
	return nil
}

// unitTarget is the target rig's enable link at p has (unitLink).
func unitTarget(p string) string {
	_, target := unitLink(path.Dir(path.Dir(p)) + "/" + path.Base(p))
	return target
}

// poolCounts is reservations' counts by size and node.
func poolCounts(res []hugepages.Reservation) map[[2]int64]int {
	out := map[[2]int64]int{}
	for _, r := range res {
		out[[2]int64{r.SizeKB, int64(r.Node)}] = r.Count
	}
	return out
}
