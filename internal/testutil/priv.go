// Package testutil holds what tests of several packages share. Its
// subpackages hold heavier helpers: hugetest (a fake kernel hugepage tree
// and real page reservation), ovstest (a private OvS-DPDK instance).
package testutil

import (
	"os"
	"testing"
)

// RequirePrivileged is the one gate for privileged tests (real hugepages,
// mounts, network namespaces, OvS-DPDK, DPDK): it skips, saying why, when the
// test does not run as root. Privileged tests are named TestPrivileged… so
// `go test -run Privileged` selects exactly them.
func RequirePrivileged(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("privileged test: needs root (euid is %d); CI runs as root", os.Geteuid())
	}
}
