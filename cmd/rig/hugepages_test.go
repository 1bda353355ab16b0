package main

import (
	"path/filepath"
	"strings"
	"testing"

	"rig/internal/testutil/hugetest"
)

func TestHugepagesSetSizeListsHostSizes(t *testing.T) {
	k := hugetest.NewFakeKernel(t, 2048, []int64{2048, 1 << 20}, nil)
	for _, c := range []struct{ size, why string }{
		{"3M", `--size 3M: page size "3M": not a power of two`},
		{"4M", "--size 4M: page size 4M not offered by this kernel"},
		{"", "--size : empty page size; use e.g. 2M or 1G"},
	} {
		code, out, errOut := rig(t, "hugepages", "set", "--root", k.Root, "--size", c.size, "--count", "8")
		want := c.why + "; this host offers 2M, 1G (/sys/kernel/mm/hugepages): use one of them, e.g. --size 2M"
		if code != exitUsage || !strings.Contains(errOut, want) {
			t.Errorf("--size %q: code %d\n%s%s\nwant %q", c.size, code, out, errOut, want)
		}
	}
	if len(k.Writes) != 0 {
		t.Fatalf("wrote: %q", k.Writes)
	}
}

func TestHugepagesSetMountPathRefused(t *testing.T) {
	k := hugetest.NewFakeKernel(t, 2048, []int64{2048}, nil)
	for _, m := range []string{"/etc", "/tmp/x/../../etc", "huge", "/usr/share/x"} {
		code, _, errOut := rig(t, "hugepages", "set", "--root", k.Root, "--size", "2M", "--count", "0", "--mount", m,
			"--lock-file", filepath.Join(t.TempDir(), "l"))
		if code != exitUsage || !strings.Contains(errOut, "hugepages set: mounts[0].path: ") {
			t.Errorf("--mount %s: code %d %s", m, code, errOut)
		}
	}
}

func TestHugepagesShowAndCleanLeftovers(t *testing.T) {
	k := hugetest.NewFakeKernel(t, 2048, []int64{2048}, nil)
	k.SetPool(2048, -1, 16)
	k.Put("/proc/mounts", "hugetlbfs /dev/hugepages hugetlbfs rw,relatime,pagesize=2M 0 0\n")
	k.Put("/dev/hugepages/rig77map_0", strings.Repeat("x", 2<<20))
	k.Put("/var/run/dpdk/rig77/config", "")
	k.Put("/var/run/dpdk/rig77/fbarray_memzone", "")
	code, out, errOut := rig(t, "hugepages", "show", "--root", k.Root)
	for _, w := range []string{
		"/dev/hugepages/rig77map_0  1 x 2M",
		"DPDK runtime directories (/var/run/dpdk):\n  /var/run/dpdk/rig77  dead: no process holds the config lock: its DPDK process is gone\n  1 dead; `rig hugepages clean` removes them",
	} {
		if code != 0 || !strings.Contains(out, w) {
			t.Fatalf("show: code %d lacks %q\n%s%s", code, w, out, errOut)
		}
	}
	code, out, _ = rig(t, "hugepages", "clean", "--root", k.Root, "--dry-run")
	if code != 0 || !strings.Contains(out, "would remove /var/run/dpdk/rig77") || !k.Exists("/var/run/dpdk/rig77") {
		t.Fatalf("dry run: %d %s", code, out)
	}
	code, out, errOut = rig(t, "hugepages", "clean", "--root", k.Root)
	want := "removed /var/run/dpdk/rig77\nremoved /dev/hugepages/rig77map_0\nfreed 1 hugepage(s), removed 1 runtime dir(s) and 1 hugepage file(s)\n"
	if code != 0 || out != want || k.Exists("/var/run/dpdk/rig77") {
		t.Fatalf("clean: code %d\n%s%s\nwant %s", code, out, errOut, want)
	}
	code, out, _ = rig(t, "hugepages", "clean", "--root", k.Root, "--dry-run")
	if code != 0 || out != "nothing to clean\n" {
		t.Fatalf("after clean: %d %q", code, out)
	}
}

func TestHugepagesShowUnreadableRunDirWarns(t *testing.T) {
	k := hugetest.NewFakeKernel(t, 2048, []int64{2048}, nil)
	k.Put("/var/run/dpdk", "not a directory\n")
	code, out, errOut := rig(t, "hugepages", "show", "--root", k.Root)
	if code != 0 || !strings.Contains(out, "WARNING: DPDK runtime directories not checked: hugepages: /var/run/dpdk: ") {
		t.Fatalf("show: %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := rig(t, "hugepages", "clean", "--root", k.Root); code != exitFailure || !strings.Contains(errOut, "/var/run/dpdk") {
		t.Fatalf("clean: %d %s", code, errOut)
	}
}
