package hugetest

import (
	"testing"
	"time"

	"rig/internal/testutil"
)

// lockWait bounds how long a test waits for another test binary's hold on
// the host's hugepage pool.
const lockWait = 5 * time.Minute

// Lock gives the test the host's 2 MiB hugepage pool to itself until it
// ends: test binaries run in parallel (go test -p) and one's restore of
// nr_hugepages would take the pages another just reserved
// (testutil.HostLock "rig-hugetest"; privileged tests hold
// testutil.RequirePrivileged's lock too, this one also guards tools that
// take the pool outside a test's privileged gate).
func Lock(t testing.TB) {
	t.Helper()
	testutil.HostLock(t, "rig-hugetest", lockWait)
}
