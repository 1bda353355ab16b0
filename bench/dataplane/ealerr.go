package dataplane

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"

	"rig/bench"

	"golang.org/x/sys/unix"
)

// explainEALInit names the cause of a failed rte_eal_init. EAL reports a
// hugepage file it may not create as "Cannot allocate memory": as non-root,
// with hugepages chosen, ENOMEM/EACCES/EPERM means permission denied.
// unwritable lists the hugetlbfs mounts EAL could use that this user cannot
// write.
func explainEALInit(err error, mem bench.Memory, euid int, unwritable []string) error {
	usesHuge := !slices.Contains(mem.Args, "--no-huge") && !slices.Contains(mem.Args, "--in-memory")
	denied := errors.Is(err, syscall.ENOMEM) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM)
	if euid != 0 && usesHuge && denied {
		where := "the hugetlbfs mount"
		if len(unwritable) > 0 {
			where = "hugetlbfs mount " + strings.Join(unwritable, ", ")
		}
		return bench.NewError("EAL", err,
			fmt.Sprintf("permission denied, not memory: rig runs as uid %d and cannot create hugepage files in %s; hugepages need root, or a hugetlbfs mount this user may write", euid, where),
			fmt.Sprintf("run as root, e.g. sudo rig bench ...; or mount -t hugetlbfs -o uid=%d nodev DIR and pass --huge-dir DIR; or --no-huge", euid))
	}
	if errors.Is(err, syscall.ENODEV) {
		return bench.NewError("EAL", err, "EAL cannot parse or probe a --vdev/--port device",
			"check the device names: a --vdev name starts with its driver, e.g. net_ring0, net_memif0, net_af_packet0, net_tap0, net_null0; a --port PCI address must be bound to a DPDK driver")
	}
	if euid != 0 && (errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM)) {
		return bench.NewError("EAL", err, fmt.Sprintf("permission denied: rig runs as uid %d", euid), "run as root, e.g. sudo rig bench ...")
	}
	return bench.NewError("EAL", err, "", "check --vdev/--port devargs and --eal arguments, free hugepages, or use --no-huge")
}

// unwritableHugeDirs lists the hugetlbfs dirs EAL may use (--huge-dir, or
// every mount) that this process cannot create files in.
func unwritableHugeDirs(hugeDir string, mounts []string) []string {
	dirs := []string{hugeDir}
	if hugeDir == "" {
		dirs = mounts
	}
	var out []string
	for _, d := range dirs {
		if err := unix.Access(d, unix.W_OK|unix.X_OK); err != nil {
			out = append(out, d)
		}
	}
	return out
}
