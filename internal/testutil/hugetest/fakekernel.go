package hugetest

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"rig/internal/host"
)

// FakeKernel is a host root built from data in a temp dir, with just enough
// kernel behaviour for hugepages: writing nr_hugepages grants up to Capacity
// pages per size, keeps node and system-wide pools consistent, and
// /proc/meminfo is rendered from the default size's pool. Every write is
// recorded.
type FakeKernel struct {
	*host.Host
	t         testing.TB
	DefaultKB int64
	Nodes     []int
	// Capacity[sizeKB] is the most pages the fake grants (system-wide); absent = unlimited.
	Capacity map[int64]int

	mu     sync.Mutex
	Writes []string // "path=value", in order
	Mounts []string // "dir pagesize" for each fake mount
}

// NewFakeKernel builds a root with the given sizes and nodes; pools start at 0.
func NewFakeKernel(t testing.TB, defaultKB int64, sizesKB []int64, nodes []int) *FakeKernel {
	t.Helper()
	root := t.TempDir()
	k := &FakeKernel{Host: host.New(root), t: t, DefaultKB: defaultKB, Nodes: nodes, Capacity: map[int64]int{}}
	k.Host.Exec = func(_ context.Context, name string, args ...string) ([]byte, error) {
		return nil, fmt.Errorf("fake kernel: unexpected exec %s %v", name, args)
	}
	for _, kb := range sizesKB {
		dir := fmt.Sprintf("/sys/kernel/mm/hugepages/hugepages-%dkB", kb)
		for _, f := range []string{"nr_hugepages", "free_hugepages", "resv_hugepages", "surplus_hugepages", "nr_overcommit_hugepages"} {
			k.Put(dir+"/"+f, "0\n")
		}
		for _, n := range nodes {
			nd := fmt.Sprintf("/sys/devices/system/node/node%d/hugepages/hugepages-%dkB", n, kb)
			for _, f := range []string{"nr_hugepages", "free_hugepages", "surplus_hugepages"} {
				k.Put(nd+"/"+f, "0\n")
			}
		}
	}
	k.Put("/proc/mounts", "sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0\nproc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n")
	k.renderMeminfo()
	return k
}

// Put writes a file under the root, creating directories (test setup, not recorded).
func (k *FakeKernel) Put(p, content string) {
	k.t.Helper()
	full := k.Path(p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		k.t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		k.t.Fatal(err)
	}
}

func (k *FakeKernel) get(p string) int {
	b, err := os.ReadFile(k.Path(p))
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

func (k *FakeKernel) set(p string, n int) {
	if err := os.WriteFile(k.Path(p), []byte(strconv.Itoa(n)+"\n"), 0o644); err != nil {
		k.t.Fatal(err)
	}
}

// SetPool sets a pool's count without recording it (test setup).
func (k *FakeKernel) SetPool(sizeKB int64, node, total int) {
	k.apply(sizeKB, node, total)
}

func globalPath(kb int64, f string) string {
	return fmt.Sprintf("/sys/kernel/mm/hugepages/hugepages-%dkB/%s", kb, f)
}
func nodePath(n int, kb int64, f string) string {
	return fmt.Sprintf("/sys/devices/system/node/node%d/hugepages/hugepages-%dkB/%s", n, kb, f)
}

// apply is the fake kernel's nr_hugepages write: node == -1 spreads over nodes.
func (k *FakeKernel) apply(kb int64, node, want int) {
	if want < 0 {
		want = 0
	}
	if node < 0 || len(k.Nodes) == 0 {
		total := want
		if c, ok := k.Capacity[kb]; ok && total > c {
			total = c
		}
		// spread: first node takes what it can, like an even interleave would
		per := make([]int, len(k.Nodes))
		for i := range k.Nodes {
			per[i] = total / len(k.Nodes)
		}
		if len(k.Nodes) > 0 {
			per[0] += total % len(k.Nodes)
		}
		for i, n := range k.Nodes {
			k.set(nodePath(n, kb, "nr_hugepages"), per[i])
			k.set(nodePath(n, kb, "free_hugepages"), per[i])
		}
		k.set(globalPath(kb, "nr_hugepages"), total)
		k.set(globalPath(kb, "free_hugepages"), total)
	} else {
		others := 0
		for _, n := range k.Nodes {
			if n != node {
				others += k.get(nodePath(n, kb, "nr_hugepages"))
			}
		}
		got := want
		if c, ok := k.Capacity[kb]; ok && others+got > c {
			got = c - others
			if got < 0 {
				got = 0
			}
		}
		k.set(nodePath(node, kb, "nr_hugepages"), got)
		k.set(nodePath(node, kb, "free_hugepages"), got)
		k.set(globalPath(kb, "nr_hugepages"), others+got)
		k.set(globalPath(kb, "free_hugepages"), others+got)
	}
	k.renderMeminfo()
}

func (k *FakeKernel) renderMeminfo() {
	total := k.get(globalPath(k.DefaultKB, "nr_hugepages"))
	free := k.get(globalPath(k.DefaultKB, "free_hugepages"))
	k.Put("/proc/meminfo", fmt.Sprintf(`MemTotal:       24576000 kB
MemFree:        20000000 kB
MemAvailable:   20000000 kB
AnonHugePages:         0 kB
HugePages_Total:   %5d
HugePages_Free:    %5d
HugePages_Rsvd:        0
HugePages_Surp:        0
Hugepagesize:       %d kB
Hugetlb:         %8d kB
`, total, free, k.DefaultKB, int64(total)*k.DefaultKB))
}

// WriteFile records the write and emulates the kernel for nr_hugepages.
func (k *FakeKernel) WriteFile(p string, data []byte) error {
	k.mu.Lock()
	k.Writes = append(k.Writes, p+"="+strings.TrimSpace(string(data)))
	k.mu.Unlock()
	if strings.HasSuffix(p, "/nr_hugepages") {
		n, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			return fmt.Errorf("write %s: invalid argument", p)
		}
		var kb int64
		node := -1
		for _, part := range strings.Split(p, "/") {
			if s, ok := strings.CutPrefix(part, "hugepages-"); ok {
				kb, _ = strconv.ParseInt(strings.TrimSuffix(s, "kB"), 10, 64)
			}
			if s, ok := strings.CutPrefix(part, "node"); ok {
				if v, err := strconv.Atoi(s); err == nil {
					node = v
				}
			}
		}
		if !k.Host.Exists(p) {
			return &fs.PathError{Op: "open", Path: p, Err: os.ErrNotExist}
		}
		k.apply(kb, node, n)
		return nil
	}
	return k.Host.WriteFile(p, data)
}

// CreateFile records the write.
func (k *FakeKernel) CreateFile(p string, data []byte, perm fs.FileMode) error {
	k.mu.Lock()
	k.Writes = append(k.Writes, "create "+p)
	k.mu.Unlock()
	return k.Host.CreateFile(p, data, perm)
}

// ReplaceFile records the write (a drop-in rig writes atomically).
func (k *FakeKernel) ReplaceFile(p string, data []byte, perm fs.FileMode) error {
	k.mu.Lock()
	k.Writes = append(k.Writes, "replace "+p)
	k.mu.Unlock()
	return k.Host.ReplaceFile(p, data, perm)
}

// Symlink records the write.
func (k *FakeKernel) Symlink(target, p string) error {
	k.mu.Lock()
	k.Writes = append(k.Writes, "symlink "+p+" -> "+target)
	k.mu.Unlock()
	return k.Host.Symlink(target, p)
}

// MountHugetlbfs is a fake mounter: it adds the line the kernel would show in /proc/mounts.
func (k *FakeKernel) MountHugetlbfs(dir string, pageSizeKB int64) error {
	k.mu.Lock()
	k.Mounts = append(k.Mounts, fmt.Sprintf("%s %d", dir, pageSizeKB))
	k.Writes = append(k.Writes, "mount "+dir)
	k.mu.Unlock()
	b, _ := os.ReadFile(k.Path("/proc/mounts"))
	size := fmt.Sprintf("%dM", pageSizeKB/1024) // the kernel prints pagesize in M, 1 GiB as 1024M
	k.Put("/proc/mounts", string(b)+fmt.Sprintf("hugetlbfs %s hugetlbfs rw,relatime,pagesize=%s 0 0\n", dir, size))
	return os.MkdirAll(k.Path(dir), 0o755)
}

// UnmountHugetlbfs is the fake umount: the mount's /proc/mounts line goes.
func (k *FakeKernel) UnmountHugetlbfs(dir string) error {
	k.mu.Lock()
	k.Writes = append(k.Writes, "umount "+dir)
	k.mu.Unlock()
	b, _ := os.ReadFile(k.Path("/proc/mounts"))
	var keep []string
	found := false
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[1] == dir && f[2] == "hugetlbfs" && !found {
			found = true
			continue
		}
		keep = append(keep, line)
	}
	if !found {
		return fmt.Errorf("umount %s: invalid argument (not mounted)", dir)
	}
	k.Put("/proc/mounts", strings.Join(keep, "\n")+"\n")
	return nil
}

// ResetWrites forgets recorded writes.
func (k *FakeKernel) ResetWrites() {
	k.mu.Lock()
	k.Writes, k.Mounts = nil, nil
	k.mu.Unlock()
}
