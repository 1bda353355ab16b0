package ovstest

import (
	"context"
	"path/filepath"
	"testing"

	"rig/internal/host"
	"rig/internal/testutil"
	"rig/internal/testutil/sysfstree"
	"rig/ovs"
)

// StatusHost is a fake root where the system ovs-vswitchd (pid 4242) is
// alive, and ovs-vsctl answers with state.
func StatusHost(t *testing.T, state []byte) *host.Host {
	t.Helper()
	h := sysfstree.FakeRoot(t, map[string]string{
		ovs.SystemRunDir + "/ovs-vswitchd.pid": "4242\n",
		"/proc/4242/stat":                      "4242 (ovs-vswitchd) S 1 4242 4242 0 -1 4194560",
	})
	h.Exec = func(ctx context.Context, name string, args ...string) ([]byte, error) { return state, nil }
	return h
}

// BF3Root is a host root whose sysfs is the BlueField-3 Arm fixture
// (testdata/hosts/bf3-dpu-arm: p0, pf0hpf, en3f0pf0sf0, tmfifo_net0 ...)
// and whose system ovs-vswitchd (pid 4242) is alive; ovs-vsctl answers
// with state.
func BF3Root(t *testing.T, state []byte) *host.Host {
	t.Helper()
	h := StatusHost(t, state)
	sysfstree.Copy(t, filepath.Join(testutil.ModuleRoot(t), "testdata", "hosts", "bf3-dpu-arm", "sys"), filepath.Join(h.Root, "sys"))
	return h
}
