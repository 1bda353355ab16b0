package system

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"rig/hugepages"
	"rig/playbooks"
	"rig/provision"
)

// hugepagesHost is what the hugepages step needs from the host seam.
type hugepagesHost interface {
	hugepages.FS
	ReplaceFile(p string, data []byte, perm fs.FileMode) error
	Remove(p string) error
	Symlink(target, p string) error
	Readlink(p string) (string, error)
}

// HugepagesStep reserves pages per size/node, mounts hugetlbfs and
// optionally persists both across reboots.
type HugepagesStep struct {
	fs      hugepagesHost
	mounter hugepages.Mounter
	res     []hugepages.Reservation
	mounts  []hugepages.WantMount
	persist bool
	// fixtureRoot is set when the mounter mounts for real but the host root
	// is not "/": reads come from a fixture tree while a mount would land on
	// this machine, so Apply refuses it (Check still plans it).
	fixtureRoot string
	state       provision.StateStore // rig's state file (pools, mounts and files before rig)
}

// NewHugepagesStep builds the step from the playbook section, mounting for
// real under the host root.
func NewHugepagesStep(env *provision.Env, spec *playbooks.HugepagesSpec) (provision.Step, error) {
	h := env.Host
	s, err := newHugepagesStep(h, hugepages.SysMounter{Resolve: h.Path}, spec)
	if err != nil {
		return nil, err
	}
	if !h.IsRealRoot() {
		s.fixtureRoot = h.Root
	}
	s.state = env.State()
	return s, nil
}

// newHugepagesStep is NewHugepagesStep with an explicit host and mounter
// (tests: a fake kernel).
func newHugepagesStep(fsys hugepagesHost, m hugepages.Mounter, spec *playbooks.HugepagesSpec) (*HugepagesStep, error) {
	s := &HugepagesStep{fs: fsys, mounter: m, persist: spec.Persist}
	for i, r := range spec.Pages {
		kb, err := hugepages.ParsePageSize(r.Size)
		if err != nil {
			return nil, fmt.Errorf("hugepages.pages[%d].size: %w", i, err)
		}
		node := hugepages.AllNodes
		if r.Node != nil {
			node = *r.Node
		}
		s.res = append(s.res, hugepages.Reservation{SizeKB: kb, Node: node, Count: r.Count, Exact: r.Exact})
	}
	for i, m := range spec.Mounts {
		var kb int64
		if m.PageSize != "" {
			var err error
			if kb, err = hugepages.ParsePageSize(m.PageSize); err != nil {
				return nil, fmt.Errorf("hugepages.mounts[%d].pagesize: %w", i, err)
			}
		}
		s.mounts = append(s.mounts, hugepages.WantMount{Path: path.Clean(m.Path), PageSizeKB: kb})
	}
	return s, nil
}

// Name implements Step.
func (s *HugepagesStep) Name() string { return "hugepages" }

// desired resolves defaults (mount page size = kernel default) against state.
func (s *HugepagesStep) desiredMounts(st *hugepages.State) []hugepages.WantMount {
	out := make([]hugepages.WantMount, len(s.mounts))
	for i, m := range s.mounts {
		if m.PageSizeKB == 0 {
			m.PageSizeKB = st.DefaultSizeKB
		}
		out[i] = m
	}
	return out
}

// unitLink is the sysinit.target.wants symlink `systemctl enable` would make.
func unitLink(unitPath string) (link, target string) {
	name := path.Base(unitPath)
	return path.Dir(unitPath) + "/sysinit.target.wants/" + name, "../" + name
}

// Check implements Step: read-only. Its ops make the differences in
// order: pools, mounts, persistence.
func (s *HugepagesStep) Check(ctx context.Context) (provision.Plan, error) {
	st, err := hugepages.ReadState(s.fs)
	if err != nil {
		return provision.Plan{}, err
	}
	var plan provision.Plan
	warn, err := s.checkMemory(st)
	if err != nil {
		return provision.Plan{}, err
	}
	if err := s.planPools(st, &plan); err != nil {
		return provision.Plan{}, err
	}
	mounts := s.desiredMounts(st)
	if err := s.planMounts(st, mounts, &plan); err != nil {
		return provision.Plan{}, err
	}
	if err := s.planReliance(st, mounts, &plan); err != nil {
		return provision.Plan{}, err
	}
	if s.persist {
		if err := s.planPersist(st, mounts, &plan); err != nil {
			return provision.Plan{}, err
		}
	}
	notes := plan.Notes
	plan.Notes = nil
	if plan.Satisfied() {
		// other processes may take or free pages while rig reads
		if err := hugepages.VerifyMeminfoSettled(s.fs, st, 5, 20*time.Millisecond); err != nil {
			return provision.Plan{}, err
		}
		for _, r := range s.res {
			p, _ := st.Pool(r.SizeKB, r.Node)
			plan.Notes = append(plan.Notes, fmt.Sprintf("%s: %d pages, %d free", hugepages.PoolName(r.SizeKB, r.Node), p.Total, p.Free))
		}
	}
	if warn != "" {
		plan.Notes = append(plan.Notes, warn)
	}
	plan.Notes = append(plan.Notes, notes...)
	return plan, nil
}

// refuseFixtureMount is why a real mount may not be made while the host is
// read from a fixture root.
func (s *HugepagesStep) refuseFixtureMount(obj string) error {
	return &provision.Problem{Object: obj,
		Err: fmt.Errorf("refusing to mount hugetlbfs on this machine while reading the host from --root %s "+
			"(the mount would not be in the fixture's /proc/mounts, so verify would fail and every run would stack another mount); nothing was written", s.fixtureRoot),
		FixText: "use `rig plan --root ...` to see what would change, or run without --root (root /) to apply on this host"}
}

// checkMemory refuses reservations whose memory (count x size) exceeds
// MemTotal, guarding the multiplication, and warns when growing the pools
// needs more than MemAvailable.
func (s *HugepagesStep) checkMemory(st *hugepages.State) (warn string, err error) {
	memTotal, memAvail := st.Meminfo.MemTotalKB, st.Meminfo.MemAvailableKB
	var totalKB, growKB int64
	for _, r := range s.res {
		obj := "hugepages " + hugepages.PoolName(r.SizeKB, r.Node)
		if r.SizeKB <= 0 || int64(r.Count) > math.MaxInt64/r.SizeKB {
			return "", &provision.Problem{Object: obj,
				Err:     fmt.Errorf("count %d x %s overflows; no machine has that much memory", r.Count, hugepages.FormatSize(r.SizeKB)),
				FixText: "ask for a count whose memory fits in RAM (see MemTotal in /proc/meminfo)"}
		}
		kb := int64(r.Count) * r.SizeKB
		if memTotal > 0 && kb > memTotal {
			return "", &provision.Problem{Object: obj,
				Err: fmt.Errorf("count %d x %s = %s is more than this machine's memory (MemTotal %s); nothing was written",
					r.Count, hugepages.FormatSize(r.SizeKB), hugepages.FormatAmount(kb), hugepages.FormatAmount(memTotal)),
				CauseText: "the kernel would first try to take all free memory for hugepages, starving everything else",
				FixText:   fmt.Sprintf("ask for at most %d pages of %s, and leave memory for the system", memTotal/r.SizeKB, hugepages.FormatSize(r.SizeKB))}
		}
		if totalKB > math.MaxInt64-kb {
			totalKB = math.MaxInt64
		} else {
			totalKB += kb
		}
		if p, ok := st.Pool(r.SizeKB, r.Node); ok && r.Count > p.Total {
			growKB += int64(r.Count-p.Total) * r.SizeKB
		}
	}
	if memTotal > 0 && totalKB > memTotal {
		return "", &provision.Problem{Object: "hugepages",
			Err:     fmt.Errorf("the pools asked for total %s, more than this machine's memory (MemTotal %s); nothing was written", hugepages.FormatAmount(totalKB), hugepages.FormatAmount(memTotal)),
			FixText: "lower the counts so that together they fit in RAM, with room left for the system"}
	}
	if memAvail > 0 && growKB > memAvail {
		return fmt.Sprintf("WARNING: hugepages: growing the pools needs %s but only %s is available (MemAvailable); the kernel grants what it can, evicting caches, and rig reports any shortfall",
			hugepages.FormatAmount(growKB), hugepages.FormatAmount(memAvail)), nil
	}
	return "", nil
}

// planPools plans the pool sizes, or refuses sizes, nodes and shrinks the
// host cannot give.
func (s *HugepagesStep) planPools(st *hugepages.State, plan *provision.Plan) error {
	for _, r := range s.res {
		obj := "hugepages " + hugepages.PoolName(r.SizeKB, r.Node)
		if !st.HasSize(r.SizeKB) {
			return &provision.Problem{Object: obj,
				Err:       fmt.Errorf("page size %s not offered by this kernel (offered: %s)", hugepages.FormatSize(r.SizeKB), sizeList(st.Sizes)),
				CauseText: "the CPU lacks the flag for it (pdpe1gb for 1G, pse for 2M) or the kernel was built without it",
				FixText:   "use a size from the offered list, or boot with `hugepagesz=" + hugepages.FormatSize(r.SizeKB) + "` on a CPU that supports it"}
		}
		if r.Node != hugepages.AllNodes && !st.HasNode(r.Node) {
			return &provision.Problem{Object: obj,
				Err:       fmt.Errorf("NUMA node %d has no hugepage pools (nodes: %v)", r.Node, st.Nodes),
				CauseText: "the node does not exist on this machine or has no memory",
				FixText:   "drop `node:` (system-wide) or use one of the listed nodes (`rig hugepages show`)"}
		}
		p, _ := st.Pool(r.SizeKB, r.Node)
		if p.Total > r.Count && !r.Exact {
			plan.Notes = append(plan.Notes, fmt.Sprintf("%s: %d pages, at least the %d wanted; left as is (other processes may use them; `exact: true` or --exact shrinks)",
				hugepages.PoolName(r.SizeKB, r.Node), p.Total, r.Count))
			continue
		}
		if p.Total > r.Count && r.Count < p.InUse() {
			reserved := ""
			if p.Reserved > 0 {
				reserved = fmt.Sprintf(", reserved %d", p.Reserved)
			}
			return &provision.Problem{Object: obj,
				Err: fmt.Errorf("exact: true asks to shrink to %d pages but %d are in use (nr_hugepages %d, free %d%s); rig never frees pages in use, nothing was written",
					r.Count, p.InUse(), p.Total, p.Free, reserved),
				CauseText: "running processes (DPDK apps, ovs-vswitchd) map them, or stale DPDK files hold them",
				FixText:   fmt.Sprintf("ask for at least %d pages, or stop what uses them (`rig hugepages show` lists leftovers of dead DPDK processes; `rig hugepages clean` removes them) and rerun", p.InUse())}
		}
		if p.Total != r.Count {
			r, before := r, p.Total
			plan.Add(func(context.Context) error {
				if err := s.record(func(rec *provision.HugeRecord) { recordPool(rec, r.SizeKB, r.Node, before) }); err != nil {
					return err
				}
				return s.setPages(r)
			},
				provision.Change{Object: obj, Action: "set nr_hugepages", From: fmt.Sprint(p.Total), To: fmt.Sprint(r.Count)})
		}
	}
	return nil
}

// setPages writes one pool; a short grant is a *hugepages.GrantError,
// which explains itself (Cause, Fix).
func (s *HugepagesStep) setPages(r hugepages.Reservation) error {
	_, err := hugepages.SetPages(s.fs, r.SizeKB, r.Node, r.Count)
	return err
}

// planMounts plans the hugetlbfs mounts, or refuses mount points that
// are taken.
func (s *HugepagesStep) planMounts(st *hugepages.State, mounts []hugepages.WantMount, plan *provision.Plan) error {
	procMounts, err := s.fs.ReadFile("/proc/mounts")
	if err != nil {
		return fmt.Errorf("hugepages: /proc/mounts: %w", err)
	}
	for _, m := range mounts {
		obj := "hugetlbfs " + m.Path
		if err := s.checkMountPoint(st, procMounts, m); err != nil {
			return err
		}
		if _, ok := hugepages.MountAt(st.Mounts, m.Path); ok {
			continue
		}
		m := m
		plan.Add(func(context.Context) error {
			created := !s.fs.Exists(m.Path)
			if err := s.record(func(rec *provision.HugeRecord) { recordMount(rec, m.Path, created) }); err != nil {
				return err
			}
			return s.mounter.MountHugetlbfs(m.Path, m.PageSizeKB)
		},
			provision.Change{Object: obj, Action: "mount hugetlbfs", To: "pagesize=" + hugepages.FormatSize(m.PageSizeKB)})
		if s.fixtureRoot != "" {
			plan.Ops[len(plan.Ops)-1].Refused = s.refuseFixtureMount(obj)
			plan.Notes = append(plan.Notes, fmt.Sprintf("hugetlbfs %s: under --root %s the mount would be a real mount on this machine; apply refuses it", m.Path, s.fixtureRoot))
		}
	}
	return nil
}

// checkMountPoint refuses a mount point rig cannot use: a hugetlbfs of
// another page size, another filesystem, a non-empty directory.
func (s *HugepagesStep) checkMountPoint(st *hugepages.State, procMounts []byte, m hugepages.WantMount) error {
	obj := "hugetlbfs " + m.Path
	if !st.HasSize(m.PageSizeKB) {
		return &provision.Problem{Object: obj,
			Err:     fmt.Errorf("pagesize %s not offered by this kernel (offered: %s)", hugepages.FormatSize(m.PageSizeKB), sizeList(st.Sizes)),
			FixText: "use a page size from the offered list"}
	}
	if cur, ok := hugepages.MountAt(st.Mounts, m.Path); ok {
		if cur.PageSizeKB != m.PageSizeKB {
			return &provision.Problem{Object: obj,
				Err:       fmt.Errorf("mounted with pagesize=%s, want %s", hugepages.FormatSize(cur.PageSizeKB), hugepages.FormatSize(m.PageSizeKB)),
				CauseText: "an earlier setup mounted it with another page size; DPDK would use the wrong pool",
				FixText:   fmt.Sprintf("stop what uses it and `umount %s`, then rerun rig up (or use another path)", m.Path)}
		}
		return nil
	}
	if fstype, ok := hugepages.OtherMountAt(procMounts, m.Path); ok {
		return &provision.Problem{Object: obj,
			Err:     fmt.Errorf("%s is already a %s mount", m.Path, fstype),
			FixText: "choose another mount path for hugetlbfs"}
	}
	if ents, err := s.fs.ReadDir(m.Path); err == nil && len(ents) > 0 {
		return &provision.Problem{Object: obj,
			Err:       fmt.Errorf("%s is not empty (%d entries, e.g. %s) and not a hugetlbfs mount; nothing was written", m.Path, len(ents), ents[0].Name()),
			CauseText: "mounting hugetlbfs there would hide its files until unmounted",
			FixText:   "choose an empty or new directory for hugetlbfs (rig creates it), e.g. /dev/hugepages or /mnt/huge"}
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return &provision.Problem{Object: obj,
			Err:     fmt.Errorf("%s: %w", m.Path, err),
			FixText: "the mount point must be a directory (or not exist yet); choose another path"}
	}
	return nil
}

// planPersist plans the boot-time files: the tmpfiles.d drop-in with the
// pools of this playbook and of every other playbook still up
// (composePools), recording what this one put there, and a mount unit
// (enabled) per mount. A unit another playbook wrote with other content is
// refused before any write; one a playbook of rig's already wrote as this
// one wants it, and the drop-in already holding this playbook's pools, are
// recorded as relied on (only rig's state file is written), so that
// playbook's down leaves them.
func (s *HugepagesStep) planPersist(st *hugepages.State, mounts []hugepages.WantMount, plan *provision.Plan) error {
	ls, self, err := provision.Layers(s.state)
	if err != nil {
		return &provision.Problem{Object: "hugepages", Err: err}
	}
	own := persistPools(s.res)
	res, err := composePools(s.state, ls, self, own, true, persistPoolOK(st))
	if err != nil {
		return err
	}
	for _, f := range hugepages.PersistFiles(res, mounts) {
		cur, err := s.fs.ReadFile(f.Path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("hugepages: persist: %s: %w", f.Path, err)
		}
		holder := hugeFileHand.Holder(ls, self, func(r provision.FileRecord) bool { return r.Path == f.Path })
		mine := self >= 0 && ls[self].Records.Hugepages != nil && slices.ContainsFunc(ls[self].Records.Hugepages.Files, func(r provision.FileRecord) bool { return r.Path == f.Path })
		unit := strings.HasSuffix(f.Path, ".mount")
		switch {
		case string(cur) != f.Content && unit && err == nil && holder != "":
			return &provision.Problem{Object: "persist " + f.Path, Err: fmt.Errorf("playbook %s wrote this mount unit with other content (another page size for the mount); two playbooks up at once cannot both have it; nothing was written", holder),
				FixText: "make the two playbooks' hugetlbfs mounts agree, or bring playbook " + holder + " down first (rig down -p " + holder + ")"}
		case string(cur) != f.Content:
			s.planPersistWrite(f, err == nil, own, plan)
		case !unit && (!mine || !slices.Equal(ls[self].Records.Hugepages.Persist, own)) && composeHolder(ls, self) != "":
			s.planPersistRely(f.Path, own, composeHolder(ls, self), plan)
		case unit && !mine && holder != "":
			s.planPersistRely(f.Path, nil, holder, plan)
		}
		if !unit {
			continue
		}
		link, target := unitLink(f.Path)
		t, err := s.fs.Readlink(link)
		if err == nil && t == target {
			linkHolder := hugeFileHand.Holder(ls, self, func(r provision.FileRecord) bool { return r.Path == link })
			linkMine := self >= 0 && ls[self].Records.Hugepages != nil && slices.ContainsFunc(ls[self].Records.Hugepages.Files, func(r provision.FileRecord) bool { return r.Path == link })
			if linkHolder != "" && !linkMine {
				s.planPersistRely(link, nil, linkHolder, plan)
			}
			continue
		}
		plan.Add(func(context.Context) error {
			if err == nil {
				return fmt.Errorf("hugepages: persist: %s points to %s, not %s; remove it and rerun", link, t, target)
			}
			if err := s.record(func(rec *provision.HugeRecord) {
				provision.RecordFile(&rec.Files, provision.FileBefore(s.fs, link, true))
			}); err != nil {
				return err
			}
			if err := s.fs.Symlink(target, link); err != nil {
				return fmt.Errorf("hugepages: persist: enable %s: %w", link, err)
			}
			return nil
		}, provision.Change{Object: "persist " + link, Action: "enable mount unit", To: target})
	}
	return nil
}

// planPersistWrite plans writing one boot-time file, recording its
// content before (and, for the tmpfiles.d drop-in, own: the pools this
// playbook put there).
func (s *HugepagesStep) planPersistWrite(f hugepages.PersistFile, existed bool, own []provision.PersistPool, plan *provision.Plan) {
	action := "write"
	if existed {
		action = "rewrite"
	}
	plan.Add(func(context.Context) error {
		if err := s.record(func(rec *provision.HugeRecord) {
			provision.RecordFile(&rec.Files, provision.FileBefore(s.fs, f.Path, false))
			if f.Path == hugepages.TmpfilesPath {
				rec.Persist = own
			}
		}); err != nil {
			return err
		}
		if err := s.fs.ReplaceFile(f.Path, []byte(f.Content), 0o644); err != nil {
			return fmt.Errorf("hugepages: persist: write %s: %w", f.Path, err)
		}
		return nil
	}, provision.Change{Object: "persist " + f.Path, Action: action + " (survives reboot)"})
}

// planPersistRely records that this playbook relies on a boot-time file
// (or the mount unit's enable link) playbook pb wrote as this one wants
// it: its content now as this playbook's before.
func (s *HugepagesStep) planPersistRely(p string, own []provision.PersistPool, pb string, plan *provision.Plan) {
	link := strings.Contains(p, "/sysinit.target.wants/")
	plan.Add(func(context.Context) error {
		return s.record(func(rec *provision.HugeRecord) {
			provision.RecordFile(&rec.Files, provision.FileBefore(s.fs, p, link))
			if p == hugepages.TmpfilesPath {
				rec.Persist = own
			}
		})
	}, provision.Change{Object: "rig state", Action: fmt.Sprintf("record that %s relies on %s (written by playbook %s)", s.state.PlaybookName(), p, pb)})
}

// persistPools is what a playbook's reservations put in the tmpfiles.d
// drop-in.
func persistPools(res []hugepages.Reservation) []provision.PersistPool {
	var out []provision.PersistPool
	for _, r := range res {
		out = append(out, provision.PersistPool{SizeKB: r.SizeKB, Node: r.Node, Count: r.Count, Exact: r.Exact})
	}
	return out
}

// persistPoolOK checks another playbook's recorded pool against the host,
// as vet checks a pool record ("" when rig could have written it).
func persistPoolOK(hs *hugepages.State) func(p provision.PersistPool) string {
	return func(p provision.PersistPool) string {
		switch {
		case !hs.HasSize(p.SizeKB):
			return fmt.Sprintf("this host has no %d kB pages", p.SizeKB)
		case p.Node != hugepages.AllNodes && !hs.HasNode(p.Node):
			return fmt.Sprintf("this host has no NUMA node %d with hugepages", p.Node)
		case p.Count < 0 || hs.Meminfo.MemTotalKB <= 0 || int64(p.Count) > hs.Meminfo.MemTotalKB/p.SizeKB:
			return fmt.Sprintf("%d pages of %s is not a count this host's memory holds", p.Count, hugepages.FormatSize(p.SizeKB))
		}
		return ""
	}
}

// composeHolder is the first other playbook that put pools in the
// tmpfiles.d drop-in ("" when none).
func composeHolder(ls []provision.PlaybookRecords, self int) string {
	for i, l := range ls {
		if i != self && l.Records.Hugepages != nil && len(l.Records.Hugepages.Persist) > 0 {
			return l.Playbook
		}
	}
	return ""
}

func sizeList(kbs []int64) string {
	var s []string
	for _, kb := range kbs {
		s = append(s, hugepages.FormatSize(kb))
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
