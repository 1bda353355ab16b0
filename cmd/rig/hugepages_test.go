package main

import (
	"path/filepath"
	"strings"
	"testing"

	"rig/hugepages/hugetest"
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
