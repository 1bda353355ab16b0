package hugepages

import (
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// StaleFile is a DPDK hugepage file (`<prefix>map_<n>`, default prefix
// "rte") on a hugetlbfs mount that no live process maps or holds open. Each
// one keeps its pages out of the free pool until deleted.
type StaleFile struct {
	Path       string `json:"path"`
	PageSizeKB int64  `json:"pageSizeKB"`
	Pages      int64  `json:"pages"`
}

// isDPDKHugeFile matches DPDK's hugepage file names: "<prefix>map_<n>"
// (legacy and per-segment modes) and "<prefix>map_<list>_<seg>" variants.
func isDPDKHugeFile(name string) bool {
	i := strings.Index(name, "map_")
	if i < 0 {
		return false
	}
	rest := name[i+4:]
	if rest == "" {
		return false
	}
	for _, c := range rest {
		if (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

// Users returns the set of files (host paths) that live processes map or
// hold open, read from /proc/<pid>/maps and /proc/<pid>/fd under the root.
// procDirs lists /proc/<pid> entries; read errors (processes exiting) are skipped.
func Users(fs FS) map[string]bool {
	used := map[string]bool{}
	ents, err := fs.ReadDir("/proc")
	if err != nil {
		return used
	}
	type linkReader interface {
		Readlink(p string) (string, error)
	}
	lr, _ := fs.(linkReader)
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		pid := "/proc/" + e.Name()
		if b, err := fs.ReadFile(pid + "/maps"); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if i := strings.Index(line, " /"); i >= 0 {
					p := strings.TrimSpace(line[i:])
					p = strings.TrimSuffix(p, " (deleted)")
					used[p] = true
				}
			}
		}
		if lr == nil {
			continue
		}
		fds, err := fs.ReadDir(pid + "/fd")
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if t, err := lr.Readlink(pid + "/fd/" + fd.Name()); err == nil {
				used[t] = true
			}
		}
	}
	return used
}

// FindStale lists DPDK hugepage files on the given mounts that no live
// process uses.
func FindStale(fs FS, mounts []Mount) []StaleFile {
	used := Users(fs)
	type statter interface {
		Stat(p string) (os.FileInfo, error)
	}
	st, _ := fs.(statter)
	var out []StaleFile
	for _, m := range mounts {
		ents, err := fs.ReadDir(m.Path)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if e.IsDir() || !isDPDKHugeFile(e.Name()) {
				continue
			}
			p := path.Join(m.Path, e.Name())
			if used[p] {
				continue
			}
			sf := StaleFile{Path: p, PageSizeKB: m.PageSizeKB, Pages: 1}
			if st != nil {
				if fi, err := st.Stat(p); err == nil && m.PageSizeKB > 0 {
					if n := (fi.Size() + m.PageSizeKB*1024 - 1) / (m.PageSizeKB * 1024); n > 0 {
						sf.Pages = n
					}
				}
			}
			out = append(out, sf)
		}
	}
	sort.Slice(out, func(i, j int) bool { return filepath.Clean(out[i].Path) < filepath.Clean(out[j].Path) })
	return out
}
