package playbooks

import "fmt"

// MSTSpec is the `mst` section: make the devices addressable by the
// firmware tools.
//
//	mst:
//	  start: true        # with NVIDIA MFT installed, run `mst start` when
//	                     # /dev/mst is empty (default true; mstflint needs none)
//	  min_devices: 1     # fail when fewer Mellanox NIC devices are found (default 0)
type MSTSpec struct {
	Start      *bool `yaml:"start"`
	MinDevices int   `yaml:"min_devices"`
}

// StartMST reports whether `mst start` may be run (default true).
func (s *MSTSpec) StartMST() bool { return s.Start == nil || *s.Start }

// Validate checks the section's values.
func (s *MSTSpec) Validate() []FieldError {
	if s.MinDevices < 0 || s.MinDevices > 64 {
		return []FieldError{{"min_devices", fmt.Sprintf("want 0..64, got %d", s.MinDevices)}}
	}
	return nil
}
