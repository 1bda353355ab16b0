package system

import (
	"context"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"

	"rig/internal/host"
	"rig/internal/testutil/hugetest"
	"rig/playbooks"
	"rig/provision"
)

func intp(n int) *int { return &n }

func hpStep(t *testing.T, k *hugetest.FakeKernel, spec *playbooks.HugepagesSpec) *HugepagesStep {
	t.Helper()
	if errs := spec.Validate(); len(errs) > 0 {
		t.Fatalf("spec: %v", errs)
	}
	s, err := newHugepagesStep(k, k, spec)
	if err != nil {
		t.Fatal(err)
	}
	s.state = (&provision.Env{Host: host.New(k.Root)}).State() // the fake kernel tree's own file
	return s
}

func runOne(t *testing.T, s provision.Step, mode provision.RunMode) provision.StepResult {
	t.Helper()
	rep, err := (&provision.Runner{Steps: []provision.Step{s}}).Execute(context.Background(), mode, provision.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	return rep.Steps[0]
}

func TestHugepagesPlanApplyTwice(t *testing.T) {
	k := hugetest.NewFakeKernel(t, 2048, []int64{2048, 1 << 20}, []int{0, 1})
	spec := &playbooks.HugepagesSpec{
		Pages: []playbooks.HugepageReservation{
			{Size: "2M", Count: 512, Node: intp(0)},
			{Size: "2M", Count: 256, Node: intp(1)},
			{Size: "1G", Count: 2},
		},
		Mounts: []playbooks.HugetlbfsMount{{Path: "/dev/hugepages"}, {Path: "/mnt/huge1G", PageSize: "1G"}},
	}
	s := hpStep(t, k, spec)

	// plan: exact changes, no write
	res := runOne(t, s, provision.RunPlan)
	want := []provision.Change{
		{Object: "hugepages node0 2048kB", Action: "set nr_hugepages", From: "0", To: "512"},
		{Object: "hugepages node1 2048kB", Action: "set nr_hugepages", From: "0", To: "256"},
		{Object: "hugepages 1048576kB", Action: "set nr_hugepages", From: "0", To: "2"},
		{Object: "hugetlbfs /dev/hugepages", Action: "mount hugetlbfs", To: "pagesize=2M"},
		{Object: "hugetlbfs /mnt/huge1G", Action: "mount hugetlbfs", To: "pagesize=1G"},
	}
	if res.Status != provision.StatusWouldChange || !reflect.DeepEqual(res.Changes, want) {
		t.Fatalf("plan: %s %+v", res.Status, res.Changes)
	}
	if len(k.Writes) != 0 {
		t.Fatalf("plan wrote: %q", k.Writes)
	}

	// apply: the writes, in order, then verified
	res = runOne(t, s, provision.RunApply)
	if res.Status != provision.StatusChanged || res.Error != "" {
		t.Fatalf("apply: %+v", res)
	}
	wantWrites := []string{
		"/sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages=512",
		"/sys/devices/system/node/node1/hugepages/hugepages-2048kB/nr_hugepages=256",
		"/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages=2",
		"mount /dev/hugepages",
		"mount /mnt/huge1G",
	}
	if !reflect.DeepEqual(k.Writes, wantWrites) {
		t.Fatalf("writes %q\nwant %q", k.Writes, wantWrites)
	}
	if !reflect.DeepEqual(k.Mounts, []string{"/dev/hugepages 2048", "/mnt/huge1G 1048576"}) {
		t.Fatalf("mounts %q", k.Mounts)
	}

	// apply twice: nothing changes, nothing is written
	k.ResetWrites()
	res = runOne(t, s, provision.RunApply)
	if res.Status != provision.StatusOK || len(res.Changes) != 0 {
		t.Fatalf("second apply: %+v", res)
	}
	if len(k.Writes) != 0 {
		t.Fatalf("second apply wrote: %q", k.Writes)
	}
	if !reflect.DeepEqual(res.Notes, []string{"node0 2048kB: 512 pages, 512 free", "node1 2048kB: 256 pages, 256 free", "1048576kB: 2 pages, 2 free"}) {
		t.Fatalf("notes %q", res.Notes)
	}
}

func TestHugepagesPartialGrantRollsBack(t *testing.T) {
	k := hugetest.NewFakeKernel(t, 2048, []int64{2048, 1 << 20}, []int{0})
	k.Capacity[1<<20] = 1
	s := hpStep(t, k, &playbooks.HugepagesSpec{Pages: []playbooks.HugepageReservation{{Size: "1G", Count: 4, Node: intp(0)}}})
	res := runOne(t, s, provision.RunApply)
	if res.Status != provision.StatusFailed {
		t.Fatalf("want failed, got %+v", res)
	}
	for _, sub := range []string{"node0 1048576kB", "kernel granted 1 of 4", "restored the previous 0"} {
		if !strings.Contains(res.Error, sub) {
			t.Errorf("error %q lacks %q", res.Error, sub)
		}
	}
	if !strings.Contains(res.Fix, "hugepagesz=1G hugepages=4") || !strings.Contains(res.Cause, "contiguous") {
		t.Errorf("cause %q fix %q", res.Cause, res.Fix)
	}
	if got := k.Writes; len(got) != 2 || !strings.HasSuffix(got[1], "nr_hugepages=0") {
		t.Fatalf("writes %q: want the try then the restore", got)
	}
	b, _ := os.ReadFile(k.Path("/sys/devices/system/node/node0/hugepages/hugepages-1048576kB/nr_hugepages"))
	if strings.TrimSpace(string(b)) != "0" {
		t.Fatalf("not restored: %q", b)
	}
}

func TestHugepagesProblems(t *testing.T) {
	k := hugetest.NewFakeKernel(t, 2048, []int64{2048}, []int{0})
	cases := []struct {
		name string
		spec *playbooks.HugepagesSpec
		want []string
	}{
		{"size not offered", &playbooks.HugepagesSpec{Pages: []playbooks.HugepageReservation{{Size: "1G", Count: 1}}},
			[]string{"page size 1G not offered by this kernel (offered: 2M)", "pdpe1gb"}},
		{"no such node", &playbooks.HugepagesSpec{Pages: []playbooks.HugepageReservation{{Size: "2M", Count: 1, Node: intp(3)}}},
			[]string{"hugepages node3 2048kB", "NUMA node 3 has no hugepage pools (nodes: [0])"}},
	}
	for _, c := range cases {
		res := runOne(t, hpStep(t, k, c.spec), provision.RunPlan)
		if res.Status != provision.StatusFailed {
			t.Errorf("%s: status %s", c.name, res.Status)
		}
		for _, w := range c.want {
			if !strings.Contains(res.Error+" "+res.Cause+" "+res.Fix, w) {
				t.Errorf("%s: %q lacks %q", c.name, res.Error, w)
			}
		}
	}
	// a hugetlbfs already mounted with another page size is a failure, not a remount
	k.Put("/proc/mounts", "hugetlbfs /dev/hugepages hugetlbfs rw,relatime,pagesize=1024M 0 0\ntmpfs /run/hp tmpfs rw 0 0\n")
	res := runOne(t, hpStep(t, k, &playbooks.HugepagesSpec{Mounts: []playbooks.HugetlbfsMount{{Path: "/dev/hugepages", PageSize: "2M"}}}), provision.RunApply)
	if res.Status != provision.StatusFailed || !strings.Contains(res.Error, "mounted with pagesize=1G, want 2M") || !strings.Contains(res.Fix, "umount /dev/hugepages") {
		t.Fatalf("wrong page size mount: %+v", res)
	}
	res = runOne(t, hpStep(t, k, &playbooks.HugepagesSpec{Mounts: []playbooks.HugetlbfsMount{{Path: "/run/hp"}}}), provision.RunApply)
	if res.Status != provision.StatusFailed || !strings.Contains(res.Error, "/run/hp is already a tmpfs mount") {
		t.Fatalf("other fs: %+v", res)
	}
	if len(k.Writes) != 0 {
		t.Fatalf("failed checks wrote: %q", k.Writes)
	}
}

func TestHugepagesPersistApplyTwice(t *testing.T) {
	k := hugetest.NewFakeKernel(t, 2048, []int64{2048}, nil)
	s := hpStep(t, k, &playbooks.HugepagesSpec{Persist: true,
		Pages:  []playbooks.HugepageReservation{{Size: "2M", Count: 64}},
		Mounts: []playbooks.HugetlbfsMount{{Path: "/dev/hugepages"}}})
	res := runOne(t, s, provision.RunPlan)
	var objs []string
	for _, c := range res.Changes {
		objs = append(objs, c.Object)
	}
	wantObjs := []string{"hugepages 2048kB", "hugetlbfs /dev/hugepages", "persist /etc/tmpfiles.d/rig-hugepages.conf",
		"persist /etc/systemd/system/dev-hugepages.mount", "persist /etc/systemd/system/sysinit.target.wants/dev-hugepages.mount"}
	if !reflect.DeepEqual(objs, wantObjs) {
		t.Fatalf("plan objects %q", objs)
	}
	if res := runOne(t, s, provision.RunApply); res.Status != provision.StatusChanged {
		t.Fatalf("apply: %+v", res)
	}
	tmpf, _ := os.ReadFile(k.Path("/etc/tmpfiles.d/rig-hugepages.conf"))
	if !strings.Contains(string(tmpf), "w /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages - - - - 64\n") {
		t.Fatalf("tmpfiles: %s", tmpf)
	}
	if l, err := os.Readlink(k.Path("/etc/systemd/system/sysinit.target.wants/dev-hugepages.mount")); err != nil || l != "../dev-hugepages.mount" {
		t.Fatalf("enable link: %q %v", l, err)
	}
	k.ResetWrites()
	if res := runOne(t, s, provision.RunApply); res.Status != provision.StatusOK || len(k.Writes) != 0 {
		t.Fatalf("second apply: %+v writes %q", res, k.Writes)
	}
	// an edited persist file is reported and rewritten
	k.Put("/etc/tmpfiles.d/rig-hugepages.conf", "edited\n")
	res = runOne(t, s, provision.RunPlan)
	if len(res.Changes) != 1 || res.Changes[0].Action != "rewrite (survives reboot)" {
		t.Fatalf("edited file: %+v", res.Changes)
	}
	// applying that plan rewrites only that file: pools and mounts that
	// already match are not written again
	k.ResetWrites()
	if res := runOne(t, s, provision.RunApply); res.Status != provision.StatusChanged {
		t.Fatalf("apply after edit: %+v", res)
	}
	if want := []string{"replace /etc/tmpfiles.d/rig-hugepages.conf"}; !reflect.DeepEqual(k.Writes, want) {
		t.Fatalf("writes %q, want only %q", k.Writes, want)
	}
}

func TestHugepagesPlanChangesNothingOnFakeRoot(t *testing.T) {
	// `rig plan` over a real-looking tree: compare every file before and after.
	k := hugetest.NewFakeKernel(t, 2048, []int64{2048, 1 << 20}, []int{0})
	before := snapshot(t, k.Root)
	s := hpStep(t, k, &playbooks.HugepagesSpec{Persist: true, Pages: []playbooks.HugepageReservation{{Size: "2M", Count: 8}},
		Mounts: []playbooks.HugetlbfsMount{{Path: "/dev/hugepages"}}})
	if res := runOne(t, s, provision.RunPlan); res.Status != provision.StatusWouldChange || len(res.Changes) != 5 {
		t.Fatalf("plan: %s with %d changes, want would-change with 5 (pool, mount, 3 persist files)", res.Status, len(res.Changes))
	}
	if after := snapshot(t, k.Root); !reflect.DeepEqual(before, after) {
		t.Fatal("plan changed the host tree")
	}
}

func snapshot(t *testing.T, root string) map[string]string {
	out := map[string]string{}
	err := walkFiles(root, func(p string, b []byte) { out[p] = string(b) })
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func walkFiles(root string, fn func(string, []byte)) error {
	ents, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	for _, e := range ents {
		p := root + "/" + e.Name()
		if e.IsDir() {
			if err := walkFiles(p, fn); err != nil {
				return err
			}
			continue
		}
		b, _ := os.ReadFile(p)
		fn(p, b)
	}
	return nil
}

func sysfsCount(t *testing.T, k *hugetest.FakeKernel, p string) string {
	t.Helper()
	b, err := os.ReadFile(k.Path(p))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

const globalNr2M = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"

func TestHugepagesNeverShrinkUnlessExact(t *testing.T) {
	k := hugetest.NewFakeKernel(t, 2048, []int64{2048}, nil)
	k.SetPool(2048, -1, 1024)
	// the embedded hugepages-2m playbook's 256 is a minimum: a 1024-page pool is left alone
	s := hpStep(t, k, &playbooks.HugepagesSpec{Pages: []playbooks.HugepageReservation{{Size: "2M", Count: 256}}})
	for i := 0; i < 2; i++ {
		res := runOne(t, s, provision.RunApply)
		if res.Status != provision.StatusOK || len(res.Changes) != 0 || len(k.Writes) != 0 {
			t.Fatalf("apply %d: %+v writes %q", i, res, k.Writes)
		}
		if !strings.Contains(strings.Join(res.Notes, "\n"), "2048kB: 1024 pages, at least the 256 wanted; left as is") {
			t.Fatalf("notes %q", res.Notes)
		}
	}
	// exact shrinks, but only down to the pages in use (1024 - 900 free = 124)
	k.Put("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages", "900\n")
	exact := func(n int) *HugepagesStep {
		return hpStep(t, k, &playbooks.HugepagesSpec{Pages: []playbooks.HugepageReservation{{Size: "2M", Count: n, Exact: true}}})
	}
	res := runOne(t, exact(100), provision.RunApply)
	if res.Status != provision.StatusFailed || len(k.Writes) != 0 {
		t.Fatalf("shrink below in-use: %+v writes %q", res, k.Writes)
	}
	for _, w := range []string{"hugepages 2048kB: exact: true asks to shrink to 100 pages but 124 are in use (nr_hugepages 1024, free 900); rig never frees pages in use", "ask for at least 124 pages"} {
		if !strings.Contains(res.Error+" "+res.Fix, w) {
			t.Errorf("%q / %q lacks %q", res.Error, res.Fix, w)
		}
	}
	if got := sysfsCount(t, k, globalNr2M); got != "1024" {
		t.Fatalf("pool changed to %s", got)
	}
	// exact above the in-use count shrinks, and a second apply writes nothing
	s = exact(256)
	if res := runOne(t, s, provision.RunApply); res.Status != provision.StatusChanged || !reflect.DeepEqual(k.Writes, []string{globalNr2M + "=256"}) {
		t.Fatalf("exact shrink: %+v writes %q", res, k.Writes)
	}
	k.ResetWrites()
	if res := runOne(t, s, provision.RunApply); res.Status != provision.StatusOK || len(k.Writes) != 0 {
		t.Fatalf("exact second apply: %+v writes %q", res, k.Writes)
	}
}

func TestHugepagesCountAgainstMemTotal(t *testing.T) {
	// the fake kernel has MemTotal 24576000 kB, MemAvailable 20000000 kB
	k := hugetest.NewFakeKernel(t, 2048, []int64{2048, 1 << 20}, nil)
	cases := []struct {
		size  string
		count int
		want  string
	}{
		{"2M", 100000000, "hugepages 2048kB: count 100000000 x 2M = 195312.5 GiB is more than this machine's memory (MemTotal 23.4 GiB); nothing was written"},
		{"1G", math.MaxInt64, "hugepages 1048576kB: count 9223372036854775807 x 1G overflows"},
		{"2M", math.MaxInt64, "hugepages 2048kB: count 9223372036854775807 x 2M overflows"},
	}
	for _, c := range cases {
		for _, mode := range []provision.RunMode{provision.RunPlan, provision.RunApply} {
			res := runOne(t, hpStep(t, k, &playbooks.HugepagesSpec{Pages: []playbooks.HugepageReservation{{Size: c.size, Count: c.count}}}), mode)
			if res.Status != provision.StatusFailed || !strings.Contains(res.Error, c.want) {
				t.Errorf("%s x %d (%s): %+v", c.size, c.count, mode, res)
			}
		}
	}
	if len(k.Writes) != 0 {
		t.Fatalf("refused counts wrote: %q", k.Writes)
	}
	// two pools that fit alone but not together
	res := runOne(t, hpStep(t, k, &playbooks.HugepagesSpec{Pages: []playbooks.HugepageReservation{{Size: "2M", Count: 8000}, {Size: "1G", Count: 20}}}), provision.RunPlan)
	if res.Status != provision.StatusFailed || !strings.Contains(res.Error, "the pools asked for total 35.6 GiB, more than this machine's memory (MemTotal 23.4 GiB)") {
		t.Fatalf("sum: %+v", res)
	}
	// above MemAvailable but within MemTotal: planned, with a warning
	res = runOne(t, hpStep(t, k, &playbooks.HugepagesSpec{Pages: []playbooks.HugepageReservation{{Size: "2M", Count: 11000}}}), provision.RunPlan)
	if res.Status != provision.StatusWouldChange || !strings.Contains(strings.Join(res.Notes, "\n"), "WARNING: hugepages: growing the pools needs 21.5 GiB but only 19.1 GiB is available (MemAvailable)") {
		t.Fatalf("above MemAvailable: %+v", res)
	}
}

func TestHugepagesRefusesNonEmptyMountDir(t *testing.T) {
	k := hugetest.NewFakeKernel(t, 2048, []int64{2048}, nil)
	k.Put("/mnt/huge/keep.txt", "data\n")
	res := runOne(t, hpStep(t, k, &playbooks.HugepagesSpec{Mounts: []playbooks.HugetlbfsMount{{Path: "/mnt/huge"}}}), provision.RunPlan)
	if res.Status != provision.StatusFailed || !strings.Contains(res.Error, "hugetlbfs /mnt/huge: /mnt/huge is not empty (1 entries, e.g. keep.txt) and not a hugetlbfs mount") ||
		!strings.Contains(res.Fix, "choose an empty or new directory") {
		t.Fatalf("non-empty: %+v", res)
	}
	// an empty directory is fine, and once mounted the files in it are hugetlbfs's
	if err := os.Mkdir(k.Path("/mnt/empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := hpStep(t, k, &playbooks.HugepagesSpec{Mounts: []playbooks.HugetlbfsMount{{Path: "/mnt/empty"}}})
	if res := runOne(t, s, provision.RunApply); res.Status != provision.StatusChanged {
		t.Fatalf("empty dir: %+v", res)
	}
	k.Put("/mnt/empty/rtemap_0", "")
	k.ResetWrites()
	if res := runOne(t, s, provision.RunApply); res.Status != provision.StatusOK || len(k.Writes) != 0 {
		t.Fatalf("mounted, with files: %+v writes %q", res, k.Writes)
	}
}

func TestHugepagesRefusesRealMountUnderFixtureRoot(t *testing.T) {
	k := hugetest.NewFakeKernel(t, 2048, []int64{2048}, nil)
	before := snapshot(t, k.Root)
	spec := &playbooks.HugepagesSpec{Persist: true, Pages: []playbooks.HugepageReservation{{Size: "2M", Count: 8}},
		Mounts: []playbooks.HugetlbfsMount{{Path: "/mnt/huge"}}}
	s, err := NewHugepagesStep(&provision.Env{Host: host.New(k.Root)}, spec)
	if err != nil {
		t.Fatal(err)
	}
	res := runOne(t, s, provision.RunPlan)
	if res.Status != provision.StatusWouldChange || len(res.Changes) != 5 ||
		!strings.Contains(strings.Join(res.Notes, "\n"), "hugetlbfs /mnt/huge: under --root "+k.Root+" the mount would be a real mount on this machine; apply refuses it") {
		t.Fatalf("plan: %+v", res)
	}
	res = runOne(t, s, provision.RunApply)
	if res.Status != provision.StatusFailed || !strings.Contains(res.Error, "hugetlbfs /mnt/huge: refusing to mount hugetlbfs on this machine while reading the host from --root "+k.Root) ||
		!strings.Contains(res.Error, "nothing was written") {
		t.Fatalf("apply: %+v", res)
	}
	if after := snapshot(t, k.Root); !reflect.DeepEqual(before, after) {
		t.Fatal("refused apply changed the fixture tree")
	}
	if _, err := os.Stat(k.Path("/mnt/huge")); !os.IsNotExist(err) {
		t.Fatalf("mount point created: %v", err)
	}
	if b, _ := os.ReadFile("/proc/self/mounts"); strings.Contains(string(b), k.Root) {
		t.Fatalf("a real mount under the fixture root: %s", b)
	}
	// without mounts the fixture's sysfs is the only thing written
	s, err = NewHugepagesStep(&provision.Env{Host: host.New(k.Root)}, &playbooks.HugepagesSpec{Pages: []playbooks.HugepageReservation{{Size: "2M", Count: 0}}})
	if err != nil {
		t.Fatal(err)
	}
	if res := runOne(t, s, provision.RunApply); res.Status != provision.StatusOK {
		t.Fatalf("no mount: %+v", res)
	}
}
