package pcidev

import (
	"fmt"

	"rig/provision"
)

// uioDrivers are the user-space I/O drivers a PCI function can be bound to
// (dpdk-devbind.py --bind=uio_pci_generic|igb_uio).
var uioDrivers = map[string]bool{"uio_pci_generic": true, "igb_uio": true}

// mlx5Function is what the bind step says of a ConnectX/BlueField function
// (vendor 0x15b3) the playbook names: rig never binds it (mlx5 is
// bifurcated: DPDK's mlx5 PMD drives it through mlx5_core and rdma-core).
// On a UIO driver it is an error (neither the kernel nor DPDK can drive
// it there; someone ran dpdk-devbind.py on it): bind it back to
// mlx5_core. On vfio-pci it is a note: that is how a VF is passed through
// to a VM, which is no fault, but the PMD on this host cannot use it.
// Otherwise a note that it is left where it is.
func mlx5Function(fn pciFn, want string) (string, error) {
	back := fmt.Sprintf("echo %s > /sys/bus/pci/drivers/%s/unbind; echo > /sys/bus/pci/devices/%s/driver_override; echo %s > /sys/bus/pci/drivers/mlx5_core/bind (or dpdk-devbind.py --bind=mlx5_core %s)",
		fn.bdf, fn.driver, fn.bdf, fn.bdf, fn.bdf)
	switch {
	case uioDrivers[fn.driver]:
		return "", &provision.Problem{Object: fn.object(),
			Err:       fmt.Errorf("ConnectX/BlueField function (vendor %s) bound to the UIO driver %s: neither the kernel nor DPDK's mlx5 PMD can drive it there; nothing was written", fn.vendor, fn.driver),
			CauseText: "mlx5 is bifurcated: DPDK's mlx5 PMD reaches the port through mlx5_core and its RDMA device, never through UIO (dpdk-devbind.py or a udev rule moved it)",
			FixText:   "bind it back to mlx5_core: " + back + "; then `rig up` again, and take the function out of the bind section"}
	case fn.driver == "vfio-pci":
		return fmt.Sprintf("%s: Mellanox (%s) on vfio-pci: passed through to a VM, or a mistake; DPDK's mlx5 PMD on this host cannot drive it there (it needs mlx5_core); to use it here, bind it back to mlx5_core: %s",
			fn.object(), fn.vendor, back), nil
	}
	return fmt.Sprintf("%s: Mellanox (%s) left on %s: mlx5 is bifurcated, DPDK's mlx5 PMD drives it through mlx5_core and rdma-core; binding it to %s would only take the port away",
		fn.object(), fn.vendor, orNone(fn.driver), want), nil
}
