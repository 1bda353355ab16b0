package provision

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"rig/hugepages"
	"rig/playbooks"
	"rig/provision/host"
)

// hugepagesHost is what the hugepages step needs from the host seam.
type hugepagesHost interface {
	hugepages.FS
	CreateFile(p string, data []byte, perm fs.FileMode) error
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
}

// NewHugepagesStep builds the step from the playbook section, mounting for
// real under the host root.
func NewHugepagesStep(h *host.Host, spec *playbooks.HugepagesSpec) (*HugepagesStep, error) {
	return NewHugepagesStepWith(h, hugepages.SysMounter{Resolve: h.Path}, spec)
}

// NewHugepagesStepWith is NewHugepagesStep with an explicit host and mounter.
func NewHugepagesStepWith(fsys hugepagesHost, m hugepages.Mounter, spec *playbooks.HugepagesSpec) (*HugepagesStep, error) {
	s := &HugepagesStep{fs: fsys, mounter: m, persist: spec.Persist}
	for i, r := range spec.Pages {
		kb, err := playbooks.ParsePageSize(r.Size)
		if err != nil {
			return nil, fmt.Errorf("hugepages.pages[%d].size: %w", i, err)
		}
		node := hugepages.AllNodes
		if r.Node != nil {
			node = *r.Node
		}
		s.res = append(s.res, hugepages.Reservation{SizeKB: kb, Node: node, Count: r.Count})
	}
	for i, m := range spec.Mounts {
		var kb int64
		if m.PageSize != "" {
			var err error
			if kb, err = playbooks.ParsePageSize(m.PageSize); err != nil {
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

// Check implements Step: read-only.
func (s *HugepagesStep) Check(ctx context.Context) (Plan, error) {
	plan, _, err := s.diff()
	return plan, err
}

// Apply implements Step: it makes every difference a fresh diff finds, in
// plan order (pools, mounts, persistence).
func (s *HugepagesStep) Apply(ctx context.Context, _ Plan) error {
	_, acts, err := s.diff()
	if err != nil {
		return err
	}
	for _, do := range acts {
		if err := do(); err != nil {
			return err
		}
	}
	return nil
}

// diff compares the wanted pools, mounts and persistence files with the
// host: the plan Check reports and the actions Apply runs come from one
// pass, so they cannot drift apart.
func (s *HugepagesStep) diff() (Plan, []func() error, error) {
	st, err := hugepages.ReadState(s.fs)
	if err != nil {
		return Plan{}, nil, err
	}
	var plan Plan
	var acts []func() error // acts[i] makes plan.Changes[i]
	add := func(c Change, do func() error) {
		plan.Changes = append(plan.Changes, c)
		acts = append(acts, do)
	}
	for _, r := range s.res {
		obj := "hugepages " + hugepages.PoolName(r.SizeKB, r.Node)
		if !st.HasSize(r.SizeKB) {
			return Plan{}, nil, &Problem{Object: obj,
				Err:   fmt.Errorf("page size %s not offered by this kernel (offered: %s)", hugepages.FormatSize(r.SizeKB), sizeList(st.Sizes)),
				Cause: "the CPU lacks the flag for it (pdpe1gb for 1G, pse for 2M) or the kernel was built without it",
				Fix:   "use a size from the offered list, or boot with `hugepagesz=" + hugepages.FormatSize(r.SizeKB) + "` on a CPU that supports it"}
		}
		if r.Node != hugepages.AllNodes && !st.HasNode(r.Node) {
			return Plan{}, nil, &Problem{Object: obj,
				Err:   fmt.Errorf("NUMA node %d has no hugepage pools (nodes: %v)", r.Node, st.Nodes),
				Cause: "the node does not exist on this machine or has no memory",
				Fix:   "drop `node:` (system-wide) or use one of the listed nodes (`rig hugepages show`)"}
		}
		p, _ := st.Pool(r.SizeKB, r.Node)
		if p.Total != r.Count {
			r := r
			add(Change{Object: obj, Action: "set nr_hugepages", From: fmt.Sprint(p.Total), To: fmt.Sprint(r.Count)},
				func() error {
					if _, err := hugepages.SetPages(s.fs, r.SizeKB, r.Node, r.Count); err != nil {
						var ge *hugepages.GrantError
						if errors.As(err, &ge) {
							return &Problem{Err: err, Cause: ge.Cause(), Fix: ge.Fix()}
						}
						return err
					}
					return nil
				})
		}
	}
	procMounts, err := s.fs.ReadFile("/proc/mounts")
	if err != nil {
		return Plan{}, nil, fmt.Errorf("hugepages: /proc/mounts: %w", err)
	}
	mounts := s.desiredMounts(st)
	for _, m := range mounts {
		obj := "hugetlbfs " + m.Path
		if !st.HasSize(m.PageSizeKB) {
			return Plan{}, nil, &Problem{Object: obj,
				Err: fmt.Errorf("pagesize %s not offered by this kernel (offered: %s)", hugepages.FormatSize(m.PageSizeKB), sizeList(st.Sizes)),
				Fix: "use a page size from the offered list"}
		}
		if cur, ok := hugepages.MountAt(st.Mounts, m.Path); ok {
			if cur.PageSizeKB != m.PageSizeKB {
				return Plan{}, nil, &Problem{Object: obj,
					Err:   fmt.Errorf("mounted with pagesize=%s, want %s", hugepages.FormatSize(cur.PageSizeKB), hugepages.FormatSize(m.PageSizeKB)),
					Cause: "an earlier setup mounted it with another page size; DPDK would use the wrong pool",
					Fix:   fmt.Sprintf("stop what uses it and `umount %s`, then rerun rig up (or use another path)", m.Path)}
			}
			continue
		}
		if fstype, ok := hugepages.OtherMountAt(procMounts, m.Path); ok {
			return Plan{}, nil, &Problem{Object: obj,
				Err: fmt.Errorf("%s is already a %s mount", m.Path, fstype),
				Fix: "choose another mount path for hugetlbfs"}
		}
		m := m
		add(Change{Object: obj, Action: "mount hugetlbfs", To: "pagesize=" + hugepages.FormatSize(m.PageSizeKB)},
			func() error { return s.mounter.MountHugetlbfs(m.Path, m.PageSizeKB) })
	}
	if s.persist {
		for _, f := range hugepages.PersistFiles(s.res, mounts) {
			cur, err := s.fs.ReadFile(f.Path)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				return Plan{}, nil, fmt.Errorf("hugepages: persist: %s: %w", f.Path, err)
			}
			if string(cur) != f.Content {
				action := "write"
				if err == nil {
					action = "rewrite"
				}
				f := f
				add(Change{Object: "persist " + f.Path, Action: action + " (survives reboot)"}, func() error {
					if err := s.fs.CreateFile(f.Path, []byte(f.Content), 0o644); err != nil {
						return fmt.Errorf("hugepages: persist: write %s: %w", f.Path, err)
					}
					return nil
				})
			}
			if strings.HasSuffix(f.Path, ".mount") {
				link, target := unitLink(f.Path)
				if t, err := s.fs.Readlink(link); err != nil || t != target {
					add(Change{Object: "persist " + link, Action: "enable mount unit", To: target}, func() error {
						if err == nil {
							return fmt.Errorf("hugepages: persist: %s points to %s, not %s; remove it and rerun", link, t, target)
						}
						if err := s.fs.Symlink(target, link); err != nil {
							return fmt.Errorf("hugepages: persist: enable %s: %w", link, err)
						}
						return nil
					})
				}
			}
		}
	}
	if plan.Satisfied() {
		if err := st.VerifyMeminfo(); err != nil {
			return Plan{}, nil, err
		}
		for _, r := range s.res {
			p, _ := st.Pool(r.SizeKB, r.Node)
			plan.Notes = append(plan.Notes, fmt.Sprintf("%s: %d pages, %d free", hugepages.PoolName(r.SizeKB, r.Node), p.Total, p.Free))
		}
	}
	return plan, acts, nil
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
