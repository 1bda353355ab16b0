package bench

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"rig/internal/devargs"
)

// A virtio-user port (the frontend of a vhost-user link, e.g. to an OvS
// dpdkvhostuserclient port) hands its peer one file descriptor per EAL
// memory segment, and vhost-user takes at most 8 (VHOST_MEMORY_MAX_NREGIONS).
// With 2 MiB pages and one file per page, the first mempool is already
// more than that: "update_memory_region(): Too many memory regions".
// --single-file-segments puts each memseg list in one file; --in-memory
// makes those files memfds, so they can be shared and nothing is left in a
// hugetlbfs mount when the process ends (or crashes). memif zero-copy maps
// the mbuf memory the same way. DPDK 22.11 refuses --single-file-segments
// with --huge-unlink (always), and --no-huge memory cannot be shared at all.
// (hardware-formats.md §17.)

// VhostMemoryRegions is VHOST_MEMORY_MAX_NREGIONS.
const VhostMemoryRegions = 8

// sharedMemoryVDev names the first vdev whose peer maps this process's
// mbuf memory by file descriptor ("" when none does), and why.
func sharedMemoryVDev(vdevs []string) (name, why string) {
	for _, v := range vdevs {
		dev := devargs.Device(v)
		switch {
		case strings.HasPrefix(dev, "net_virtio_user"):
			return dev, fmt.Sprintf("a virtio-user port hands its vhost-user peer the EAL memory as file descriptors (at most %d regions)", VhostMemoryRegions)
		case strings.HasPrefix(dev, "net_memif"):
			if _, kv := MemifDevargs(v); kv["zero-copy"] == "yes" {
				return dev, "a memif zero-copy port shares the mbuf memory with its peer by file descriptor"
			}
		}
	}
	return "", ""
}

// sharedMemoryArgs: memfd-backed hugepages, one file per memseg list.
var sharedMemoryArgs = []string{"--in-memory", "--single-file-segments"}

// ChooseMemoryFor is ChooseMemory for c's devices: when a vdev shares its
// memory by fd (sharedMemoryVDev), hugepages in memfds with one file per
// memseg list (--in-memory --single-file-segments, and --huge-dir's page
// size when given), all of the run's needMB taken at EAL start (-m), and an
// error instead of --no-huge when that much hugepage memory is not free.
//
// Why -m: EAL memory that grows after a virtio-user port started makes the
// PMD pause its queues and send the peer a new memory table
// (virtio_user_mem_event_cb). rig's mempool is created after EAL probed the
// port, and OvS connects as soon as the socket exists, so without -m every
// run re-sent its table while OvS had just started polling: 6-9 % of a
// 1M-frame run lost in 1 run in 8, and now and then the peer dropped the
// connection mid-update and DPDK 22.11 aborted (PANIC in eal_intr_thread).
func ChooseMemoryFor(c *Config, freeMB int, mounted bool, needMB int) (Memory, error) {
	dev, why := sharedMemoryVDev(c.VDevs)
	if dev == "" {
		return ChooseMemory(c.NoHuge, c.HugeDir, freeMB, mounted), nil
	}
	const reserve = "reserve 2 MiB hugepages (e.g. rig hugepages set, or echo 512 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages) and run again"
	if freeMB <= 0 {
		return Memory{}, failure("memory for "+dev, fmt.Errorf("no free hugepages"),
			why+"; memory without hugepages (--no-huge) cannot be shared", reserve)
	}
	preset := hasEALFlag(c.EAL, "--socket-mem") || slices.ContainsFunc(c.EAL, func(a string) bool { return strings.HasPrefix(a, "-m") }) // -m N, -mN
	if !preset && needMB > freeMB {
		return Memory{}, failure("memory for "+dev, fmt.Errorf("the run needs %d MiB of hugepages, %d MiB are free", needMB, freeMB),
			why+"; rig takes all of it when EAL starts, so the port's memory table never changes while it runs",
			reserve+", or lower --rxd/--txd/--mbufs")
	}
	var out []string
	for _, a := range sharedMemoryArgs {
		if !hasEALFlag(c.EAL, a) { // given with --eal: not repeated
			out = append(out, a)
		}
	}
	if c.HugeDir != "" {
		out = append(out, "--huge-dir", c.HugeDir) // its page size; the files are memfds
	}
	if !preset {
		out = append(out, "-m", strconv.Itoa(needMB))
	}
	return Memory{Args: out}, nil
}

// hasEALFlag: flag (--x) is among the extra EAL args, alone or as --x=v.
func hasEALFlag(eal []string, flag string) bool {
	for _, a := range eal {
		if a == flag || strings.HasPrefix(a, flag+"=") {
			return true
		}
	}
	return false
}

// checkMemory refuses memory options a fd-sharing vdev cannot work with,
// before EAL starts: --no-huge, and --huge-unlink (always) among --eal.
func (c *Config) checkMemory() error {
	dev, why := sharedMemoryVDev(c.VDevs)
	if dev == "" {
		return nil
	}
	const fix = "drop it: rig gives EAL memfd hugepages with one file per memseg list (--in-memory --single-file-segments) for this port"
	if c.NoHuge || hasEALFlag(c.EAL, "--no-huge") {
		return failure("--no-huge", fmt.Errorf("not possible with %s", dev), why+"; memory without hugepages cannot be shared",
			"drop --no-huge and reserve 2 MiB hugepages: rig gives EAL memfd hugepages with one file per memseg list (--in-memory --single-file-segments)")
	}
	for _, a := range c.EAL {
		if a == "--huge-unlink" || a == "--huge-unlink=always" {
			return failure("--eal "+a, fmt.Errorf("not possible with %s", dev), why+"; DPDK 22.11 refuses --single-file-segments with --huge-unlink, and an unlinked file cannot be reopened to share it", fix)
		}
		if a == "--legacy-mem" {
			return failure("--eal "+a, fmt.Errorf("not possible with %s", dev), why+"; --legacy-mem with --in-memory keeps one memory region per page", fix)
		}
	}
	return nil
}
