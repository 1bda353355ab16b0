package card

import (
	"rig/internal/host"
)

// Hooks for firmware_mode_test.go, an external test (package
// card_test): it builds the step list of provision/steps, which
// imports this package.

var (
	NewModeRig              = newModeRig
	NewFirmwareStepWithMode = newFirmwareStep
	CallStrings             = callStrings
)

// Host is the rig's host seam.
func (r *modeRig) Host() *host.Host { return r.h }

// Calls are the recorded argv of every tool run.
func (r *modeRig) Calls() [][]string { return r.rec.Calls() }

// PowerCycle power-cycles the simulated cards.
func (r *modeRig) PowerCycle() ([]string, error) { return r.sim.PowerCycle() }

// Reset forgets the recorded tool runs.
func (r *modeRig) Reset() { r.reset() }

// Writes are the recorded tool runs that write firmware config.
func (r *modeRig) Writes() []string { return r.writes() }
