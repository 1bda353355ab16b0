package lab

import (
	"path/filepath"
	"reflect"
	"testing"
)

// The host's own rig up reserves pages while a lab is up: the last lab
// down gives back only what the labs grew and leaves the host's pages;
// what the host's rig down gave back meanwhile is not taken twice.
func TestLastLabDownLeavesHostRigsPages(t *testing.T) {
	sys, rec := t.TempDir(), filepath.Join(t.TempDir(), ".hugepages.json")
	const size = "hugepages-2048kB"
	fakePools(t, sys, map[string][3]int{size: {0, 0, 0}})
	if err := recordPools(sys, rec, "a"); err != nil {
		t.Fatal(err)
	}
	// the lab's rig grows the pool to 64
	fakePools(t, sys, map[string][3]int{size: {64, 64, 0}})
	// the host's rig up: 64 -> 576 (512 of its own)
	before, err := readPools(sys)
	if err != nil {
		t.Fatal(err)
	}
	fakePools(t, sys, map[string][3]int{size: {576, 576, 0}})
	if err := notePools(sys, rec, before); err != nil {
		t.Fatal(err)
	}
	lines, err := restorePools(sys, rec, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := nr(t, sys, size); got != 512 || !reflect.DeepEqual(lines, []string{"hugepages 2048kB: nr_hugepages 576 -> 512, as when lab a came up (and as the host's own rig left it since)"}) {
		t.Fatalf("last lab down: nr_hugepages %d, said %q; want 512 (the host rig's), the lab's 64 given back", got, lines)
	}

	// a host rig down gives its 512 back while a lab is up: the last lab
	// down still gives back the lab's 64, and nothing below 0
	fakePools(t, sys, map[string][3]int{size: {512, 512, 0}})
	if err := recordPools(sys, rec, "b"); err != nil {
		t.Fatal(err)
	}
	fakePools(t, sys, map[string][3]int{size: {576, 576, 0}}) // the lab grew 64
	before, _ = readPools(sys)
	fakePools(t, sys, map[string][3]int{size: {64, 64, 0}}) // host rig down: -512
	if err := notePools(sys, rec, before); err != nil {
		t.Fatal(err)
	}
	if _, err := restorePools(sys, rec, 0); err != nil {
		t.Fatal(err)
	}
	if got := nr(t, sys, size); got != 0 {
		t.Fatalf("after the host's rig down and the last lab down: nr_hugepages %d, want 0", got)
	}
}
