package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"rig/internal/testutil"
)

// glibcLibs are the shared objects glibc itself provides: a release rig
// (make release, mk/release.mk) may need these and nothing else.
var glibcLibs = regexp.MustCompile(`^(libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|libresolv\.so\.2|ld-linux-(x86-64|aarch64)\.so\.[12]|linux-vdso\.so\.1)$`)

// glibcCeiling is the newest glibc symbol version a release rig may need:
// 2.34 runs it on RHEL/Rocky 9 (glibc 2.34), Ubuntu 22.04 (2.35: NVIDIA's
// BlueField OS image for DOCA 2.x) and Debian 12 (2.36), where it is built.
const glibcCeiling = "2.34"

// buildRelease links rig as make release does for this host's
// architecture: -tags dpdkstatic, the release -ldflags (stripped, version
// stamped); -trimpath, the one release flag left out, changes file names
// in the binary, not what it links, and would recompile every package.
func buildRelease(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("links the release rig")
	}
	bin := filepath.Join(t.TempDir(), "rig-linux-"+runtime.GOARCH)
	cmd := exec.Command("go", "build", "-tags", "dpdkstatic", "-ldflags", "-s -w -X rig/internal/buildinfo.version=v0.0.0-reltest", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1", "CGO_LDFLAGS_ALLOW=-Wl,--(no-)?whole-archive")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the release rig: %v\n%s", err, out)
	}
	return bin
}

// The release binary's dynamic dependencies are glibc's alone (DT_NEEDED,
// what readelf -d lists), at symbol versions no newer than glibcCeiling;
// DPDK, rdma-core, libpcap, libnuma and the rest are linked in.
func TestReleaseDynamicDeps(t *testing.T) {
	bin := buildRelease(t)
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	needed, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	for _, lib := range needed {
		if !glibcLibs.MatchString(lib) {
			t.Errorf("NEEDED %s: not part of glibc; link it statically (bench/internal/dpdk/link_static.go)", lib)
		}
	}
	if len(needed) == 0 || !contains(needed, "libc.so.6") {
		t.Errorf("NEEDED %v: want glibc's libc.so.6 (a dynamic glibc binary)", needed)
	}
	syms, err := f.ImportedSymbols()
	if err != nil {
		t.Fatal(err)
	}
	newest, by := "0", ""
	for _, s := range syms {
		if v, ok := strings.CutPrefix(s.Version, "GLIBC_"); ok && versionLess(newest, v) {
			newest, by = v, s.Name
		} else if !ok && s.Version != "" && !strings.HasPrefix(s.Version, "GLIBC_PRIVATE") {
			t.Errorf("symbol %s@%s (library %s): not a glibc version", s.Name, s.Version, s.Library)
		}
	}
	if versionLess(glibcCeiling, newest) {
		t.Errorf("needs GLIBC_%s (%s): newer than GLIBC_%s, it would not start on RHEL 9", newest, by, glibcCeiling)
	}
	t.Logf("NEEDED %v; newest glibc symbol version GLIBC_%s (%s)", needed, newest, by)
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "rig     v0.0.0-reltest\n") || !strings.Contains(string(out), "linked static") {
		t.Errorf("release rig version: %v\n%s", err, out)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// versionLess compares dotted decimal versions ("2.34" < "2.4" is false).
func versionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) || i < len(bs); i++ {
		var x, y int
		if i < len(as) {
			x, _ = strconv.Atoi(as[i])
		}
		if i < len(bs) {
			y, _ = strconv.Atoi(bs[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

func TestVersionLess(t *testing.T) {
	for _, c := range []struct {
		a, b string
		less bool
	}{{"2.34", "2.35", true}, {"2.4", "2.34", true}, {"2.34", "2.4", false}, {"2.34", "2.34", false}, {"2.3.4", "2.34", true}, {"0", "2.2.5", true}} {
		if got := versionLess(c.a, c.b); got != c.less {
			t.Errorf("versionLess(%s, %s) = %v", c.a, c.b, got)
		}
	}
}

// The release rig runs on a system with none of DPDK, rdma-core, libpcap
// or libnuma: a chroot holding only the binary, the glibc files ldd names
// for it (and libgcc_s.so.1, which glibc loads itself), /proc and /sys (EAL reads its CPUs there), an empty /var/run
// (EAL's runtime directory goes there), and a BlueField
// fixture. version finds its PMDs in itself, inventory and plan read the
// fixture, and a net_ring loop runs the static dataplane (--no-huge).
func TestPrivilegedReleaseChroot(t *testing.T) {
	testutil.RequirePrivileged(t)
	bin := buildRelease(t)
	root := t.TempDir()
	copyFile(t, bin, filepath.Join(root, "rig"))
	libDir := ""
	for _, lib := range lddPaths(t, bin) {
		if !glibcLibs.MatchString(filepath.Base(lib)) {
			t.Fatalf("ldd: %s is not glibc's", lib)
		}
		if filepath.Base(lib) == "libc.so.6" {
			libDir = filepath.Dir(lib)
		}
		copyFile(t, lib, filepath.Join(root, lib))
	}
	// glibc's pthread_cancel dlopens GCC's unwinder (libgcc_s.so.1: "must be
	// installed for pthread_cancel to work"); DPDK cancels its interrupt and
	// multi-process threads in rte_eal_cleanup. It is part of the C
	// library as installed: Debian's libc6 depends on libgcc-s1.
	gccS, err := exec.Command("gcc", "-print-file-name=libgcc_s.so.1").Output()
	if err != nil || !filepath.IsAbs(strings.TrimSpace(string(gccS))) {
		t.Fatalf("gcc -print-file-name=libgcc_s.so.1: %v %q", err, gccS)
	}
	copyFile(t, strings.TrimSpace(string(gccS)), filepath.Join(root, libDir, "libgcc_s.so.1"))
	if out, err := exec.Command("cp", "-a", "../../testdata/hosts/bf2-dpu-arm", filepath.Join(root, "fixture")).CombinedOutput(); err != nil {
		t.Fatalf("copy the fixture: %v\n%s", err, out)
	}
	for _, d := range []string{"proc", "sys", "tmp", "var/run"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"version"}, []string{"rig     v0.0.0-reltest\n", "linked static", " mlx5_eth ", "from /rig)"}},
		{[]string{"inventory", "--root", "/fixture"}, []string{"0000:03:00.0  BlueField-2 [15b3:a2d6]", "rdma mlx5_0/1: state 4: ACTIVE"}},
		{[]string{"plan", "-p", "bf2-dpu", "--only", "rdma", "--root", "/fixture"}, []string{"rdma mlx5_1/1 (p1): ACTIVE / LINK_UP", "1 ok"}},
		{[]string{"bench", "loop", "--vdev", "net_ring0", "--no-huge", "--count", "10000", "--no-pin-go"}, []string{"sent 10000, received 10000, lost 0"}},
	} {
		out, err := inChroot(root, c.args...)
		for _, w := range c.want {
			if err != nil || !strings.Contains(out, w) {
				t.Errorf("chroot: rig %s: %v\n%s\nwant %q", strings.Join(c.args, " "), err, out, w)
				break
			}
		}
	}
}

// inChroot runs /rig args in a chroot at root, in a mount namespace of its
// own where proc and sysfs are mounted under root (gone with it).
func inChroot(root string, args ...string) (string, error) {
	script := `mount -t proc proc "$0/proc" && mount -t sysfs sysfs "$0/sys" && exec chroot "$0" /rig "$@"`
	out, err := exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "--", "sh", "-c", script, root}, args...)...).CombinedOutput()
	return string(out), err
}

// lddPaths lists the files ldd says bin loads (the dynamic loader among
// them; not the kernel's vDSO, which is no file).
func lddPaths(t *testing.T, bin string) []string {
	t.Helper()
	out, err := exec.Command("ldd", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("ldd %s: %v\n%s", bin, err, out)
	}
	var paths []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 4 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
			paths = append(paths, f[2])
		case len(f) == 2 && strings.HasPrefix(f[0], "/"):
			paths = append(paths, f[0])
		case len(f) == 2 && strings.HasPrefix(f[0], "linux-vdso"):
		default:
			t.Fatalf("ldd %s: line %q: not found or not understood", bin, line)
		}
	}
	t.Logf("ldd: %v", paths)
	return paths
}

// copyFile copies src's content (through links) to dst, executable.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
}
