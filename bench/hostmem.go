package bench

import (
	"rig/hugepages"
	"rig/internal/host"
)

// hostHugepages reads the host's hugepage state through the hugepages
// package (sysfs pools, /proc/meminfo, /proc/mounts). A host without
// hugetlb support reads as none free and nothing mounted.
func hostHugepages() *hugepages.State {
	st, err := hugepages.ReadState(host.New("/"))
	if err != nil {
		return &hugepages.State{}
	}
	return st
}

// freeHugepages is how many hugepages of any size are free system-wide.
func freeHugepages(st *hugepages.State) int {
	n := 0
	for _, p := range st.Pools {
		if p.Node == hugepages.AllNodes {
			n += p.Free
		}
	}
	return n
}

// hugetlbfsMounts lists the hugetlbfs mount points.
func hugetlbfsMounts(st *hugepages.State) []string {
	var out []string
	for _, m := range st.Mounts {
		out = append(out, m.Path)
	}
	return out
}
