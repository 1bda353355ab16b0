package playbooks

// CheckSpec is the `check` section: the post-setup throughput check through
// the configured path. Its step does not exist yet, so the section is
// rejected rather than silently ignored; `rig bench loop` runs the check by hand.
type CheckSpec struct{}

// Validate rejects the section until its step lands.
func (s *CheckSpec) Validate() []FieldError {
	return []FieldError{{Field: "", Msg: "the check step is not implemented yet (a playbook would silently skip it); remove the section and run `rig bench loop` after `rig up`"}}
}
