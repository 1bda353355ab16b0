// Package testutil holds what tests of several packages share. Its
// subpackages hold heavier helpers: hugetest (a fake kernel hugepage tree
// and real page reservation), ovstest (a private OvS-DPDK instance).
package testutil

import (
	"os"
	"testing"
	"time"
)

// privilegedWait bounds how long a privileged test waits for another test
// binary's privileged test: the longest runs about 2 minutes, but the
// other binary may run several in a row.
const privilegedWait = 20 * time.Minute

// privilegedLock names RequirePrivileged's host-wide lock.
const privilegedLock = "rig-privileged"

// RequirePrivileged is the one gate for privileged tests (real hugepages,
// mounts, network namespaces, OvS-DPDK, DPDK): it skips, saying why, when the
// test does not run as root. Privileged tests are named TestPrivileged… so
// `go test -run Privileged` selects exactly them.
//
// As root it also takes the host-wide privileged lock until the test ends
// (HostLock "rig-privileged"): make test runs test binaries in parallel
// (go test -p 2) so that one package's unit tests and the next package's
// build overlap another's privileged tests, but two privileged tests never
// run at once: they share the host's CPUs for their dataplanes, its
// hugepage pool, its OvS binaries and default paths.
func RequirePrivileged(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("privileged test: needs root (euid is %d); CI runs as root", os.Geteuid())
	}
	HostLock(t, privilegedLock, privilegedWait)
}
