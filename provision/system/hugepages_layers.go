package system

import (
	"context"
	"fmt"
	"slices"

	"rig/hugepages"
	"rig/provision"
)

// hugeLayers composes this playbook's hugepages undo with the other
// playbooks' (provision.Layers): for each pool, mount and file this
// playbook recorded, the first later playbook that recorded the same one
// ("" when none) takes over this playbook's "before" instead of down
// restoring it now.
type hugeLayers struct {
	ls   []provision.PlaybookRecords
	self int
}

func (s *HugepagesStep) layers() (hugeLayers, error) {
	ls, self, err := provision.Layers(s.state)
	if err != nil {
		return hugeLayers{}, &provision.Problem{Object: "hugepages", Err: err}
	}
	return hugeLayers{ls: ls, self: self}, nil
}

// The hugepages records two playbooks can hold for one object, and how a
// later playbook's record takes over an earlier one's (provision.Handover).
var (
	poolHand = provision.Handover[provision.PoolRecord]{
		Of: func(st *provision.RigState) []provision.PoolRecord {
			if st.Hugepages == nil {
				return nil
			}
			return st.Hugepages.Pools
		},
		Same:  func(a, b provision.PoolRecord) bool { return a.SizeKB == b.SizeKB && a.Node == b.Node },
		Merge: func(later *provision.PoolRecord, mine provision.PoolRecord) { later.Before = mine.Before },
	}
	mountHand = provision.Handover[provision.MountRecord]{
		Of: func(st *provision.RigState) []provision.MountRecord {
			if st.Hugepages == nil {
				return nil
			}
			return st.Hugepages.Mounts
		},
		Same: func(a, b provision.MountRecord) bool { return a.Path == b.Path },
		Merge: func(later *provision.MountRecord, mine provision.MountRecord) {
			later.Created = later.Created || mine.Created
			later.Mounted = mine.Mounted
		},
	}
	hugeFileHand = provision.Handover[provision.FileRecord]{
		Of: func(st *provision.RigState) []provision.FileRecord {
			if st.Hugepages == nil {
				return nil
			}
			return st.Hugepages.Files
		},
		Same:  func(a, b provision.FileRecord) bool { return a.Path == b.Path },
		Merge: func(later *provision.FileRecord, mine provision.FileRecord) { *later = mine },
	}
)

// handPool plans handing pool p's count before this playbook to the later
// playbook that also recorded it, whose record then restores it; the live
// pool stays (that one set it after this one, and still wants it). true
// when there is one.
func (d *hugepagesDown) handPool(l hugeLayers, hs *hugepages.State, p provision.PoolRecord, plan *provision.Plan) bool {
	cur, _ := hs.Pool(p.SizeKB, p.Node)
	return poolHand.Plan(d.s.state, l.ls, l.self, p, plan, func(next string) provision.Change {
		return provision.Change{Object: "hugepages " + hugepages.PoolName(p.SizeKB, p.Node),
			Action: fmt.Sprintf("left at %d: playbook %s changed it after this one; its record now restores the count before this playbook", cur.Total, next),
			To:     fmt.Sprint(p.Before)}
	})
}

// handMount: a hugetlbfs mount a later playbook also recorded stays
// mounted; that playbook's record takes over whether rig made the
// directory.
func (d *hugepagesDown) handMount(l hugeLayers, m provision.MountRecord, plan *provision.Plan) bool {
	return mountHand.Plan(d.s.state, l.ls, l.self, m, plan, func(next string) provision.Change {
		return provision.Change{Object: "hugetlbfs " + m.Path, Action: "left mounted: playbook " + next + " uses it too; its record now undoes it"}
	})
}

// handFile: a persistence file a later playbook also recorded keeps its
// content; that playbook's record takes over this one's "before".
func (d *hugepagesDown) handFile(l hugeLayers, f provision.FileRecord, plan *provision.Plan) bool {
	return hugeFileHand.Plan(d.s.state, l.ls, l.self, f, plan, func(next string) provision.Change {
		return provision.Change{Object: "hugepages persist " + f.Path, Action: "left as is: playbook " + next + " wrote it too; its record now restores it"}
	})
}

// planReliance records, in this playbook's records, the pools and mounts
// it wants that another playbook of rig's set up before it and that this
// up leaves as they are (they already satisfy it): a pool with its count
// now as this playbook's "before", a mount as mounted before it. Without
// them, the other playbook's down would take back what this one still
// uses; with them, the undos compose (provision.Layers). Only rig's state
// file is written.
func (s *HugepagesStep) planReliance(st *hugepages.State, mounts []hugepages.WantMount, plan *provision.Plan) error {
	ls, self, err := provision.Layers(s.state)
	if err != nil {
		return &provision.Problem{Object: "hugepages", Err: err}
	}
	var own *provision.HugeRecord
	if self >= 0 {
		own = ls[self].Records.Hugepages
	}
	planned := map[string]bool{}
	for _, c := range plan.Changes() {
		planned[c.Object] = true
	}
	hasPool := func(sizeKB int64, node int) func(r *provision.HugeRecord) bool {
		return func(r *provision.HugeRecord) bool {
			return slices.ContainsFunc(r.Pools, func(p provision.PoolRecord) bool { return p.SizeKB == sizeKB && p.Node == node })
		}
	}
	hasMount := func(path string) func(r *provision.HugeRecord) bool {
		return func(r *provision.HugeRecord) bool {
			return slices.ContainsFunc(r.Mounts, func(m provision.MountRecord) bool { return m.Path == path })
		}
	}
	var pools []provision.PoolRecord
	var paths []string
	var changes []provision.Change
	for _, r := range s.res {
		obj := "hugepages " + hugepages.PoolName(r.SizeKB, r.Node)
		if planned[obj] || (own != nil && hasPool(r.SizeKB, r.Node)(own)) {
			continue
		}
		if pb := poolHand.Holder(ls, self, func(p provision.PoolRecord) bool { return p.SizeKB == r.SizeKB && p.Node == r.Node }); pb != "" {
			p, _ := st.Pool(r.SizeKB, r.Node)
			pools = append(pools, provision.PoolRecord{SizeKB: r.SizeKB, Node: r.Node, Before: p.Total})
			changes = append(changes, provision.Change{Object: "rig state", Action: fmt.Sprintf("record that %s relies on %s (%d pages, set by playbook %s)", s.state.PlaybookName(), obj, p.Total, pb)})
		}
	}
	for _, m := range mounts {
		obj := "hugetlbfs " + m.Path
		if _, ok := hugepages.MountAt(st.Mounts, m.Path); !ok || planned[obj] || (own != nil && hasMount(m.Path)(own)) {
			continue
		}
		if pb := mountHand.Holder(ls, self, func(q provision.MountRecord) bool { return q.Path == m.Path }); pb != "" {
			paths = append(paths, m.Path)
			changes = append(changes, provision.Change{Object: "rig state", Action: fmt.Sprintf("record that %s relies on %s (mounted by playbook %s)", s.state.PlaybookName(), obj, pb)})
		}
	}
	if len(changes) == 0 {
		return nil
	}
	plan.Add(func(context.Context) error {
		return s.record(func(rec *provision.HugeRecord) {
			for _, p := range pools {
				recordPool(rec, p.SizeKB, p.Node, p.Before)
			}
			for _, path := range paths {
				if !hasMount(path)(rec) {
					rec.Mounts = append(rec.Mounts, provision.MountRecord{Path: path, Mounted: true})
				}
			}
		})
	}, changes...)
	return nil
}
