package playbooks

import (
	"fmt"
	"strings"

	"rig/internal/pci"
)

// BindSpec is the `bind` section: PCI functions DPDK drives through a
// user-space driver (seed 003 binds a virtio/Intel port to vfio-pci by
// hand and restores it afterwards).
//
//	bind:
//	  driver: vfio-pci          # vfio-pci (default) or uio_pci_generic
//	  devices: [0000:00:04.0, ens5]   # PCI addresses or netdev names
//	  force: false              # bind a function whose netdevs (or a bond/bridge/VLAN on them) carry the default route, other routes, an established TCP session's address, or are a BlueField management port (default: refuse, however the function is named)
//
// An mlx5 function is never rebound: ConnectX/BlueField ports are
// bifurcated, DPDK's mlx5 PMD works through mlx5_core and rdma-core.
type BindSpec struct {
	Driver  string   `yaml:"driver"`
	Devices []string `yaml:"devices"`
	Force   bool     `yaml:"force"`
}

// BindDrivers are the user-space I/O drivers the bind step binds to.
var bindDrivers = []string{"vfio-pci", "uio_pci_generic"}

// DriverName is the driver to bind to (default vfio-pci).
func (s *BindSpec) DriverName() string {
	if s.Driver == "" {
		return "vfio-pci"
	}
	return s.Driver
}

// Validate checks the driver and every device before anything is written.
func (s *BindSpec) Validate() []FieldError {
	var errs []FieldError
	known := false
	for _, d := range bindDrivers {
		known = known || s.DriverName() == d
	}
	if !known {
		errs = append(errs, FieldError{"driver", fmt.Sprintf("%q: want one of %s (DPDK's user-space I/O drivers)", s.Driver, strings.Join(bindDrivers, ", "))})
	}
	if len(s.Devices) == 0 {
		errs = append(errs, FieldError{"devices", "empty: list the PCI addresses or netdev names to bind"})
	}
	seen := map[string]int{}
	for i, d := range s.Devices {
		f := fmt.Sprintf("devices[%d]", i)
		key := d
		if c, ok := pci.Canonical(d); ok {
			key = c
		} else if msg := badIfName(d); msg != "" {
			errs = append(errs, FieldError{f, fmt.Sprintf("%q is neither a PCI address (0000:00:04.0) nor a netdev name: %s", d, msg)})
			continue
		}
		if j, dup := seen[key]; dup {
			errs = append(errs, FieldError{f, fmt.Sprintf("same device as devices[%d]", j)})
		}
		seen[key] = i
	}
	return errs
}

// badIfName says why s cannot be a Linux interface name (dev_valid_name in
// net/core/dev.c: 1..15 bytes, not "." or "..", no '/', ':' or whitespace).
func badIfName(s string) string {
	switch {
	case s == "" || len(s) > 15:
		return "a netdev name has 1 to 15 characters"
	case s == "." || s == "..":
		return "not a netdev name"
	case strings.ContainsAny(s, "/: \t\n\"'$\\"):
		return "a netdev name has no '/', ':', quotes or spaces"
	}
	return ""
}
