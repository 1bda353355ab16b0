package pcidev

import (
	"errors"
	"io/fs"
	"strings"
	"syscall"
	"testing"
)

// Each errno a sriov_numvfs write returns has its own cause and fix, and
// the error keeps the errno (errors.Is) and names the file and value.
func TestNumVFsProblemByErrno(t *testing.T) {
	st := pfState{bdf: "0000:3b:00.0", netdev: "enp59s0f0np0", total: 8}
	p := "/sys/bus/pci/devices/0000:3b:00.0/sriov_numvfs"
	seen := map[string]bool{}
	for _, tc := range []struct {
		errno      syscall.Errno
		cause, fix string
	}{
		{syscall.ERANGE, "more than the PF's sriov_totalvfs (8)", "ask at most 8 VFs, or raise the firmware's limit (mstconfig -d 0000:3b:00.0 set SRIOV_EN=1 NUM_OF_VFS=12"},
		{syscall.EBUSY, "the PF already has VFs", "write 0 first (echo 0 > " + p + ")"},
		{syscall.ENOMEM, "not enough MMIO resources for SR-IOV", "pci=realloc"},
		{syscall.EINVAL, "SR-IOV is off in the firmware (SRIOV_EN False) or its NUM_OF_VFS is below it", "mstconfig -d 0000:3b:00.0 q SRIOV_EN NUM_OF_VFS"},
		{syscall.ENOENT, "no driver is bound to the PF", "mlx5_core"},
		{syscall.EPERM, "assigned to a VM", "detach the VFs"},
		{syscall.EIO, "the kernel refused", "see dmesg"},
	} {
		err := &fs.PathError{Op: "write", Path: p, Err: tc.errno}
		pr := numVFsProblem(st, p, 12, err)
		if !strings.Contains(pr.Cause(), tc.cause) || !strings.Contains(pr.Fix(), tc.fix) {
			t.Errorf("%v: cause %q fix %q, want %q / %q", tc.errno, pr.Cause(), pr.Fix(), tc.cause, tc.fix)
		}
		if !strings.Contains(pr.Error(), "sriov 0000:3b:00.0 (enp59s0f0np0): write 12 to "+p) || !errors.Is(pr, tc.errno) {
			t.Errorf("%v: %v", tc.errno, pr)
		}
		if seen[pr.Cause()] {
			t.Errorf("%v: the same cause as another errno: %q", tc.errno, pr.Cause())
		}
		seen[pr.Cause()] = true
	}
}
