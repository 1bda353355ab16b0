package buildcheck

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"rig/internal/testutil"
)

// buildRelease links rig as make release does for this host's
// architecture (mk/release.mk): -tags dpdkstatic,netgo,osusergo, linked
// -static, stripped, version stamped; -trimpath, the one release flag left
// out, changes file names in the binary, not what it links, and would
// recompile every package.
func buildRelease(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("links the release rig")
	}
	bin := filepath.Join(t.TempDir(), "rig-linux-"+runtime.GOARCH)
	cmd := exec.Command("go", "build", "-tags", "dpdkstatic,netgo,osusergo",
		"-ldflags", "-s -w -linkmode external -extldflags -static -X rig/internal/buildinfo.version=v0.0.0-reltest", "-o", bin, "rig/cmd/rig")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1", "CGO_LDFLAGS_ALLOW=-Wl,--(no-)?whole-archive")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the release rig: %v\n%s", err, out)
	}
	return bin
}

// The release binary is fully static: no program interpreter, no dynamic
// section's NEEDED, no imported symbol (so no glibc version floor: it
// starts on Ubuntu 20.04's glibc 2.31 as on anything newer), and `file`
// says so; DPDK, rdma-core, libpcap, libnuma and glibc itself are linked in.
func TestReleaseDynamicDeps(t *testing.T) {
	bin := buildRelease(t)
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("program header %v: a static rig has no interpreter and no dynamic section (link with -extldflags -static, mk/release.mk)", p.Type)
		}
	}
	if needed, err := f.ImportedLibraries(); err != nil || len(needed) != 0 {
		t.Errorf("NEEDED %v (%v): want none", needed, err)
	}
	if syms, _ := f.ImportedSymbols(); len(syms) != 0 {
		t.Errorf("imports %d symbols (%s@%s first): want none", len(syms), syms[0].Name, syms[0].Version)
	}
	if out, err := exec.Command("file", "-b", bin).CombinedOutput(); err != nil || !strings.Contains(string(out), "statically linked") {
		t.Errorf("file %s: %v: %s: want \"statically linked\"", bin, err, out)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "rig     v0.0.0-reltest\n") || !strings.Contains(string(out), "linked static") {
		t.Errorf("release rig version: %v\n%s", err, out)
	}
}

// The release rig runs on a system with nothing but itself: a chroot
// holding only the binary (no C library, no dynamic loader, no
// libgcc_s: static glibc's pthread_cancel, which DPDK uses in
// rte_eal_cleanup, unwinds with the linked-in libgcc_eh), /proc and /sys
// (EAL reads its CPUs there), an empty /var/run (EAL's runtime directory
// goes there), and a BlueField fixture. version finds its PMDs in itself,
// inventory and plan read the fixture, and a net_ring loop runs the static
// dataplane (--no-huge) and exits cleanly.
func TestPrivilegedReleaseChroot(t *testing.T) {
	bin := buildRelease(t) // before the privileged lock: a cold static link holds no one up
	testutil.RequirePrivileged(t)
	root := t.TempDir()
	copyFile(t, bin, filepath.Join(root, "rig"))
	if out, err := exec.Command("cp", "-a", "../../../testdata/hosts/bf2-dpu-arm", filepath.Join(root, "fixture")).CombinedOutput(); err != nil {
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
