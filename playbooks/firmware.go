package playbooks

import (
	"fmt"
	"regexp"
	"sort"

	"rig/internal/pci"
)

// FirmwareSpec is the `firmware` section: any firmware (NV) configuration
// parameter per device, as NVIDIA's DPUFlavor `nvconfig` sets them.
//
//	firmware:
//	  devices:
//	    - device: "*"                  # every card (function 0), a PCI address, or an mst name
//	      parameters:                  # names as mlxconfig prints them
//	        SRIOV_EN: True             # either form mlxconfig accepts: True / 1
//	        NUM_OF_VFS: 8
//	        LINK_TYPE_P1: ETH          # ETH / 2
//
// Values are compared with the device's Next Boot (what it will run after
// the next power cycle) and Current (what it runs now): a write goes to
// Next Boot, one `set` per device, and a difference left only in Current
// is a pending power cycle (exit 3).
type FirmwareSpec struct {
	Devices []FirmwareDevice `yaml:"devices"`
}

// FirmwareDevice is one device's wanted parameters.
type FirmwareDevice struct {
	Device     string            `yaml:"device"`
	Parameters map[string]string `yaml:"parameters"`
}

var (
	fwParamRE = regexp.MustCompile(`^[A-Z][A-Z0-9_]*(\[[0-9]+\])?$`)
	fwValueRE = regexp.MustCompile(`^(-?[0-9]+|0x[0-9a-fA-F]+|[A-Za-z][A-Za-z0-9_]*)$`)
	mstNameRE = regexp.MustCompile(`^(/dev/mst/)?mt[0-9]+_pci(conf|_cr)[0-9]*(\.[0-9]+)?$`)
)

// Validate checks every device and parameter before anything is written.
func (s *FirmwareSpec) Validate() []FieldError {
	if len(s.Devices) == 0 {
		return []FieldError{{"devices", "empty: list devices (\"*\", a PCI address or an mst name) and their parameters"}}
	}
	var errs []FieldError
	seen := map[string]int{}
	for i, d := range s.Devices {
		f := fmt.Sprintf("devices[%d]", i)
		key := d.Device
		if c, ok := pci.Canonical(d.Device); ok {
			key = c
		} else if d.Device != "*" && !mstNameRE.MatchString(d.Device) {
			errs = append(errs, FieldError{f + ".device", fmt.Sprintf("%q: want \"*\" (every card), a PCI address (0000:03:00.0) or an mst device name (/dev/mst/mt41686_pciconf0)", d.Device)})
		}
		if j, dup := seen[key]; dup {
			errs = append(errs, FieldError{f + ".device", fmt.Sprintf("same device as devices[%d]; put its parameters together", j)})
		}
		seen[key] = i
		if len(d.Parameters) == 0 {
			errs = append(errs, FieldError{f + ".parameters", "empty: give NAME: VALUE pairs"})
		}
		names := make([]string, 0, len(d.Parameters))
		for n := range d.Parameters {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			v := d.Parameters[n]
			switch {
			case !fwParamRE.MatchString(n):
				errs = append(errs, FieldError{f + ".parameters." + n, "not a firmware parameter name (upper case, as mlxconfig prints it, e.g. SRIOV_EN)"})
			case !fwValueRE.MatchString(v):
				errs = append(errs, FieldError{f + ".parameters." + n, fmt.Sprintf("value %q: want a number or a name as mlxconfig prints it (True, ETH, 8)", v)})
			}
		}
	}
	return errs
}
