package hugepages_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"rig/hugepages"
	"rig/hugepages/hugetest"
	"rig/provision/host"
)

// TestPrivilegedReserveReadBackRestore reserves a few real 2 MiB pages
// through the real /sys, reads them back (sysfs and /proc/meminfo), and
// restores the original count.
func TestPrivilegedReserveReadBackRestore(t *testing.T) {
	hugetest.RequireRoot(t)
	h := host.New("/")
	st, err := hugepages.ReadState(h)
	if err != nil {
		t.Fatal(err)
	}
	if !st.HasSize(2048) {
		t.Skip("kernel offers no 2 MiB pages")
	}
	orig, _ := st.Pool(2048, hugepages.AllNodes)
	t.Cleanup(func() {
		if _, err := hugepages.SetPages(h, 2048, hugepages.AllNodes, orig.Total); err != nil {
			t.Errorf("restore %d pages: %v", orig.Total, err)
		}
		after, err := hugepages.ReadPool(h, 2048, hugepages.AllNodes)
		if err != nil || after.Total != orig.Total {
			t.Errorf("after restore: %+v %v, want total %d", after, err, orig.Total)
		}
	})
	want := orig.Total + 4
	prev, err := hugepages.SetPages(h, 2048, hugepages.AllNodes, want)
	if err != nil {
		t.Fatalf("reserve %d: %v", want, err)
	}
	if prev != orig.Total {
		t.Fatalf("SetPages returned previous %d, want %d", prev, orig.Total)
	}
	st, err = hugepages.ReadState(h)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := st.Pool(2048, hugepages.AllNodes)
	if p.Total != want {
		t.Fatalf("read back %d pages, want %d", p.Total, want)
	}
	if st.DefaultSizeKB == 2048 {
		if err := st.VerifyMeminfo(); err != nil {
			t.Fatal(err)
		}
		if st.Meminfo.Total != want+p.Surplus {
			t.Fatalf("meminfo HugePages_Total=%d, want %d", st.Meminfo.Total, want+p.Surplus)
		}
	}
	// the per-node pools add up to the system-wide one
	sum := 0
	for _, n := range st.Nodes {
		np, _ := st.Pool(2048, n)
		sum += np.Total
	}
	if len(st.Nodes) > 0 && sum != want {
		t.Fatalf("node pools sum to %d, want %d", sum, want)
	}
}

const mountChildEnv = "RIG_HUGEPAGES_MOUNT_CHILD"

// TestPrivilegedMountInPrivateNamespace mounts hugetlbfs with SysMounter in
// a child process that has its own (private) mount namespace, checks
// /proc/mounts there, unmounts, and checks the host never saw the mount.
func TestPrivilegedMountInPrivateNamespace(t *testing.T) {
	if dir := os.Getenv(mountChildEnv); dir != "" {
		mountChild(t, dir)
		return
	}
	hugetest.RequireRoot(t)
	dir := filepath.Join(t.TempDir(), "huge")
	cmd := exec.Command(os.Args[0], "-test.run=^TestPrivilegedMountInPrivateNamespace$", "-test.v")
	cmd.Env = append(os.Environ(), mountChildEnv+"="+dir)
	// Go makes the new namespace's propagation private: nothing leaks back.
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "CHILD-OK") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	host, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(host), dir) {
		t.Fatalf("mount leaked into the host namespace:\n%s", host)
	}
}

func mountChild(t *testing.T, dir string) {
	h := host.New("/")
	if err := (hugepages.SysMounter{Resolve: h.Path}).MountHugetlbfs(dir, 2048); err != nil {
		t.Fatal(err)
	}
	mi, _ := hugepages.ParseMeminfo(mustRead(t, "/proc/meminfo"))
	ms, err := hugepages.ReadMounts(h, mi.DefaultSizeKB)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := hugepages.MountAt(ms, dir)
	if !ok || m.PageSizeKB != 2048 {
		t.Fatalf("after mount: %+v found=%v in %+v", m, ok, ms)
	}
	staleFileLifecycle(t, h, m)
	if err := unix.Unmount(dir, 0); err != nil {
		t.Fatal(err)
	}
	ms, _ = hugepages.ReadMounts(h, mi.DefaultSizeKB)
	if _, ok := hugepages.MountAt(ms, dir); ok {
		t.Fatal("still mounted after unmount")
	}
	t.Log("CHILD-OK")
}

func mustRead(t *testing.T, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// staleFileLifecycle plays a DPDK process on a real hugetlbfs mount: a
// rtemap_0 file whose page is faulted in holds one page while mapped (not
// stale), keeps holding it after the "process" unmaps it (stale, reported
// with its page), and gives it back when deleted.
func staleFileLifecycle(t *testing.T, h *host.Host, m hugepages.Mount) {
	hugetest.Reserve(t, 2)
	freeNow := func() int {
		p, err := hugepages.ReadPool(h, m.PageSizeKB, hugepages.AllNodes)
		if err != nil {
			t.Fatal(err)
		}
		return p.Free
	}
	before := freeNow()
	path := filepath.Join(m.Path, "rtemap_0")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	size := int(m.PageSizeKB * 1024)
	if err := f.Truncate(int64(size)); err != nil {
		t.Fatal(err)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	mem[0] = 1 // fault the page in
	f.Close()
	if got := freeNow(); got != before-1 {
		t.Fatalf("free pages %d after faulting one in, want %d", got, before-1)
	}
	if st := hugepages.FindStale(h, []hugepages.Mount{m}); len(st) != 0 {
		t.Fatalf("mapped by a live process, reported stale: %+v", st)
	}
	if err := unix.Munmap(mem); err != nil {
		t.Fatal(err)
	}
	st := hugepages.FindStale(h, []hugepages.Mount{m})
	if len(st) != 1 || st[0].Path != path || st[0].Pages != 1 {
		t.Fatalf("after the owner let go: %+v, want %s holding 1 page", st, path)
	}
	if got := freeNow(); got != before-1 {
		t.Fatalf("stale file should still hold its page: free %d, want %d", got, before-1)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if got := freeNow(); got != before {
		t.Fatalf("free pages %d after deleting the stale file, want %d", got, before)
	}
}
