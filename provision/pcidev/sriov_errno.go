package pcidev

import (
	"errors"
	"fmt"
	"syscall"

	"rig/provision"
)

// numVFsProblem explains a refused write of n to a PF's sriov_numvfs by
// the errno the kernel returned (drivers/pci/iov.c sriov_numvfs_store, then
// the PF driver's sriov_configure and pci_enable_sriov): each has its own
// cause and fix.
func numVFsProblem(st pfState, p string, n int, err error) *provision.Problem {
	pr := &provision.Problem{Object: st.object(), Err: fmt.Errorf("write %d to %s: %w", n, p, err)}
	fwq := "mstconfig -d " + st.bdf + " q SRIOV_EN NUM_OF_VFS"
	switch {
	case errors.Is(err, syscall.ERANGE):
		pr.CauseText = fmt.Sprintf("%d is more than the PF's sriov_totalvfs (%d): the firmware offers no more VFs", n, st.total)
		pr.FixText = fmt.Sprintf("ask at most %d VFs, or raise the firmware's limit (mstconfig -d %s set SRIOV_EN=1 NUM_OF_VFS=%d, then a firmware reset or power cycle)", st.total, st.bdf, n)
	case errors.Is(err, syscall.EBUSY):
		pr.CauseText = "the PF already has VFs: the kernel changes a non-zero count only from 0 (another tool set VFs since rig read the count), or the PF driver is busy"
		pr.FixText = fmt.Sprintf("release the VFs (stop VMs or DPDK using them), write 0 first (echo 0 > %s), then `rig up` again", p)
	case errors.Is(err, syscall.ENOMEM):
		pr.CauseText = "the kernel could not find resources for the VFs: the BIOS assigned no (or too little) MMIO space for the VF BARs (dmesg: \"not enough MMIO resources for SR-IOV\"), or no bus numbers or memory"
		pr.FixText = "enable SR-IOV (and Above 4G Decoding) in the BIOS/UEFI setup, or boot with pci=realloc; or ask fewer VFs; dmesg names what was missing"
	case errors.Is(err, syscall.EINVAL):
		pr.CauseText = "the PF driver refused the count: SR-IOV is off in the firmware (SRIOV_EN False) or its NUM_OF_VFS is below it, or the value was not a number the kernel takes"
		pr.FixText = fmt.Sprintf("check the firmware (%s); set SRIOV_EN=1 and NUM_OF_VFS >= %d and reset the firmware (power cycle); dmesg says which", fwq, n)
	case errors.Is(err, syscall.ENOENT):
		pr.CauseText = "no driver is bound to the PF, or its driver cannot configure SR-IOV through sysfs"
		pr.FixText = fmt.Sprintf("bind the PF to its kernel driver (mlx5_core: echo %s > /sys/bus/pci/drivers/mlx5_core/bind), then `rig up` again", st.bdf)
	case errors.Is(err, syscall.EPERM):
		pr.CauseText = "the PF driver refuses to remove VFs that are assigned to a VM"
		pr.FixText = "detach the VFs from their VMs (virsh detach-device ...), then `rig up` again"
	default:
		pr.CauseText = "the kernel refused: VFs still in use (assigned to a VM, bound to vfio-pci), or the PF driver failed to enable SR-IOV"
		pr.FixText = "see dmesg; release the VFs and `rig up` again"
	}
	return pr
}
