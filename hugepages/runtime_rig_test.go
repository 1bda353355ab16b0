package hugepages_test

import (
	"reflect"
	"testing"

	"rig/hugepages"
	"rig/internal/testutil/hugetest"
)

// Runtime dirs of rig's own prefix (rig<pid>, an --in-memory dataplane:
// no config file) whose process is gone, after a SIGKILL or a crash, are
// dead and cleaned; one whose pid runs, one a live process holds a file
// of, and one of another prefix without config stay, each with the why.
func TestRuntimeDirsRigPrefixOfDeadProcess(t *testing.T) {
	k := hugetest.NewFakeKernel(t, 2048, []int64{2048}, nil)
	const run = hugepages.DPDKRunDir
	for _, p := range []string{"rig4001", "rig4002", "rig4003", "other7"} {
		k.Put(run+"/"+p+"/dpdk_telemetry.v2", "")
		k.Put(run+"/"+p+"/mp_socket", "")
	}
	k.Put("/proc/4002/stat", "4002 (rig) S 1 1 1 0 -1 0")
	k.Put("/proc/9/maps", "7f0000000000-7f0000200000 rw-s 00000000 00:2c 12 "+run+"/rig4003/mp_socket\n")
	dirs, err := hugepages.FindRuntimeDirs(k, hugepages.Users(k))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, d := range dirs {
		got[d.Prefix] = d.State + ": " + d.Why
	}
	want := map[string]string{
		"rig4001": "dead: rig's own prefix (rig<pid>) and pid 4001 is gone (killed or crashed); no process holds or maps its files",
		"rig4002": "alive: rig's own prefix (rig<pid>) and pid 4002 runs",
		"rig4003": "alive: a live process holds " + run + "/rig4003/mp_socket",
		"other7":  "unknown: no config file (an --in-memory run, or not a DPDK runtime dir); left alone",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	rep, err := hugepages.Clean(k, dirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rep.RuntimeDirs, []string{run + "/rig4001"}) || k.Exists(run+"/rig4001") {
		t.Fatalf("clean: %+v", rep)
	}
	for _, p := range []string{"rig4002", "rig4003", "other7"} {
		if !k.Exists(run + "/" + p + "/mp_socket") {
			t.Errorf("%s removed", p)
		}
	}
}
