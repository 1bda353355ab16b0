package hugepages_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"rig/hugepages"
	"rig/internal/testutil/hugetest"
)

const lockHolderEnv = "RIG_TEST_DPDK_LOCK_HOLDER"

// TestMain doubles as a stand-in DPDK primary: with lockHolderEnv set the
// binary write-locks that config file the way rte_eal_init does (a POSIX
// lock on bytes 136..17543 of a 22.11 config, as lslocks shows for a live
// dpdk-testpmd), says LOCKED and holds it until stdin closes.
func TestMain(m *testing.M) {
	if p := os.Getenv(lockHolderEnv); p != "" {
		f, err := os.OpenFile(p, os.O_RDWR, 0)
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		lk := unix.Flock_t{Type: unix.F_WRLCK, Start: 136, Len: 17543 - 136 + 1}
		if err := unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Println("LOCKED")
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// holdConfigLock starts a process that holds a DPDK primary's lock on the
// config file at full (a real path) until the returned stop is called.
func holdConfigLock(t *testing.T, full string) (pid int, stop func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), lockHolderEnv+"="+full)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "LOCKED" {
		in.Close()
		cmd.Wait()
		t.Fatalf("lock holder: %q", line)
	}
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			in.Close()
			cmd.Wait()
		}
	}
	t.Cleanup(stop)
	return cmd.Process.Pid, stop
}

func inode(t *testing.T, full string) string {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(full, &st); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%02x:%02x:%d", unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)), st.Ino)
}

func TestRuntimeDirsClassifyAndClean(t *testing.T) {
	k := hugetest.NewFakeKernel(t, 2048, []int64{2048}, nil)
	const run = hugepages.DPDKRunDir
	// rte: its primary is gone (config, no lock); rig4242: alive (config locked);
	// ovs_x: primary gone but a secondary holds a flock on an fbarray file;
	// pfx: a live process maps its hugepage file; noconf: no config file
	for _, p := range []string{"rte", "rig4242", "ovs_x", "pfx"} {
		k.Put(run+"/"+p+"/config", strings.Repeat("\x00", 17544))
		k.Put(run+"/"+p+"/fbarray_memzone", "")
	}
	k.Put(run+"/rte/mp_socket", "")
	k.Put(run+"/noconf/telemetry", "")
	if err := os.MkdirAll(k.Path(run+"/empty"), 0o700); err != nil {
		t.Fatal(err)
	}
	k.Put("/proc/locks", fmt.Sprintf("1: FLOCK  ADVISORY  READ 777 %s 0 EOF\n2: -> FLOCK  ADVISORY  WRITE 778 %s 0 EOF\n",
		inode(t, k.Path(run+"/ovs_x/fbarray_memzone")), inode(t, k.Path(run+"/rte/config"))))
	k.Put("/proc/mounts", "hugetlbfs /dev/hugepages hugetlbfs rw,relatime,pagesize=2M 0 0\n")
	k.Put("/dev/hugepages/pfxmap_0", "")
	k.Put("/dev/hugepages/rtemap_0", strings.Repeat("x", 3*2048*1024))
	k.Put("/proc/7/maps", "7f0000000000-7f0000200000 rw-s 00000000 00:2c 12 /dev/hugepages/pfxmap_0\n")
	pid, stop := holdConfigLock(t, k.Path(run+"/rig4242/config"))

	dirs, err := hugepages.FindRuntimeDirs(k, hugepages.Users(k))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, d := range dirs {
		got[d.Prefix] = d.State + ": " + d.Why
	}
	want := map[string]string{
		"empty":   "dead: empty: nothing of its process is left",
		"noconf":  "unknown: no config file (an --in-memory run, or not a DPDK runtime dir); left alone",
		"ovs_x":   "alive: pid 777 holds a lock on fbarray_memzone (a DPDK process is attached)",
		"pfx":     "alive: a live process maps /dev/hugepages/pfxmap_0",
		"rig4242": fmt.Sprintf("alive: pid %d holds the lock on config (DPDK primary running)", pid),
		"rte":     "dead: no process holds the config lock: its DPDK process is gone",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}

	stale := hugepages.FindStale(k, []hugepages.Mount{{Path: "/dev/hugepages", PageSizeKB: 2048}})
	rep, err := hugepages.Clean(k, dirs, stale)
	if err != nil {
		t.Fatal(err)
	}
	wantRep := hugepages.CleanReport{RuntimeDirs: []string{run + "/empty", run + "/rte"}, HugeFiles: []string{"/dev/hugepages/rtemap_0"}, Pages: 3}
	if !reflect.DeepEqual(rep, wantRep) {
		t.Fatalf("clean: %+v, want %+v", rep, wantRep)
	}
	for _, p := range []string{"noconf", "ovs_x", "pfx", "rig4242"} {
		if !k.Exists(run + "/" + p) {
			t.Errorf("%s removed", p)
		}
	}
	if k.Exists(run+"/rte") || k.Exists("/dev/hugepages/rtemap_0") || !k.Exists("/dev/hugepages/pfxmap_0") {
		t.Fatal("clean removed the wrong things")
	}

	// once the primary exits the kernel drops its lock: dead, and cleanable
	stop()
	dirs, _ = hugepages.FindRuntimeDirs(k, hugepages.Users(k))
	for _, d := range dirs {
		if d.Prefix == "rig4242" && d.State != hugepages.RuntimeDead {
			t.Fatalf("after exit: %+v", d)
		}
	}
	// a dir that comes alive between listing and cleaning is skipped
	k.Put(run+"/rig99/config", "")
	dead := []hugepages.RuntimeDir{{Prefix: "rig99", Path: run + "/rig99", State: hugepages.RuntimeDead}}
	pid, _ = holdConfigLock(t, k.Path(run+"/rig99/config"))
	rep, err = hugepages.Clean(k, dead, nil)
	if err != nil || len(rep.RuntimeDirs) != 0 || len(rep.Skipped) != 1 || !strings.Contains(rep.Skipped[0], fmt.Sprintf("alive now (pid %d holds the lock on config", pid)) {
		t.Fatalf("raced clean: %+v %v", rep, err)
	}
}

// Under a fixture root, finding and cleaning leftovers stay in the tree: a
// tree whose /var/run/dpdk and /dev/hugepages are symlinks to directories
// outside it (this machine's, in an attack) lists nothing there and
// removes nothing there, even when told to remove a dir or a file by its
// host path.
func TestCleanStaysInFixtureRoot(t *testing.T) {
	k := hugetest.NewFakeKernel(t, 2048, []int64{2048}, nil)
	out := t.TempDir()
	for _, p := range []string{"rte/config", "rte/fbarray_memzone", "rtemap_0"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(out, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(out, p), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []string{hugepages.DPDKRunDir, "/dev/hugepages"} {
		if err := os.MkdirAll(filepath.Dir(k.Path(l)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(out, k.Path(l)); err != nil {
			t.Fatal(err)
		}
	}
	k.Put("/proc/mounts", "hugetlbfs /dev/hugepages hugetlbfs rw,relatime,pagesize=2M 0 0\n")
	dirs, err := hugepages.FindRuntimeDirs(k, hugepages.Users(k))
	if err != nil || len(dirs) != 0 {
		t.Fatalf("found outside the tree: %+v %v", dirs, err)
	}
	if stale := hugepages.FindStale(k, []hugepages.Mount{{Path: "/dev/hugepages", PageSizeKB: 2048}}); len(stale) != 0 {
		t.Fatalf("stale outside the tree: %+v", stale)
	}
	rep, err := hugepages.Clean(k, []hugepages.RuntimeDir{{Prefix: "rte", Path: hugepages.DPDKRunDir + "/rte", State: hugepages.RuntimeDead}},
		[]hugepages.StaleFile{{Path: "/dev/hugepages/rtemap_0", PageSizeKB: 2048, Pages: 1}})
	if err == nil || len(rep.RuntimeDirs)+len(rep.HugeFiles) != 0 || !strings.Contains(err.Error(), k.Path("/dev/hugepages")) {
		t.Fatalf("clean: %+v %v", rep, err)
	}
	for _, p := range []string{"rte/config", "rte/fbarray_memzone", "rtemap_0"} {
		if _, err := os.Stat(filepath.Join(out, p)); err != nil {
			t.Errorf("%s outside the tree: %v", p, err)
		}
	}
}
