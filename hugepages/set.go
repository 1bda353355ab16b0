package hugepages

import (
	"errors"
	"fmt"
	"strconv"
)

// GrantError says the kernel granted a different number of pages than asked.
type GrantError struct {
	SizeKB   int64
	Node     int
	Wanted   int
	Granted  int
	Previous int
	Restored bool
}

func (e *GrantError) Error() string {
	restored := fmt.Sprintf("restored the previous %d", e.Previous)
	if !e.Restored {
		restored = fmt.Sprintf("could not restore the previous %d", e.Previous)
	}
	if e.Granted > e.Wanted {
		return fmt.Sprintf("hugepages: %s: asked to shrink to %d pages, kernel still holds %d (pages in use); %s",
			PoolName(e.SizeKB, e.Node), e.Wanted, e.Granted, restored)
	}
	return fmt.Sprintf("hugepages: %s: kernel granted %d of %d pages wanted; %s",
		PoolName(e.SizeKB, e.Node), e.Granted, e.Wanted, restored)
}

// Cause is the usual reason for a short grant.
func (e *GrantError) Cause() string {
	if e.Granted > e.Wanted {
		return "pages are mapped by a running process (DPDK app, ovs-vswitchd) or held by stale rtemap_* files"
	}
	if e.SizeKB >= 1<<20 {
		return "1 GiB pages need physically contiguous 1 GiB blocks; after boot memory is too fragmented (or too small)"
	}
	return "not enough free, unfragmented memory for that many pages"
}

// Fix is the usual fix for a short grant.
func (e *GrantError) Fix() string {
	if e.Granted > e.Wanted {
		return "stop the process using them (`rig hugepages show` lists leftovers of dead DPDK processes, `rig hugepages clean` removes them), then retry"
	}
	node := ""
	if e.Node != AllNodes {
		node = fmt.Sprintf(" (per node: hugepages=%d:%d)", e.Node, e.Wanted)
	}
	size := FormatSize(e.SizeKB)
	if e.SizeKB >= 1<<20 {
		return fmt.Sprintf("reserve them at boot: add `default_hugepagesz=%s hugepagesz=%s hugepages=%d`%s to the kernel command line and reboot",
			size, size, e.Wanted, node)
	}
	return fmt.Sprintf("free memory or compact it (`echo 1 > /proc/sys/vm/compact_memory`) and retry, or reserve at boot with `hugepagesz=%s hugepages=%d`%s",
		size, e.Wanted, node)
}

// SetPages writes nr_hugepages for a size and node, reads it back, and when
// the kernel granted a different number restores the previous value and
// returns a *GrantError. It returns the previous count.
func SetPages(fs FS, sizeKB int64, node int, want int) (prev int, err error) {
	p := CountPath(sizeKB, node)
	prev, err = readInt(fs, p)
	if err != nil {
		return 0, fmt.Errorf("hugepages: %s: %w", PoolName(sizeKB, node), err)
	}
	if err := fs.WriteFile(p, []byte(strconv.Itoa(want))); err != nil {
		return prev, fmt.Errorf("hugepages: %s: write %s=%d: %w", PoolName(sizeKB, node), p, want, err)
	}
	got, err := readInt(fs, p)
	if err != nil {
		return prev, fmt.Errorf("hugepages: %s: read back: %w", PoolName(sizeKB, node), err)
	}
	if got == want {
		return prev, nil
	}
	ge := &GrantError{SizeKB: sizeKB, Node: node, Wanted: want, Granted: got, Previous: prev}
	if werr := fs.WriteFile(p, []byte(strconv.Itoa(prev))); werr == nil {
		ge.Restored = true
	} else {
		return prev, errors.Join(ge, fmt.Errorf("hugepages: %s: restore %d: %w", PoolName(sizeKB, node), prev, werr))
	}
	return prev, ge
}
