package diagnose

import (
	"fmt"
	"strings"

	"rig/ovs"
)

// Problem kinds of the EAL stages (diagnose.go holds the others).
const (
	// ProblemPCINotScanned: EAL's PCI bus scan did not list a device sysfs
	// has, and no EAL argument keeps it out.
	ProblemPCINotScanned = "pci-device-not-scanned"
	// ProblemMlx5NotMlx5Core: a ConnectX/BlueField function on a UIO or
	// VFIO driver: the mlx5 PMD reaches it only through mlx5_core.
	ProblemMlx5NotMlx5Core = "mlx5-not-on-mlx5-core"
)

// The stages of a PCI attach, as EAL logs them (DPDK 22.11
// librte_bus_pci.so.23 and librte_eal.so.23 strings): the device not seen
// by the bus ("Cannot find device"), seen but usable by no driver
// ("Requested device … cannot be used", "Not managed by a supported kernel
// driver, skipped"), taken by a driver whose probe failed ("Probe PCI
// driver: … device: BDF"), or stopped by VFIO/the IOMMU. What EAL says
// comes before what sysfs suggests.
var (
	iommuStageLines = []string{"VFIO group is not viable", "EAL: Cannot open /dev/vfio", "DMA remapping failed", "Cannot set up DMA remapping",
		"Expecting 'VA' IOVA mode but current mode is 'PA'"}
	unusableStageLines = []string{"cannot be used", "Not managed by a supported kernel driver", "not managed by UIO driver"}
)

// ealStage says which stage EAL's log shows for bdf: "iommu", "bus"
// (not seen by the PCI bus), "probe" (a driver took it and failed),
// "unusable" (seen, no driver could use it), or "" when the log names no
// stage.
func ealStage(log ovs.LogTail, bdf string) string {
	for _, l := range iommuStageLines {
		if len(matching(log, 1, l)) > 0 {
			return "iommu"
		}
	}
	if len(matching(log, 1, bdf+" cannot get IOMMU group")) > 0 || len(matching(log, 1, bdf+" not managed by VFIO driver")) > 0 {
		return "iommu"
	}
	switch {
	case len(matching(log, 1, "Cannot find device ("+bdf+")")) > 0:
		return "bus"
	case len(matching(log, 1, "Probe PCI driver: ", bdf)) > 0:
		return "probe"
	}
	for _, l := range unusableStageLines {
		if len(matching(log, 1, l)) > 0 {
			return "unusable"
		}
	}
	return ""
}

// diagnoseMlx5Driver: a ConnectX/BlueField function (vendor 0x15b3) that
// is not on mlx5_core. On a UIO driver or vfio-pci DPDK's mlx5 PMD cannot
// reach it (it drives the port through mlx5_core and its RDMA device),
// whatever EAL logged: bind it back to mlx5_core. false when drv is
// mlx5_core or none (the usual mlx5 diagnosis follows).
func diagnoseMlx5Driver(d *ovs.Diagnosis, bdf, drv string) bool {
	if drv != "vfio-pci" && drv != "igb_uio" && drv != "uio_pci_generic" {
		return false
	}
	d.Kind = ProblemMlx5NotMlx5Core
	d.Cause = fmt.Sprintf("ConnectX/BlueField function %s is bound to %s: DPDK's mlx5 PMD drives mlx5 ports only through mlx5_core and the port's RDMA device (bifurcated), never through %s", bdf, drv, drv)
	d.Fix = fmt.Sprintf("bind it back to mlx5_core: echo %s > /sys/bus/pci/drivers/%s/unbind; echo > /sys/bus/pci/devices/%s/driver_override; echo %s > /sys/bus/pci/drivers/mlx5_core/bind (or dpdk-devbind.py --bind=mlx5_core %s); then `rig up`",
		bdf, drv, bdf, bdf, bdf)
	return true
}

// diagnoseNotScanned: EAL's bus scan did not list bdf although sysfs has
// it and no EAL argument excludes it.
func diagnoseNotScanned(d *ovs.Diagnosis, bdf, drv string) {
	d.Kind = ProblemPCINotScanned
	on := "no driver"
	if drv != "" {
		on = "driver " + drv
	}
	d.Cause = fmt.Sprintf("EAL's PCI bus did not see %s (\"Cannot find device\"), though sysfs has it (%s) and dpdk-extra keeps no PCI device out: it appeared, or was rebound, after ovs-vswitchd started DPDK, or EAL cannot read its sysfs entries", bdf, on)
	d.Fix = "restart ovs-vswitchd so EAL scans the PCI bus again (systemctl restart openvswitch-switch, or `rig ovs daemon stop` and `start` for a private instance), then `rig up`"
}

// iommuFixFor is iommuFix without advice the host already follows: options
// already on the kernel command line are named as present, and the fix
// turns to what is left (the firmware's VT-d/AMD-Vi, a VM's vIOMMU, vfio's
// no-IOMMU mode).
func iommuFixFor(h ovs.Host) string {
	cl, err := ovs.ReadString(h, "/proc/cmdline")
	if err != nil {
		return iommuFix
	}
	have := map[string]bool{}
	var present []string
	for _, w := range strings.Fields(cl) {
		switch w {
		case "intel_iommu=on", "amd_iommu=on", "iommu=pt", "iommu=on":
			have[w] = true
			present = append(present, w)
		}
	}
	noIOMMU := "on a machine without an IOMMU (e.g. a VM without a vIOMMU) use vfio's no-IOMMU mode instead: " +
		"echo 1 > /sys/module/vfio/parameters/enable_unsafe_noiommu_mode, then bind the device to vfio-pci again"
	switch {
	case have["intel_iommu=on"] || have["amd_iommu=on"]:
		return fmt.Sprintf("the kernel command line already has %s, so it is not the missing piece: enable the IOMMU in the firmware setup (Intel VT-d / AMD-Vi, BIOS/UEFI), "+
			"check dmesg for DMAR/AMD-Vi errors, or %s", strings.Join(present, " "), noIOMMU)
	case have["iommu=pt"]:
		return "the kernel command line has iommu=pt but no intel_iommu=on (Intel) or amd_iommu=on (AMD): add the one for this CPU and reboot; " + noIOMMU
	}
	return iommuFix
}

// diagnoseProbeOnKernelDriver: EAL's probe stage for a device on a kernel
// driver (or none): a PMD took it and its probe failed, because the
// kernel, not DPDK, holds the device. The PMD's own error is quoted first.
func diagnoseProbeOnKernelDriver(h ovs.Host, d *ovs.Diagnosis, bdf, dir, drv string, log ovs.LogTail) {
	d.Kind = ProblemWrongDriver
	pmd := "a"
	if m := matching(log, 1, "Probe PCI driver: ", bdf); len(m) > 0 {
		if sm := probePMD.FindStringSubmatch(m[0]); sm != nil {
			pmd = sm[1]
		}
	}
	d.Cause = fmt.Sprintf("DPDK's %s driver took PCI device %s (EAL: Probe PCI driver) and its probe failed", pmd, bdf)
	if errs := probeErrors(log, bdf); len(errs) > 0 {
		d.Cause += ": " + logText(errs[len(errs)-1])
	}
	what := "it is bound to no driver, and DPDK needs vfio-pci (or a UIO driver) to map it"
	if drv != "" {
		what = "it is bound to the kernel driver " + drv + ", which DPDK cannot use"
	}
	d.Cause += "; " + what + "; a non-mlx5 NIC must be bound to vfio-pci for DPDK"
	d.Fix = fmt.Sprintf("bind %s to vfio-pci: dpdk-devbind.py --bind=vfio-pci %s (modprobe vfio-pci first), then `rig up`", bdf, bdf)
	if nets, _ := h.ReadDir(dir + "/net"); len(nets) > 0 {
		d.Fix += fmt.Sprintf("; its kernel netdev %s goes away when you do", nets[0].Name())
	}
}
