package lab

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// A rig run on the host itself (not inside a lab) that changes the
// hugepage pools while labs are up moves the labs' pool record by as
// much: the pages the host's own rig up reserved are the host's (its rig
// down gives them back), never the labs', so the last lab down leaves
// them; and what the host's rig down gave back is not taken again.

// HostPools is every pool's size before a rig run that may change them,
// for NoteHostPools; nil when no lab is up (no pool record) or this
// process runs inside a lab (its mount namespace is not PID 1's: what a
// lab's own rig grows, the last lab down gives back).
func HostPools() map[string]int {
	if _, err := os.Lstat(poolRecordPath()); err != nil {
		return nil
	}
	self, ok1 := statNS("/proc/self/ns/mnt")
	init, ok2 := statNS("/proc/1/ns/mnt")
	if !ok1 || !ok2 || self != init {
		return nil
	}
	p, err := readPools(HugepagesSysDir)
	if err != nil {
		return nil
	}
	return p
}

// NoteHostPools moves the labs' pool record by what the run changed
// since before (HostPools' answer; nil: nothing to do).
func NoteHostPools(before map[string]int) error {
	if before == nil {
		return nil
	}
	unlock, err := lockState()
	if err != nil {
		return err
	}
	defer unlock()
	return notePools(HugepagesSysDir, poolRecordPath(), before)
}

func notePools(sysDir, recPath string, before map[string]int) error {
	b, err := os.ReadFile(recPath)
	if err != nil {
		return nil // the last lab went down meanwhile
	}
	var rec poolRecord
	if err := json.Unmarshal(b, &rec); err != nil || rec.SchemaVersion != poolRecordSchema {
		return nil // restorePools says it is damaged
	}
	after, err := readPools(sysDir)
	if err != nil {
		return fmt.Errorf("lab: note the host's hugepage pools: %w", err)
	}
	changed := false
	for size, was := range before {
		now, ok := after[size]
		if _, recorded := rec.Pools[size]; !ok || !recorded || now == was {
			continue
		}
		rec.Pools[size], changed = max(0, rec.Pools[size]+now-was), true
		rec.Host = true
	}
	if !changed {
		return nil
	}
	out, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(recPath), ".hugepages.*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(out, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), recPath)
}
