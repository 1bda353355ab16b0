package dataplane

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

// freeHugeMB is how much hugepage memory, pages of any size, is free
// system-wide, in MiB.
func freeHugeMB(st *hugepages.State) int {
	var kb int64
	for _, p := range st.Pools {
		if p.Node == hugepages.AllNodes {
			kb += int64(p.Free) * p.SizeKB
		}
	}
	return int(kb / 1024)
}

// hugetlbfsMounts lists the hugetlbfs mount points.
func hugetlbfsMounts(st *hugepages.State) []string {
	var out []string
	for _, m := range st.Mounts {
		out = append(out, m.Path)
	}
	return out
}
