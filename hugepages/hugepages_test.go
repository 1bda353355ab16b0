package hugepages_test

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"rig/hugepages"
	"rig/internal/testutil/hugetest"
)

// A /proc/meminfo from a Debian 12 VM with 512 default-size pages.
const meminfoSample = `MemTotal:       24558588 kB
MemFree:        22361232 kB
MemAvailable:   22842244 kB
AnonHugePages:         0 kB
ShmemHugePages:        0 kB
FileHugePages:         0 kB
HugePages_Total:     512
HugePages_Free:      500
HugePages_Rsvd:        3
HugePages_Surp:        1
Hugepagesize:       2048 kB
Hugetlb:         1048576 kB
`

func TestParseMeminfo(t *testing.T) {
	m, err := hugepages.ParseMeminfo([]byte(meminfoSample))
	if err != nil {
		t.Fatal(err)
	}
	want := hugepages.Meminfo{Total: 512, Free: 500, Reserved: 3, Surplus: 1, DefaultSizeKB: 2048, HugetlbKB: 1048576,
		MemTotalKB: 24558588, MemAvailableKB: 22842244}
	if m != want {
		t.Fatalf("got %+v, want %+v", m, want)
	}
	if _, err := hugepages.ParseMeminfo([]byte("MemTotal: 1 kB\n")); err == nil {
		t.Fatal("meminfo without hugepage lines: want error")
	}
	if _, err := hugepages.ParseMeminfo([]byte("HugePages_Total: x\nHugePages_Free: 0\nHugepagesize: 2048 kB\n")); err == nil ||
		!strings.Contains(err.Error(), "HugePages_Total") {
		t.Fatalf("bad number: want error naming HugePages_Total, got %v", err)
	}
}

func TestParseMounts(t *testing.T) {
	// Lines as the kernel prints them: 1 GiB as pagesize=1024M, space as \040.
	text := `sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0
hugetlbfs /dev/hugepages hugetlbfs rw,relatime,pagesize=2M 0 0
nodev /mnt/huge\0401g hugetlbfs rw,relatime,pagesize=1024M 0 0
none /mnt/default hugetlbfs rw,relatime 0 0
`
	got, err := hugepages.ParseMounts([]byte(text), 2048)
	if err != nil {
		t.Fatal(err)
	}
	want := []hugepages.Mount{
		{Path: "/dev/hugepages", PageSizeKB: 2048, Options: "rw,relatime,pagesize=2M"},
		{Path: "/mnt/huge 1g", PageSizeKB: 1 << 20, Options: "rw,relatime,pagesize=1024M"},
		{Path: "/mnt/default", PageSizeKB: 2048, Options: "rw,relatime"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if _, ok := hugepages.OtherMountAt([]byte(text), "/sys"); !ok {
		t.Fatal("OtherMountAt(/sys): want sysfs")
	}
	if _, ok := hugepages.OtherMountAt([]byte(text), "/dev/hugepages"); ok {
		t.Fatal("OtherMountAt(/dev/hugepages): hugetlbfs is not 'other'")
	}
}

func TestReadStatePerNode(t *testing.T) {
	k := hugetest.NewFakeKernel(t, 2048, []int64{2048, 1 << 20}, []int{0, 1})
	k.SetPool(2048, 1, 8)
	k.SetPool(1<<20, 0, 2)
	st, err := hugepages.ReadState(k)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(st.Sizes, []int64{2048, 1 << 20}) || !reflect.DeepEqual(st.Nodes, []int{0, 1}) {
		t.Fatalf("sizes %v nodes %v", st.Sizes, st.Nodes)
	}
	checks := []struct {
		kb    int64
		node  int
		total int
	}{{2048, -1, 8}, {2048, 0, 0}, {2048, 1, 8}, {1 << 20, -1, 2}, {1 << 20, 0, 2}, {1 << 20, 1, 0}}
	for _, c := range checks {
		p, ok := st.Pool(c.kb, c.node)
		if !ok || p.Total != c.total {
			t.Errorf("pool %s: got %+v (found %v), want total %d", hugepages.PoolName(c.kb, c.node), p, ok, c.total)
		}
	}
	if err := st.VerifyMeminfo(); err != nil {
		t.Fatalf("consistent fake: %v", err)
	}
	k.Put("/proc/meminfo", strings.Replace(meminfoSample, "HugePages_Total:     512", "HugePages_Total:       7", 1))
	st, _ = hugepages.ReadState(k)
	if err := st.VerifyMeminfo(); err == nil || !strings.Contains(err.Error(), "HugePages_Total=7") {
		t.Fatalf("meminfo mismatch: want error naming HugePages_Total=7, got %v", err)
	}
}

func TestSetPagesPartialGrantRestores(t *testing.T) {
	k := hugetest.NewFakeKernel(t, 2048, []int64{2048, 1 << 20}, []int{0})
	k.Capacity[1<<20] = 2
	k.SetPool(1<<20, 0, 1)
	prev, err := hugepages.SetPages(k, 1<<20, 0, 4)
	var ge *hugepages.GrantError
	if !errors.As(err, &ge) {
		t.Fatalf("want GrantError, got %v", err)
	}
	if prev != 1 || ge.Wanted != 4 || ge.Granted != 2 || ge.Previous != 1 || !ge.Restored {
		t.Fatalf("got prev=%d %+v", prev, ge)
	}
	msg := ge.Error()
	for _, s := range []string{"node0 1048576kB", "granted 2 of 4", "restored the previous 1"} {
		if !strings.Contains(msg, s) {
			t.Errorf("error %q lacks %q", msg, s)
		}
	}
	if fix := ge.Fix(); !strings.Contains(fix, "hugepagesz=1G hugepages=4") {
		t.Errorf("fix %q: want the boot-time 1G hint", fix)
	}
	p, _ := hugepages.ReadPool(k, 1<<20, 0)
	if p.Total != 1 {
		t.Fatalf("after rollback node0 1G = %d, want 1", p.Total)
	}
	want := []string{
		"/sys/devices/system/node/node0/hugepages/hugepages-1048576kB/nr_hugepages=4",
		"/sys/devices/system/node/node0/hugepages/hugepages-1048576kB/nr_hugepages=1",
	}
	if !reflect.DeepEqual(k.Writes, want) {
		t.Fatalf("writes %q, want %q", k.Writes, want)
	}
}

func TestFindStale(t *testing.T) {
	k := hugetest.NewFakeKernel(t, 2048, []int64{2048}, []int{0})
	k.Put("/dev/hugepages/rtemap_0", strings.Repeat("x", 2048*1024))
	k.Put("/dev/hugepages/rtemap_1", "")
	k.Put("/dev/hugepages/ovs_1map_3", "")
	k.Put("/dev/hugepages/notdpdk", "")
	// pid 42 maps rtemap_1; pid 43 holds ovs_1map_3 open
	k.Put("/proc/42/maps", "7f0000000000-7f0000200000 rw-s 00000000 00:2c 12 /dev/hugepages/rtemap_1\n")
	if err := os.MkdirAll(k.Path("/proc/43/fd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/hugepages/ovs_1map_3", k.Path("/proc/43/fd/7")); err != nil {
		t.Fatal(err)
	}
	got := hugepages.FindStale(k, []hugepages.Mount{{Path: "/dev/hugepages", PageSizeKB: 2048}})
	want := []hugepages.StaleFile{{Path: "/dev/hugepages/rtemap_0", PageSizeKB: 2048, Pages: 1}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestMountUnitName(t *testing.T) {
	for in, want := range map[string]string{
		"/dev/hugepages":  "dev-hugepages.mount",
		"/mnt/huge-1G":    `mnt-huge\x2d1G.mount`,
		"/mnt/huge_1G/":   "mnt-huge_1G.mount",
		"/srv/.hidden/hp": `srv-\x2ehidden-hp.mount`,
	} {
		if got := hugepages.MountUnitName(in); got != want {
			t.Errorf("MountUnitName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPersistFiles(t *testing.T) {
	files := hugepages.PersistFiles(
		[]hugepages.Reservation{{SizeKB: 1 << 20, Node: 0, Count: 4}, {SizeKB: 2048, Node: -1, Count: 512}},
		[]hugepages.WantMount{{Path: "/mnt/huge1G", PageSizeKB: 1 << 20}})
	if len(files) != 2 || files[0].Path != hugepages.TmpfilesPath || files[1].Path != "/etc/systemd/system/mnt-huge1G.mount" {
		t.Fatalf("files %+v", files)
	}
	for _, line := range []string{
		"w /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages - - - - 512\n",
		"w /sys/devices/system/node/node0/hugepages/hugepages-1048576kB/nr_hugepages - - - - 4\n",
	} {
		if !strings.Contains(files[0].Content, line) {
			t.Errorf("tmpfiles lacks %q:\n%s", line, files[0].Content)
		}
	}
	if strings.Index(files[0].Content, "2048kB") > strings.Index(files[0].Content, "1048576kB") {
		t.Error("tmpfiles lines not sorted by size")
	}
	for _, s := range []string{"Where=/mnt/huge1G", "Type=hugetlbfs", "Options=pagesize=1G", "WantedBy=sysinit.target"} {
		if !strings.Contains(files[1].Content, s) {
			t.Errorf("mount unit lacks %q", s)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for kb, want := range map[int64]string{2048: "2M", 1 << 20: "1G", 64: "64K", 16384: "16M"} {
		if got := hugepages.FormatSize(kb); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", kb, got, want)
		}
	}
}

func TestParsePageSize(t *testing.T) {
	ok := map[string]int64{"2M": 2048, "2MB": 2048, "2048kB": 2048, "2048K": 2048, "1G": 1 << 20, "1GB": 1 << 20, "1Gi": 1 << 20, "2097152": 2048, "1024M": 1 << 20}
	for in, want := range ok {
		if got, err := hugepages.ParsePageSize(in); err != nil || got != want {
			t.Errorf("ParsePageSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "M", "-2M", "3M", "2X", "1000", "99999999999G"} {
		if _, err := hugepages.ParsePageSize(bad); err == nil {
			t.Errorf("ParsePageSize(%q): want error", bad)
		}
	}
}

// racyMeminfo is a fake kernel whose /proc/meminfo disagrees with sysfs
// (one page fewer free, as when a process took one between the reads)
// for its first stale readings.
type racyMeminfo struct {
	*hugetest.FakeKernel
	stale, reads int
}

func (r *racyMeminfo) ReadFile(p string) ([]byte, error) {
	b, err := r.FakeKernel.ReadFile(p)
	if p != "/proc/meminfo" || err != nil {
		return b, err
	}
	r.reads++
	if r.reads <= r.stale {
		b = []byte(strings.Replace(string(b), "HugePages_Free:        8", "HugePages_Free:        7", 1))
	}
	return b, nil
}

// TestVerifyMeminfoSettled: a mismatch that goes away when read again is
// a pool that changed under rig, not a wrong root; one that stays is an
// error with the last reading's figures, after exactly tries readings.
func TestVerifyMeminfoSettled(t *testing.T) {
	for _, c := range []struct {
		stale, wantReads int
		wantErr          string
	}{{0, 1, ""}, {1, 2, ""}, {2, 3, ""}, {3, 3, "HugePages_Total=8 HugePages_Free=7"}} {
		k := &racyMeminfo{FakeKernel: hugetest.NewFakeKernel(t, 2048, []int64{2048}, []int{0}), stale: c.stale}
		k.SetPool(2048, hugepages.AllNodes, 8)
		k.reads = 0
		st, err := hugepages.ReadState(k)
		if err != nil {
			t.Fatal(err)
		}
		err = hugepages.VerifyMeminfoSettled(k, st, 3, 0)
		if (c.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.wantErr)) || k.reads != c.wantReads {
			t.Errorf("%d stale readings: %v after %d readings, want %q after %d", c.stale, err, k.reads, c.wantErr, c.wantReads)
		}
	}
}
