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
	"time"

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
// the check's: provision/check.CheckMemoryMB).
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
	// surplus pages in use are a process that is still exiting (an
	// earlier test's OvS): wait for them, or raising the pool takes them in
	settleSurplus(10 * time.Second)
	total, err := persistent()
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
	t.Cleanup(func() { restore(t, total) })
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

// persistent is the pool's own pages: nr_hugepages less the surplus
// ones. When nr_hugepages is lowered below the pages in use (a process of
// a test still exiting), the kernel makes those surplus and frees them
// when they are released (seen: 2 in use, write 0: nr_hugepages 2,
// surplus 2; released: 0). A count read then includes them: restored
// later, it would keep them in the pool for good (65 pages were left so
// after a check test: the next test read 65 and gave back 65).
func persistent() (int, error) {
	nr, err := readInt("nr_hugepages")
	if err != nil {
		return 0, err
	}
	surplus, err := readInt("surplus_hugepages")
	if err != nil {
		return 0, err
	}
	return nr - surplus, nil
}

// settleSurplus waits up to wait for surplus pages in use to be released,
// and gives back free surplus pages: on this VM's kernel (6.18) surplus
// pages freed by their process stayed in the pool, free and surplus, for
// minutes (65 of them after a check test, through every later write of
// nr_hugepages), until nr_hugepages was written at the pool's size (they
// become its own) and then below it. It returns the surplus left (in use).
func settleSurplus(wait time.Duration) int {
	deadline := time.Now().Add(wait)
	for {
		nr, _ := readInt("nr_hugepages")
		sp, _ := readInt("surplus_hugepages")
		free, _ := readInt("free_hugepages")
		switch {
		case sp <= 0:
			return 0
		case free >= sp: // nobody's: make them the pool's, then let them go
			_ = write(nr)
			_ = write(nr - sp)
			continue
		case time.Now().After(deadline):
			return sp
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// restore puts the pool back to total pages, once the test's processes
// gave theirs back (settleSurplus), and fails the test if it is not.
func restore(t testing.TB, total int) {
	err := write(total)
	left := settleSurplus(restoreWait)
	if p, perr := persistent(); err == nil && perr == nil && (p != total || left > 0) {
		err = fmt.Errorf("the pool has %d pages of its own, not %d, and %d surplus pages in use after %v (a process of the test holds them)", p, total, left, restoreWait)
	}
	if err != nil {
		t.Errorf("hugetest: restore nr_hugepages=%d: %v", total, err)
	}
}

// restoreWait bounds how long restore waits for the test's processes to
// give their pages back.
const restoreWait = 15 * time.Second

func write(n int) error {
	p := filepath.Join(sysDir, "nr_hugepages")
	if err := os.WriteFile(p, []byte(strconv.Itoa(n)), 0); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}
