package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Hugepages are not namespaced: rig's hugepages step inside a lab grows
// the host's pool. The rule that gives it back:
//
//   - `rig lab up`, when StateRoot has no pool record (no lab is up, or the
//     labs up predate the record), notes every hugepage size's
//     nr_hugepages in StateRoot/.hugepages.json; a second lab keeps that
//     earliest record;
//   - `rig lab down` of the last lab, after the lab's processes (OvS, DPDK)
//     ended and its hugetlbfs mounts went with its mount namespace, shrinks
//     each pool that is bigger than recorded back to the recorded size,
//     never below the pages still in use (nr_hugepages - free + reserved),
//     says what it did, and removes the record; a pool not bigger than
//     recorded is left alone.
//
// "Bigger than when the first lab came up" is how rig tells that a lab's
// rig grew the pool: a pool grown on the host meanwhile by something else,
// and not in use when the last lab goes down, is shrunk too.

// HugepagesSysDir is the kernel's hugepage pools.
const HugepagesSysDir = "/sys/kernel/mm/hugepages"

const poolRecordSchema = "rig.lab.hugepages/v1"

func poolRecordPath() string { return filepath.Join(StateRoot, ".hugepages.json") }

// poolRecord is the pools' sizes when the first lab came up.
type poolRecord struct {
	SchemaVersion string         `json:"schemaVersion"`
	Lab           string         `json:"lab"`   // the lab whose up wrote it
	Pools         map[string]int `json:"pools"` // hugepages-2048kB -> nr_hugepages
	// Host: a rig run on the host moved Pools by what it changed
	// (NoteHostPools), so they are not quite the first lab's sizes.
	Host bool `json:"host,omitempty"`
}

// readPools returns every size's nr_hugepages under sysDir.
func readPools(sysDir string) (map[string]int, error) {
	ents, err := os.ReadDir(sysDir)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]int{}, nil // no hugepage support: nothing to give back
	}
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "hugepages-") {
			continue
		}
		n, err := readCount(filepath.Join(sysDir, e.Name(), "nr_hugepages"))
		if err != nil {
			return nil, err
		}
		out[e.Name()] = n
	}
	return out, nil
}

func readCount(p string) (int, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("%s: %w", p, err)
	}
	return n, nil
}

// recordPools writes the pool record unless one exists (the earliest wins).
func recordPools(sysDir, recPath, lab string) error {
	if _, err := os.Lstat(recPath); err == nil {
		return nil
	}
	pools, err := readPools(sysDir)
	if err != nil {
		return fmt.Errorf("lab %s: note the hugepage pools: %w", lab, err)
	}
	b, err := json.MarshalIndent(poolRecord{SchemaVersion: poolRecordSchema, Lab: lab, Pools: pools}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(recPath, append(b, '\n'), 0o600)
}

// poolSettle is how long lab down waits for the pages of the processes it
// just ended to come back before it gives back a pool: their exit releases
// them a moment later, and a pool shrunk while they are still in use keeps
// them (a bf2-dpu lab's 512 pages were left so once: "0 when lab came up;
// 512 in use").
const poolSettle = 5 * time.Second

// restorePools gives back what the labs grew (see the rule above), waiting
// up to settle for pages in use above the recorded count to be released;
// it returns one line per pool it looked at, for people.
func restorePools(sysDir, recPath string, settle time.Duration) ([]string, error) {
	b, err := os.ReadFile(recPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var rec poolRecord
	if err := json.Unmarshal(b, &rec); err != nil || rec.SchemaVersion != poolRecordSchema {
		_ = os.Remove(recPath)
		return nil, fmt.Errorf("lab: %s is damaged (%v); hugepage pools left as they are: `rig hugepages set --exact` shrinks one", recPath, err)
	}
	var out []string
	var errs []error
	for _, size := range slices.Sorted(maps.Keys(rec.Pools)) {
		line, err := restorePool(filepath.Join(sysDir, size), size, rec.Pools[size], rec.Lab, settle)
		if rec.Host && strings.HasSuffix(line, ", as when lab "+rec.Lab+" came up") {
			line += " (and as the host's own rig left it since)"
		}
		if line != "" {
			out = append(out, line)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.Remove(recPath); err != nil {
		errs = append(errs, err)
	}
	return out, errors.Join(errs...)
}

// restorePool shrinks one pool to was, never below the pages in use
// (waiting up to settle for those above was to be released).
func restorePool(dir, size string, was int, firstLab string, settle time.Duration) (string, error) {
	var cur, used int
	for deadline := time.Now().Add(settle); ; time.Sleep(50 * time.Millisecond) {
		var v [3]int
		for i, f := range []string{"nr_hugepages", "free_hugepages", "resv_hugepages"} {
			n, err := readCount(filepath.Join(dir, f))
			if err != nil {
				return "", fmt.Errorf("lab: hugepages %s: %w", size, err)
			}
			v[i] = n
		}
		cur, used = v[0], v[0]-v[1]+v[2]
		if used <= was || !time.Now().Before(deadline) {
			break
		}
	}
	size = strings.TrimPrefix(size, "hugepages-")
	if cur <= was {
		return "", nil
	}
	target := max(was, used)
	if target == cur {
		return fmt.Sprintf("hugepages %s: left at %d (%d when lab %s came up): all %d in use", size, cur, was, firstLab, used), nil
	}
	p := filepath.Join(dir, "nr_hugepages")
	if err := os.WriteFile(p, []byte(strconv.Itoa(target)), 0); err != nil {
		return "", fmt.Errorf("lab: hugepages %s: give back %d pages (nr_hugepages %d -> %d): %w", size, cur-target, cur, target, err)
	}
	got, err := readCount(p)
	if err != nil {
		return "", err
	}
	line := fmt.Sprintf("hugepages %s: nr_hugepages %d -> %d, as when lab %s came up", size, cur, got, firstLab)
	if target > was {
		line = fmt.Sprintf("hugepages %s: nr_hugepages %d -> %d (%d when lab %s came up; %d in use)", size, cur, got, was, firstLab, used)
	}
	return line, nil
}
