package playbooks

import (
	"fmt"
	"strings"

	"rig/internal/pci"
)

// ModeSpec is the `mode` section (the DPU mode step): the BlueField
// operation mode wanted on each device.
//
//	mode:
//	  want: dpu            # dpu | nic | separated
//	  devices: [auto]      # optional; default auto = every BlueField PF function 0
//	                       # (PCI 15b3:a2d6 / 15b3:a2dc) under the host root,
//	                       # or a list of PCI BDFs: ["0000:03:00.0"]
type ModeSpec struct {
	Want    string   `yaml:"want"`
	Devices []string `yaml:"devices"`
}

// ModeWant normalises Want: dpu (also smartnic, ecpf), nic, separated.
func (s *ModeSpec) ModeWant() (string, error) {
	switch strings.ToLower(strings.TrimSpace(s.Want)) {
	case "dpu", "smartnic", "ecpf":
		return "dpu", nil
	case "nic":
		return "nic", nil
	case "separated", "separated-host", "separated_host":
		return "separated", nil
	case "":
		return "", fmt.Errorf("missing; want dpu, nic or separated")
	}
	return "", fmt.Errorf("unknown mode %q; want dpu, nic or separated", s.Want)
}

// AutoDevices reports whether devices are discovered (no list, or [auto]).
func (s *ModeSpec) AutoDevices() bool {
	return len(s.Devices) == 0 || (len(s.Devices) == 1 && strings.EqualFold(s.Devices[0], "auto"))
}

// Validate checks the section's values.
func (s *ModeSpec) Validate() []FieldError {
	var errs []FieldError
	if _, err := s.ModeWant(); err != nil {
		errs = append(errs, FieldError{"want", err.Error()})
	}
	seen := map[string]int{}
	for i, d := range s.Devices {
		f := fmt.Sprintf("devices[%d]", i)
		if strings.EqualFold(d, "auto") {
			if len(s.Devices) > 1 {
				errs = append(errs, FieldError{f, "auto cannot be combined with PCI addresses"})
			}
			continue
		}
		key, ok := pci.Canonical(d)
		if !ok {
			errs = append(errs, FieldError{f, fmt.Sprintf("want a PCI address like 0000:03:00.0 (or auto), got %q", d)})
			continue
		}
		if j, dup := seen[key]; dup {
			errs = append(errs, FieldError{f, fmt.Sprintf("same device as devices[%d]", j)})
		}
		seen[key] = i
	}
	return errs
}
