package system

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"rig/hugepages"
	"rig/internal/testutil/hugetest"
	"rig/playbooks"
	"rig/provision"
)

// hostSnapshot is what rig down must give back: every pool, the hugetlbfs
// mounts and the files rig may write.
func hostSnapshot(t *testing.T, k *hugetest.FakeKernel, files ...string) string {
	t.Helper()
	st, err := hugepages.ReadState(k)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, p := range st.Pools {
		fmt.Fprintf(&b, "%s total=%d free=%d\n", hugepages.PoolName(p.SizeKB, p.Node), p.Total, p.Free)
	}
	for _, m := range st.Mounts {
		b.WriteString("mount " + m.Path + "\n")
	}
	for _, f := range files {
		if _, err := os.Lstat(k.Path(f)); err == nil {
			c, _ := os.ReadFile(k.Path(f))
			b.WriteString("file " + f + " " + string(c) + "\n")
		}
	}
	return b.String()
}

// TestHugepagesDown: up grows two pools (one had pages before), mounts
// hugetlbfs in a new directory and persists; down gives the pools their
// counts from before up, unmounts, removes the directory and the files,
// and forgets the record; a second down changes nothing.
func TestHugepagesDown(t *testing.T) {
	k := hugetest.NewFakeKernel(t, 2048, []int64{2048, 1 << 20}, []int{0})
	k.SetPool(2048, 0, 16)
	files := []string{"/etc/tmpfiles.d/rig-hugepages.conf", "/etc/systemd/system/dev-hugepages.mount", "/etc/systemd/system/sysinit.target.wants/dev-hugepages.mount", "/dev/hugepages"}
	before := hostSnapshot(t, k, files...)
	spec := &playbooks.HugepagesSpec{
		Pages:   []playbooks.HugepageReservation{{Size: "2M", Count: 128}, {Size: "1G", Count: 1}},
		Mounts:  []playbooks.HugetlbfsMount{{Path: "/dev/hugepages"}},
		Persist: true,
	}
	if res := runOne(t, hpStep(t, k, spec), provision.RunApply); res.Status != provision.StatusChanged {
		t.Fatalf("up: %s %s", res.Status, res.Error)
	}
	if after := hostSnapshot(t, k, files...); after == before {
		t.Fatal("up changed nothing")
	}
	down := hpStep(t, k, spec).Down(provision.DownOptions{})
	res := runOne(t, down, provision.RunApply)
	if res.Status != provision.StatusChanged {
		t.Fatalf("down: %s %s", res.Status, res.Error)
	}
	if got := hostSnapshot(t, k, files...); got != before {
		t.Fatalf("after down:\n%s\nbefore up:\n%s\nchanges %v", got, before, res.Changes)
	}
	st, err := provision.LoadState(down.(*hugepagesDown).s.state)
	if err != nil || st.Hugepages != nil {
		t.Fatalf("record left: %+v %v", st.Hugepages, err)
	}
	k.ResetWrites()
	res = runOne(t, hpStep(t, k, spec).Down(provision.DownOptions{}), provision.RunApply)
	if res.Status != provision.StatusOK || len(k.Writes) != 0 {
		t.Fatalf("second down: %s writes %q", res.Status, k.Writes)
	}
	if !reflect.DeepEqual(res.Notes, []string{"hugepages: no rig record in " + down.(*hugepagesDown).s.state.Path + " (rig changed nothing here, or down restored it)"}) {
		t.Errorf("notes %q", res.Notes)
	}
}
