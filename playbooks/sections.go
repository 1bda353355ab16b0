package playbooks

// Sections owned by later steps. Each gets its own file as its step lands;
// until then the section exists so playbooks can be written against the
// whole format, and an empty type rejects every key it does not know.

// CheckSpec is the `check` section (the post-setup throughput check).
type CheckSpec struct{}

// Validate checks the section's values.
func (s *CheckSpec) Validate() []FieldError { return nil }
