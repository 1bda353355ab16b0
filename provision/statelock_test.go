package provision

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Two rig runs on one state file (whatever --lock-file each holds) each
// update it: every record each added is there at the end (the state
// file's own lock serialises the read-modify-write), and the lock file is
// rig's, 0600.
func TestUpdateStateConcurrentKeepsEveryRecord(t *testing.T) {
	sf := StateStore{Path: filepath.Join(t.TempDir(), "state.json")}
	const writers, each = 6, 15
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				bdf := fmt.Sprintf("0000:%02x:00.%d", w, i)
				errs <- UpdateState(sf, func(st *RigState) { st.SRIOV = append(st.SRIOV, SRIOVRecord{BDF: bdf, NumVFs: i}) })
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	st, err := LoadState(sf)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.SRIOV) != writers*each {
		t.Fatalf("%d records of %d survived concurrent updates", len(st.SRIOV), writers*each)
	}
	fi, err := os.Stat(sf.Path + ".lock")
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state lock file: %v %v, want mode 0600", fi, err)
	}
}

// A lock file another user could have planted (group/other-readable or a
// symbolic link) is refused with the fix.
func TestStateLockRefusesUntrusted(t *testing.T) {
	dir := t.TempDir()
	sf := StateStore{Path: filepath.Join(dir, "state.json")}
	if err := os.Symlink("/etc/passwd", sf.Path+".lock"); err != nil {
		t.Fatal(err)
	}
	err := UpdateState(sf, func(st *RigState) {})
	if err == nil || !strings.Contains(err.Error(), "symbolic link") || !strings.Contains(err.Error(), "rm "+sf.Path+".lock") {
		t.Fatalf("symlinked state lock: %v", err)
	}
	if _, err := os.Stat(sf.Path); err == nil {
		t.Error("the state file was written past a refused lock")
	}
}
