// Package hugetest gives privileged tests real 2 MiB hugepages and gives
// them back: Reserve raises the system-wide 2 MiB pool so that at least n
// pages are free, and restores the previous count when the test ends.
package hugetest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"rig/internal/testutil"
)

const sysDir = "/sys/kernel/mm/hugepages/hugepages-2048kB"

func readInt(name string) (int, error) {
	b, err := os.ReadFile(filepath.Join(sysDir, name))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// Reserve makes at least n 2 MiB hugepages free for the test and restores
// nr_hugepages at cleanup, holding the pool (Lock) until then. It skips when
// not root and fails when the kernel grants fewer pages than needed.
func Reserve(t testing.TB, n int) {
	t.Helper()
	testutil.RequirePrivileged(t)
	Lock(t)
	total, err := readInt("nr_hugepages")
	if err != nil {
		t.Fatalf("hugetest: %v", err)
	}
	free, err := readInt("free_hugepages")
	if err != nil {
		t.Fatalf("hugetest: %v", err)
	}
	if free >= n {
		return
	}
	want := total + (n - free)
	if err := write(want); err != nil {
		t.Fatalf("hugetest: reserve %d pages: %v", want, err)
	}
	t.Cleanup(func() {
		if err := write(total); err != nil {
			t.Errorf("hugetest: restore nr_hugepages=%d: %v", total, err)
		}
	})
	got, _ := readInt("free_hugepages")
	if got < n {
		// A short grant on a busy or fragmented host: compact memory and
		// ask once more before failing (the kernel retries the allocation
		// on each write of nr_hugepages).
		_ = os.WriteFile("/proc/sys/vm/compact_memory", []byte("1"), 0)
		if err := write(want); err != nil {
			t.Fatalf("hugetest: reserve %d pages (second try): %v", want, err)
		}
		got, _ = readInt("free_hugepages")
	}
	if got < n {
		t.Fatalf("hugetest: wanted %d free 2 MiB pages, kernel granted %d free", n, got)
	}
}

func write(n int) error {
	p := filepath.Join(sysDir, "nr_hugepages")
	if err := os.WriteFile(p, []byte(strconv.Itoa(n)), 0); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}
