// Package hugepages reserves hugepages per size and NUMA node through sysfs,
// mounts hugetlbfs, verifies against /proc/meminfo, persists the setup across
// reboots and finds hugepage files left behind by dead DPDK processes.
// Every path is a host path resolved under a root (see internal/host).
package hugepages

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

// FS is the part of the host seam this package needs (*host.Host has it).
type FS interface {
	ReadFile(p string) ([]byte, error)
	WriteFile(p string, data []byte) error
	ReadDir(p string) ([]os.DirEntry, error)
	Exists(p string) bool
}

const (
	globalDir = "/sys/kernel/mm/hugepages"
	nodeDir   = "/sys/devices/system/node"
)

// AllNodes stands for the system-wide pool (no NUMA node given).
const AllNodes = -1

// Pool is one size's page counts, system-wide (Node == AllNodes) or on one node.
type Pool struct {
	SizeKB   int64 `json:"sizeKB"`
	Node     int   `json:"node"` // -1 = system-wide
	Total    int   `json:"total"`
	Free     int   `json:"free"`
	Reserved int   `json:"reserved"` // system-wide only
	Surplus  int   `json:"surplus"`
}

// InUse is the pages a shrink must not free: mapped (nr - free) plus, system-
// wide, reserved for mappings not yet faulted in.
func (p Pool) InUse() int {
	n := p.Total - p.Free + p.Reserved
	if n < 0 {
		return 0
	}
	return n
}

// Object names the pool in messages: "node0 2048kB" or "2048kB".
func (p Pool) Object() string { return PoolName(p.SizeKB, p.Node) }

// PoolName names a pool in messages and plans.
func PoolName(sizeKB int64, node int) string {
	if node == AllNodes {
		return fmt.Sprintf("%dkB", sizeKB)
	}
	return fmt.Sprintf("node%d %dkB", node, sizeKB)
}

// CountPath is the sysfs file holding nr_hugepages for a size and node.
func CountPath(sizeKB int64, node int) string {
	if node == AllNodes {
		return fmt.Sprintf("%s/hugepages-%dkB/nr_hugepages", globalDir, sizeKB)
	}
	return fmt.Sprintf("%s/node%d/hugepages/hugepages-%dkB/nr_hugepages", nodeDir, node, sizeKB)
}

// Meminfo is the hugepage part of /proc/meminfo.
type Meminfo struct {
	Total         int   `json:"hugePagesTotal"`
	Free          int   `json:"hugePagesFree"`
	Reserved      int   `json:"hugePagesRsvd"`
	Surplus       int   `json:"hugePagesSurp"`
	DefaultSizeKB int64 `json:"hugepagesizeKB"`
	HugetlbKB     int64 `json:"hugetlbKB"`
	// MemTotalKB and MemAvailableKB are the machine's memory (0 when absent).
	MemTotalKB     int64 `json:"memTotalKB,omitempty"`
	MemAvailableKB int64 `json:"memAvailableKB,omitempty"`
}

// ParseMeminfo reads the Huge* lines of /proc/meminfo text.
func ParseMeminfo(b []byte) (Meminfo, error) {
	var m Meminfo
	seen := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || n < 0 {
			if strings.HasPrefix(k, "HugePages_") || k == "Hugepagesize" {
				return m, fmt.Errorf("meminfo: %s: bad value %q", k, strings.TrimSpace(v))
			}
			continue
		}
		switch k {
		case "HugePages_Total":
			m.Total = int(n)
			seen++
		case "HugePages_Free":
			m.Free = int(n)
			seen++
		case "HugePages_Rsvd":
			m.Reserved = int(n)
		case "HugePages_Surp":
			m.Surplus = int(n)
		case "Hugepagesize":
			m.DefaultSizeKB = n
			seen++
		case "Hugetlb":
			m.HugetlbKB = n
		case "MemTotal":
			m.MemTotalKB = n
		case "MemAvailable":
			m.MemAvailableKB = n
		}
	}
	if seen < 3 {
		return m, fmt.Errorf("meminfo: no HugePages_Total/HugePages_Free/Hugepagesize lines (kernel without CONFIG_HUGETLBFS?)")
	}
	return m, nil
}

// State is everything rig knows about hugepages on a host.
type State struct {
	DefaultSizeKB int64       `json:"defaultSizeKB"`
	Sizes         []int64     `json:"sizesKB"` // offered by the kernel, ascending
	Nodes         []int       `json:"nodes"`   // NUMA nodes with a hugepages dir
	Pools         []Pool      `json:"pools"`   // per size: system-wide, then each node
	Meminfo       Meminfo     `json:"meminfo"`
	Mounts        []Mount     `json:"mounts"`
	Stale         []StaleFile `json:"stale,omitempty"`
	// RuntimeDirs are DPDK runtime directories (/var/run/dpdk/<prefix>)
	// with whether their process lives (see FindRuntimeDirs).
	RuntimeDirs []RuntimeDir `json:"runtimeDirs,omitempty"`
}

// Sizes lists the page sizes (kB) the kernel offers, ascending.
func Sizes(fs FS) ([]int64, error) {
	ents, err := fs.ReadDir(globalDir)
	if err != nil {
		return nil, fmt.Errorf("hugepages: %s: %w (kernel without hugetlb support?)", globalDir, err)
	}
	var out []int64
	for _, e := range ents {
		if kb, ok := parseSizeDir(e.Name()); ok {
			out = append(out, kb)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}

func parseSizeDir(name string) (int64, bool) {
	s, ok := strings.CutPrefix(name, "hugepages-")
	if !ok {
		return 0, false
	}
	s, ok = strings.CutSuffix(s, "kB")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n > 0
}

// Nodes lists NUMA nodes that have hugepage pools, ascending. A kernel
// without NUMA has no /sys/devices/system/node: then there are none.
func Nodes(fs FS) ([]int, error) {
	ents, err := fs.ReadDir(nodeDir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("hugepages: %s: %w", nodeDir, err)
	}
	var out []int
	for _, e := range ents {
		s, ok := strings.CutPrefix(e.Name(), "node")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			continue
		}
		if fs.Exists(path.Join(nodeDir, e.Name(), "hugepages")) {
			out = append(out, n)
		}
	}
	sort.Ints(out)
	return out, nil
}

func readInt(fs FS, p string) (int, error) {
	b, err := fs.ReadFile(p)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("%s: not a number: %q", p, strings.TrimSpace(string(b)))
	}
	return n, nil
}

// ReadPool reads one pool's counters.
func ReadPool(fs FS, sizeKB int64, node int) (Pool, error) {
	p := Pool{SizeKB: sizeKB, Node: node}
	dir := path.Dir(CountPath(sizeKB, node))
	var err error
	if p.Total, err = readInt(fs, dir+"/nr_hugepages"); err != nil {
		return p, fmt.Errorf("hugepages: %s: %w", p.Object(), err)
	}
	if p.Free, err = readInt(fs, dir+"/free_hugepages"); err != nil {
		return p, fmt.Errorf("hugepages: %s: %w", p.Object(), err)
	}
	if p.Surplus, err = readInt(fs, dir+"/surplus_hugepages"); err != nil {
		return p, fmt.Errorf("hugepages: %s: %w", p.Object(), err)
	}
	if node == AllNodes {
		if p.Reserved, err = readInt(fs, dir+"/resv_hugepages"); err != nil {
			return p, fmt.Errorf("hugepages: %s: %w", p.Object(), err)
		}
	}
	return p, nil
}

// ReadState reads sizes, nodes, pools, meminfo and mounts (not stale files:
// see FindStale, which walks /proc).
func ReadState(fs FS) (*State, error) {
	st := &State{}
	var err error
	if st.Sizes, err = Sizes(fs); err != nil {
		return nil, err
	}
	if st.Nodes, err = Nodes(fs); err != nil {
		return nil, err
	}
	mi, err := fs.ReadFile("/proc/meminfo")
	if err != nil {
		return nil, fmt.Errorf("hugepages: /proc/meminfo: %w", err)
	}
	if st.Meminfo, err = ParseMeminfo(mi); err != nil {
		return nil, fmt.Errorf("hugepages: %w", err)
	}
	st.DefaultSizeKB = st.Meminfo.DefaultSizeKB
	for _, kb := range st.Sizes {
		p, err := ReadPool(fs, kb, AllNodes)
		if err != nil {
			return nil, err
		}
		st.Pools = append(st.Pools, p)
		for _, n := range st.Nodes {
			p, err := ReadPool(fs, kb, n)
			if err != nil {
				return nil, err
			}
			st.Pools = append(st.Pools, p)
		}
	}
	if st.Mounts, err = ReadMounts(fs, st.DefaultSizeKB); err != nil {
		return nil, err
	}
	return st, nil
}

// Pool returns the pool for a size and node.
func (s *State) Pool(sizeKB int64, node int) (Pool, bool) {
	for _, p := range s.Pools {
		if p.SizeKB == sizeKB && p.Node == node {
			return p, true
		}
	}
	return Pool{}, false
}

// HasSize reports whether the kernel offers a page size.
func (s *State) HasSize(kb int64) bool {
	for _, x := range s.Sizes {
		if x == kb {
			return true
		}
	}
	return false
}

// HasNode reports whether a NUMA node has hugepage pools.
func (s *State) HasNode(n int) bool {
	for _, x := range s.Nodes {
		if x == n {
			return true
		}
	}
	return false
}

// VerifyMeminfo cross-checks the default size's system-wide pool against
// /proc/meminfo: the kernel keeps both, and a mismatch means rig is reading
// the wrong root or a pool changed under it.
func (s *State) VerifyMeminfo() error {
	p, ok := s.Pool(s.DefaultSizeKB, AllNodes)
	if !ok {
		return fmt.Errorf("hugepages: /proc/meminfo says Hugepagesize %d kB but %s has no hugepages-%dkB",
			s.DefaultSizeKB, globalDir, s.DefaultSizeKB)
	}
	// HugePages_Total counts surplus pages; sysfs nr_hugepages does not.
	if p.Total+p.Surplus != s.Meminfo.Total || p.Free != s.Meminfo.Free {
		return fmt.Errorf("hugepages: %s: sysfs nr_hugepages=%d surplus=%d free=%d but /proc/meminfo HugePages_Total=%d HugePages_Free=%d",
			p.Object(), p.Total, p.Surplus, p.Free, s.Meminfo.Total, s.Meminfo.Free)
	}
	return nil
}

// VerifyMeminfoSettled is VerifyMeminfo on a live system. ReadState reads
// /proc/meminfo and the sysfs pools one file after another, so a process
// that allocates or frees pages in between (a DPDK application starting,
// OvS, another rig) makes one reading disagree without anything being
// wrong. On a mismatch it reads the state again, up to tries readings in
// all, pause apart, and fails only when every one disagreed (with the
// last one's figures).
func VerifyMeminfoSettled(fs FS, st *State, tries int, pause time.Duration) error {
	err := st.VerifyMeminfo()
	for i := 1; err != nil && i < tries; i++ {
		time.Sleep(pause)
		again, rerr := ReadState(fs)
		if rerr != nil {
			return rerr
		}
		err = again.VerifyMeminfo()
	}
	return err
}

// ParsePageSize turns "2M", "2MB", "2048kB", "1G", "1GB", "1Gi", "2097152"
// (bytes) into kB. Only sizes the kernel offers are checked later, against sysfs.
func ParsePageSize(s string) (int64, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return 0, fmt.Errorf("empty page size; use e.g. 2M or 1G")
	}
	low := strings.ToLower(in)
	low = strings.TrimSuffix(low, "b")
	low = strings.TrimSuffix(low, "i")
	mult := int64(0)
	switch {
	case strings.HasSuffix(low, "k"):
		mult, low = 1, strings.TrimSuffix(low, "k")
	case strings.HasSuffix(low, "m"):
		mult, low = 1024, strings.TrimSuffix(low, "m")
	case strings.HasSuffix(low, "g"):
		mult, low = 1024*1024, strings.TrimSuffix(low, "g")
	default:
		mult = -1 // bytes
	}
	n, err := strconv.ParseInt(low, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("page size %q: want a size like 2M, 2048kB or 1G", in)
	}
	var kb int64
	if mult < 0 {
		if n%1024 != 0 {
			return 0, fmt.Errorf("page size %q: bytes must be a multiple of 1024", in)
		}
		kb = n / 1024
	} else {
		if n > (1<<40)/mult {
			return 0, fmt.Errorf("page size %q: too large", in)
		}
		kb = n * mult
	}
	if kb&(kb-1) != 0 {
		return 0, fmt.Errorf("page size %q: not a power of two", in)
	}
	return kb, nil
}

// FormatSize prints kB as a page size people use: 2048 -> "2M", 1048576 -> "1G".
func FormatSize(kb int64) string {
	switch {
	case kb >= 1<<20 && kb%(1<<20) == 0:
		return fmt.Sprintf("%dG", kb>>20)
	case kb >= 1<<10 && kb%(1<<10) == 0:
		return fmt.Sprintf("%dM", kb>>10)
	}
	return fmt.Sprintf("%dK", kb)
}

// FormatAmount renders an amount of memory for people: "1.5 GiB", "512 MiB",
// "96 kB".
func FormatAmount(kb int64) string {
	switch {
	case kb >= 1<<20:
		return fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
	case kb >= 1<<10:
		return fmt.Sprintf("%.0f MiB", float64(kb)/(1<<10))
	}
	return fmt.Sprintf("%d kB", kb)
}

// FormatSizes lists page sizes for messages: "2M, 1G" ("none" when empty).
func FormatSizes(kbs []int64) string {
	if len(kbs) == 0 {
		return "none"
	}
	s := make([]string, len(kbs))
	for i, kb := range kbs {
		s[i] = FormatSize(kb)
	}
	return strings.Join(s, ", ")
}
