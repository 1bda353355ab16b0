package testutil

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// DefaultDPDKRuntimeDir is where EAL keeps a process's runtime files under
// the default file prefix. ovs-vswitchd's EAL makes it even with
// --in-memory and --no-telemetry, and leaves it (empty) when it stops.
const DefaultDPDKRuntimeDir = "/var/run/dpdk/rte"

// CleanDefaultDPDKRuntimeDir removes, at cleanup, the default-prefix runtime
// dir when the test's processes made it: it was absent before and is empty
// after (a dir with files in it may be a system vswitchd's and stays).
// Register it before the cleanup that stops those processes, so it runs
// after it.
// So does its base, /var/run/dpdk, when that was absent before (a fresh
// host has none) and nothing else is in it.
func CleanDefaultDPDKRuntimeDir(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(DefaultDPDKRuntimeDir); err == nil {
		return // not ours
	}
	base := filepath.Dir(DefaultDPDKRuntimeDir)
	_, err := os.Stat(base)
	baseMade := errors.Is(err, os.ErrNotExist)
	t.Cleanup(func() {
		if ents, err := os.ReadDir(DefaultDPDKRuntimeDir); err == nil && len(ents) == 0 {
			if err := os.Remove(DefaultDPDKRuntimeDir); err != nil {
				t.Errorf("testutil: %v", err)
			}
		} else if err == nil {
			t.Logf("testutil: %s made during the test holds %d file(s); left in place", DefaultDPDKRuntimeDir, len(ents))
		}
		if baseMade {
			_ = os.Remove(base) // only when empty: another process's runtime dir keeps it
		}
	})
}

// KeepNoRuntimeBase is for a package's TestMain: when /var/run/dpdk was
// absent as the package's tests began (a fresh host has none), the
// returned func removes it again if it is empty then. A DPDK process's
// own clean-up cannot always: two processes of a test that started while
// it was there each leave it to the other. It takes the privileged lock
// for the removal, so no test's DPDK is making a runtime dir in it then.
func KeepNoRuntimeBase() func() {
	base := filepath.Dir(DefaultDPDKRuntimeDir)
	if _, err := os.Stat(base); !errors.Is(err, os.ErrNotExist) || os.Geteuid() != 0 {
		return func() {}
	}
	return func() {
		release, err := hostLock(privilegedLock, privilegedWait, func(string, ...any) {})
		if err != nil {
			return // another binary's privileged test runs: its own clean-up follows
		}
		_ = os.Remove(base) // only when empty
		if release != nil {
			release()
		}
	}
}
