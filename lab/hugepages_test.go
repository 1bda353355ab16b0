package lab

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakePools writes a sysfs hugepages dir: size -> {nr, free, resv}.
func fakePools(t *testing.T, dir string, pools map[string][3]int) {
	t.Helper()
	for size, v := range pools {
		d := filepath.Join(dir, size)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for i, f := range []string{"nr_hugepages", "free_hugepages", "resv_hugepages"} {
			if err := os.WriteFile(filepath.Join(d, f), []byte(strconv.Itoa(v[i])+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func nr(t *testing.T, dir, size string) int {
	t.Helper()
	n, err := readCount(filepath.Join(dir, size, "nr_hugepages"))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// The earliest record wins; the restore shrinks only grown pools, never
// below the pages in use (nr - free + resv), says so, and drops the record.
func TestPoolRecordAndRestore(t *testing.T) {
	sys, rec := t.TempDir(), filepath.Join(t.TempDir(), ".hugepages.json")
	fakePools(t, sys, map[string][3]int{"hugepages-2048kB": {100, 100, 0}, "hugepages-1048576kB": {2, 2, 0}})
	if err := recordPools(sys, rec, "a"); err != nil {
		t.Fatal(err)
	}
	// a second lab comes up after the first grew the pool: the record stays
	fakePools(t, sys, map[string][3]int{"hugepages-2048kB": {400, 300, 0}})
	if err := recordPools(sys, rec, "b"); err != nil {
		t.Fatal(err)
	}
	// 2 MiB pool grew to 1124 with 40 pages in use and 4 reserved; the 1 GiB pool shrank to 1
	fakePools(t, sys, map[string][3]int{"hugepages-2048kB": {1124, 1088, 4}, "hugepages-1048576kB": {1, 1, 0}})
	lines, err := restorePools(sys, rec, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"hugepages 2048kB: nr_hugepages 1124 -> 100, as when lab a came up"}
	if !reflect.DeepEqual(lines, want) {
		t.Fatalf("restore said %q, want %q", lines, want)
	}
	if nr(t, sys, "hugepages-2048kB") != 100 || nr(t, sys, "hugepages-1048576kB") != 1 {
		t.Fatalf("pools after restore: 2M %d (want 100), 1G %d (want 1, left alone)", nr(t, sys, "hugepages-2048kB"), nr(t, sys, "hugepages-1048576kB"))
	}
	if _, err := os.Stat(rec); !os.IsNotExist(err) {
		t.Fatalf("record still there after the restore: %v", err)
	}
	// no record: nothing to do
	if lines, err := restorePools(sys, rec, 0); lines != nil || err != nil {
		t.Fatalf("restore without a record = %q, %v", lines, err)
	}
}

func TestPoolRestoreNeverBelowInUse(t *testing.T) {
	sys, rec := t.TempDir(), filepath.Join(t.TempDir(), ".hugepages.json")
	fakePools(t, sys, map[string][3]int{"hugepages-2048kB": {0, 0, 0}})
	if err := recordPools(sys, rec, "a"); err != nil {
		t.Fatal(err)
	}
	fakePools(t, sys, map[string][3]int{"hugepages-2048kB": {512, 500, 8}})
	lines, err := restorePools(sys, rec, 0)
	if err != nil || len(lines) != 1 || !strings.Contains(lines[0], "512 -> 20 (0 when lab a came up; 20 in use)") {
		t.Fatalf("restore = %q, %v", lines, err)
	}
	if n := nr(t, sys, "hugepages-2048kB"); n != 20 {
		t.Fatalf("nr_hugepages %d, want 20 (12 used + 8 reserved)", n)
	}
	if err := recordPools(sys, rec, "b"); err != nil {
		t.Fatal(err)
	}
	fakePools(t, sys, map[string][3]int{"hugepages-2048kB": {64, 0, 0}})
	lines, _ = restorePools(sys, rec, 0)
	if len(lines) != 1 || !strings.Contains(lines[0], "left at 64 (20 when lab b came up): all 64 in use") || nr(t, sys, "hugepages-2048kB") != 64 {
		t.Fatalf("all in use: restore = %q, nr %d", lines, nr(t, sys, "hugepages-2048kB"))
	}
}

func TestPoolRestoreDamagedRecord(t *testing.T) {
	sys, rec := t.TempDir(), filepath.Join(t.TempDir(), ".hugepages.json")
	fakePools(t, sys, map[string][3]int{"hugepages-2048kB": {64, 64, 0}})
	os.WriteFile(rec, []byte("{"), 0o600)
	if _, err := restorePools(sys, rec, 0); err == nil || !strings.Contains(err.Error(), "left as they are") || nr(t, sys, "hugepages-2048kB") != 64 {
		t.Fatalf("damaged record: err %v, nr %d", err, nr(t, sys, "hugepages-2048kB"))
	}
}

// Pages still in use when the last lab goes down (its OvS exiting) are
// waited for: released within the settle time, the pool goes back to its
// size when the lab came up.
func TestPoolRestoreWaitsForPagesInUse(t *testing.T) {
	sys, rec := t.TempDir(), filepath.Join(t.TempDir(), ".hugepages.json")
	fakePools(t, sys, map[string][3]int{"hugepages-2048kB": {0, 0, 0}})
	if err := recordPools(sys, rec, "a"); err != nil {
		t.Fatal(err)
	}
	fakePools(t, sys, map[string][3]int{"hugepages-2048kB": {1024, 512, 0}})
	go func() { // the exited OvS's 512 back: free_hugepages replaced at once, as the kernel's reads never tear
		time.Sleep(200 * time.Millisecond)
		p := filepath.Join(sys, "hugepages-2048kB", "free_hugepages")
		if os.WriteFile(p+".new", []byte("1024\n"), 0o644) == nil {
			_ = os.Rename(p+".new", p)
		}
	}()
	lines, err := restorePools(sys, rec, 5*time.Second)
	if err != nil || len(lines) != 1 || !strings.Contains(lines[0], "1024 -> 0, as when lab a came up") || nr(t, sys, "hugepages-2048kB") != 0 {
		t.Fatalf("restore = %q, %v, nr %d", lines, err, nr(t, sys, "hugepages-2048kB"))
	}
}
