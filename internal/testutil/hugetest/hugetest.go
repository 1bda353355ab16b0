// Package hugetest gives privileged tests real 2 MiB hugepages and gives
// them back. A test names what it runs that takes hugepages (Need: each
// DPDK process's EAL memory, an OvS's socket memory) and ReserveFor grows
// the system-wide 2 MiB pool so that all of it fits, whatever the host
// held before, and restores the previous count when the test ends.
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

// PageMiB is the size of the pages tests reserve.
const PageMiB = 2

func readInt(name string) (int, error) {
	b, err := os.ReadFile(filepath.Join(sysDir, name))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// Need is one thing a test runs that takes 2 MiB hugepages, and how much.
type Need struct {
	What string
	MiB  int
}

func (n Need) pages() int { return (n.MiB + PageMiB - 1) / PageMiB }

func (n Need) String() string { return fmt.Sprintf("%s %d MiB", n.What, n.MiB) }

// OVS is what an ovs-vswitchd-dpdk started with dpdk-socket-mem=mem and
// dpdk-socket-limit=limit (MiB on socket 0; 0: not set) may take from the
// pool: EAL takes mem at start (--socket-mem) and grows up to the limit
// (--socket-limit) as its ports' mempools need. Without a limit OvS grows
// as far as the pool lets it (its shared mempool starts at 256 Ki mbufs and
// halves until one fits: lib/netdev-dpdk.c dpdk_mp_create), so a test that
// runs anything beside such an OvS must set one; mem is then all that is
// certain, and what is counted.
func OVS(mem, limit int) Need {
	return Need{What: fmt.Sprintf("ovs-vswitchd dpdk-socket-mem %d dpdk-socket-limit %d", mem, limit), MiB: max(mem, limit)}
}

// DPDK is one DPDK process's EAL memory (rig's dataplane: bench.MemoryMB;
// the check's: provision.CheckMemoryMB).
func DPDK(what string, mib int) Need { return Need{What: what, MiB: mib} }

// Pages is how many 2 MiB pages needs take together (each rounded up to
// whole pages: DPDK maps memory in pages).
func Pages(needs ...Need) int {
	n := 0
	for _, x := range needs {
		n += x.pages()
	}
	return n
}

func describe(needs []Need) string {
	var parts []string
	for _, x := range needs {
		parts = append(parts, x.String())
	}
	return strings.Join(parts, " + ")
}

// ReserveFor makes the pool hold enough free 2 MiB pages for everything in
// needs running at once, holding the pool (Lock) until the test ends and
// restoring nr_hugepages then. Without root it skips, naming what the test
// needs; as root a short grant fails the test, naming the shortfall.
func ReserveFor(t testing.TB, needs ...Need) {
	t.Helper()
	n := Pages(needs...)
	if n == 0 {
		testutil.RequirePrivileged(t)
		return
	}
	if os.Geteuid() != 0 {
		t.Skipf("privileged test: needs root to reserve %d 2 MiB hugepages (%s); euid is %d; CI runs as root", n, describe(needs), os.Geteuid())
	}
	testutil.RequirePrivileged(t)
	reserve(t, n, describe(needs))
}

func reserve(t testing.TB, n int, what string) {
	t.Helper()
	Lock(t)
	total, err := readInt("nr_hugepages")
	if err != nil {
		t.Fatalf("hugetest: %v", err)
	}
	free, err := readInt("free_hugepages")
	if err != nil {
		t.Fatalf("hugetest: %v", err)
	}
	t.Logf("hugetest: %d free 2 MiB pages wanted (%s); the pool had %d, %d free", n, what, total, free)
	if free >= n {
		return
	}
	want := total + (n - free)
	if err := write(want); err != nil {
		t.Fatalf("hugetest: reserve %d pages for %s: %v", want, what, err)
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
			t.Fatalf("hugetest: reserve %d pages for %s (second try): %v", want, what, err)
		}
		got, _ = readInt("free_hugepages")
	}
	if got < n {
		t.Fatalf("hugetest: %d free 2 MiB pages needed (%s), the kernel granted %d free: %d short (nr_hugepages %d asked; free memory fragmented or too small)",
			n, what, got, n-got, want)
	}
}

func write(n int) error {
	p := filepath.Join(sysDir, "nr_hugepages")
	if err := os.WriteFile(p, []byte(strconv.Itoa(n)), 0); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}
