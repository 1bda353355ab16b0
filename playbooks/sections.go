package playbooks

// Sections owned by later steps. Each gets its own file as its step lands;
// until then the section exists so playbooks can be written against the
// whole format, and an empty type rejects every key it does not know.

// RDMASpec is the `rdma` section (the rdma step).
type RDMASpec struct{}

// Validate checks the section's values.
func (s *RDMASpec) Validate() []FieldError { return nil }

// MSTSpec is the `mst` section (the mst step).
type MSTSpec struct{}

// Validate checks the section's values.
func (s *MSTSpec) Validate() []FieldError { return nil }

// ModeSpec is the `mode` section (the DPU mode step).
type ModeSpec struct{}

// Validate checks the section's values.
func (s *ModeSpec) Validate() []FieldError { return nil }

// OVSSpec is the `ovs` section (the OvS-DPDK step).
type OVSSpec struct{}

// Validate checks the section's values.
func (s *OVSSpec) Validate() []FieldError { return nil }

// CheckSpec is the `check` section (the post-setup throughput check).
type CheckSpec struct{}

// Validate checks the section's values.
func (s *CheckSpec) Validate() []FieldError { return nil }
