package hugepages_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"rig/hugepages"
	"rig/internal/host"
	"rig/internal/testutil"
	"rig/internal/testutil/hugetest"
)

// TestPrivilegedReserveReadBackRestore reserves a few real 2 MiB pages
// through the real /sys, reads them back (sysfs and /proc/meminfo), and
// restores the original count.
func TestPrivilegedReserveReadBackRestore(t *testing.T) {
	testutil.RequirePrivileged(t)
	hugetest.Lock(t) // no other test binary changes the pool meanwhile
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
	testutil.RequirePrivileged(t)
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
	hugetest.ReserveFor(t, hugetest.Need{What: "the rtemap_0 file the test faults in, a page to spare", MiB: 2 * hugetest.PageMiB})
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

const cleanChildEnv = "RIG_HUGEPAGES_CLEAN_CHILD"

// TestPrivilegedCleanDeadRuntimeDir plays a dead and a live DPDK process on
// the real host in a private mount namespace (a tmpfs over /run/dpdk, a real
// hugetlbfs mount): the dead one's runtime dir and its rtemap file (holding
// a real page) are reported and cleaned, the page comes back, and the live
// one's dir is left alone.
func TestPrivilegedCleanDeadRuntimeDir(t *testing.T) {
	if dir := os.Getenv(cleanChildEnv); dir != "" {
		cleanChild(t, dir)
		return
	}
	testutil.RequirePrivileged(t)
	dir := filepath.Join(t.TempDir(), "huge")
	cmd := exec.Command(os.Args[0], "-test.run=^TestPrivilegedCleanDeadRuntimeDir$", "-test.v")
	cmd.Env = append(os.Environ(), cleanChildEnv+"="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "CHILD-OK") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if host, _ := os.ReadFile("/proc/self/mounts"); strings.Contains(string(host), dir) {
		t.Fatalf("mount leaked into the host namespace:\n%s", host)
	}
}

func cleanChild(t *testing.T, dir string) {
	h := host.New("/")
	run, err := filepath.EvalSymlinks("/var/run")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(run+"/dpdk", 0o700); err != nil {
		t.Fatal(err)
	}
	// the host's real runtime dirs are hidden under this namespace's tmpfs
	if err := unix.Mount("tmpfs", run+"/dpdk", "tmpfs", 0, "mode=0700"); err != nil {
		t.Fatal(err)
	}
	if err := (hugepages.SysMounter{Resolve: h.Path}).MountHugetlbfs(dir, 2048); err != nil {
		t.Fatal(err)
	}
	hugetest.ReserveFor(t, hugetest.Need{What: "the page the dead process's file holds, a page to spare", MiB: 2 * hugetest.PageMiB})
	free := func() int {
		p, err := hugepages.ReadPool(h, 2048, hugepages.AllNodes)
		if err != nil {
			t.Fatal(err)
		}
		return p.Free
	}
	before := free()
	for _, p := range []string{"rigdead", "riglive"} {
		if err := os.MkdirAll(hugepages.DPDKRunDir+"/"+p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(hugepages.DPDKRunDir+"/"+p+"/config", make([]byte, 17544), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	livePid, _ := holdConfigLock(t, hugepages.DPDKRunDir+"/riglive/config")
	// the dead process's hugepage: faulted in, then let go without deleting
	mapPath := filepath.Join(dir, "rigdeadmap_0")
	f, err := os.OpenFile(mapPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(2 << 20); err != nil {
		t.Fatal(err)
	}
	mem, err := unix.Mmap(int(f.Fd()), 0, 2<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	mem[0] = 1
	unix.Munmap(mem)
	f.Close()
	if got := free(); got != before-1 {
		t.Fatalf("free %d after the dead process's page, want %d", got, before-1)
	}

	mounts := []hugepages.Mount{{Path: dir, PageSizeKB: 2048}}
	dirs, err := hugepages.FindRuntimeDirs(h, hugepages.Users(h))
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, d := range dirs {
		states[d.Prefix] = d.State + ": " + d.Why
	}
	want := map[string]string{
		"rigdead": "dead: no process holds the config lock: its DPDK process is gone",
		"riglive": fmt.Sprintf("alive: pid %d holds the lock on config (DPDK primary running)", livePid),
	}
	if !reflect.DeepEqual(states, want) {
		t.Fatalf("runtime dirs %q, want %q", states, want)
	}
	stale := hugepages.FindStale(h, mounts)
	rep, err := hugepages.Clean(h, dirs, stale)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rep.RuntimeDirs, []string{hugepages.DPDKRunDir + "/rigdead"}) || !reflect.DeepEqual(rep.HugeFiles, []string{mapPath}) || rep.Pages != 1 {
		t.Fatalf("clean: %+v", rep)
	}
	if got := free(); got != before {
		t.Fatalf("free %d after clean, want %d (the page back)", got, before)
	}
	if _, err := os.Stat(hugepages.DPDKRunDir + "/riglive/config"); err != nil {
		t.Fatalf("live dir touched: %v", err)
	}
	if err := unix.Unmount(dir, 0); err != nil {
		t.Fatal(err)
	}
	t.Log("CHILD-OK")
}
