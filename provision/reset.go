package provision

import "strings"

// Reset names the reset that makes a pending change take effect (exit 3):
// what the user must do before `rig up` can go on. The report carries it
// per step (StepResult.Resets) and for the run (Summary.Resets), so a
// caller can act on it without reading the text.
//
// The classes are distinct actions, not a scale: a BlueField's Arm cores
// reboot apart from the host, and a firmware reset (mstfwreset) reloads
// the NIC firmware with neither. New classes add a constant here and a
// line in resetOrder and Action; "none" is never written (a step with
// nothing pending has no resets).
type Reset string

const (
	// ResetHostReboot: reboot the operating system rig runs on (the
	// kernel command line, boot-time hugepages).
	ResetHostReboot Reset = "host-reboot"
	// ResetHostPowerCycle: power the server off and on (cold, ~30 s off),
	// which reloads the NIC firmware's next-boot configuration; a warm
	// reboot does not in DPU mode.
	ResetHostPowerCycle Reset = "host-power-cycle"
)

// resetOrder is the order resets are listed in: the one asked first is
// the one to do first (a power cycle includes a reboot of the host).
var resetOrder = []Reset{ResetHostPowerCycle, ResetHostReboot}

// Action says what to do, for people: "power-cycle the server (cold)".
func (r Reset) Action() string {
	switch r {
	case ResetHostReboot:
		return "reboot this host"
	case ResetHostPowerCycle:
		return "power-cycle the server (cold, ~30 s off; a warm reboot does not reload NIC firmware in DPU mode)"
	}
	return string(r)
}

// Known reports whether r is one of the classes above.
func (r Reset) Known() bool {
	for _, k := range resetOrder {
		if r == k {
			return true
		}
	}
	return false
}

// addReset adds r to list unless it is there, keeping resetOrder.
func addReset(list []Reset, r Reset) []Reset {
	for _, x := range list {
		if x == r {
			return list
		}
	}
	list = append(list, r)
	out := make([]Reset, 0, len(list))
	for _, k := range resetOrder {
		for _, x := range list {
			if x == k {
				out = append(out, x)
			}
		}
	}
	for _, x := range list {
		if !x.Known() {
			out = append(out, x)
		}
	}
	return out
}

// ResetActions is what a list of resets asks, for people: "reboot this
// host" or "power-cycle the server (…), then reboot this host".
func ResetActions(rs []Reset) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, r.Action())
	}
	return strings.Join(parts, ", then ")
}
