package provision

import (
	"context"
	"errors"

	"rig/playbooks"
	"rig/provision/host"
)

// placeholder: replaced by the real hugepages step in this session.
type hugepagesStep struct{}

func NewHugepagesStep(h *host.Host, spec *playbooks.HugepagesSpec) (Step, error) {
	return &hugepagesStep{}, nil
}
func (s *hugepagesStep) Name() string                               { return "hugepages" }
func (s *hugepagesStep) Check(ctx context.Context) (Plan, error)    { return Plan{}, errors.New("todo") }
func (s *hugepagesStep) Apply(ctx context.Context, plan Plan) error { return errors.New("todo") }
