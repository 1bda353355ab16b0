package provision

import (
	"fmt"
	"strings"
)

// Reset names the reset that makes a pending change take effect (exit 3):
// what the user must do before `rig up` can go on. The report carries it
// per step (StepResult.Resets) and for the run (Summary.Resets), so a
// caller can act on it without reading the text.
//
// The classes are distinct actions, not a scale: a BlueField's Arm cores
// reboot apart from the host, and a firmware reset (mstfwreset) reloads
// the NIC firmware with neither (Covers says which one does another's
// work). New classes add a constant here and a line in resetOrder and
// Action; "none" is never written (a step with nothing pending has no
// resets). Which change needs which reset: RuleFor (reset_rules.go).
type Reset string

const (
	// ResetNone: the change takes effect at once (a host's sriov_numvfs),
	// or its own process resets what it needs (a BFB install reboots the
	// Arm itself). It names a class in the change table (RuleFor); it is
	// never pending, so AddPending drops it.
	ResetNone Reset = "none"
	// ResetDPUArmReboot: reboot the BlueField's Arm OS alone (`reboot` on
	// the Arm, or SW_RESET 1 in the host's /dev/rshim<N>/misc); the host
	// and the NIC firmware keep running (hardware-formats.md §19.3, §20.3).
	ResetDPUArmReboot Reset = "dpu-arm-reboot"
	// ResetFWLivePatch .. ResetFWWarmReboot: a firmware reset by
	// mstfwreset/mlxfwreset at its reset level (-l; Mellanox/mstflint
	// small_utils/mlxfwresetlib/cmd_reg_mfrl.py, §1.3, §20.3). Level 2
	// has no text there, so no class.
	ResetFWLivePatch     Reset = "fw-reset-l0" // "Driver, PCI link, network link will remain up" (live patch)
	ResetFWArm           Reset = "fw-reset-l1" // "Only ARM side will not remain up" (immediate reset; types 3 ARM only, 4 ARM OS shut down)
	ResetFWDriverRestart Reset = "fw-reset-l3" // "Driver restart and PCI reset": the host PFs reset too
	ResetFWWarmReboot    Reset = "fw-reset-l4" // "Warm Reboot" of the host
	// ResetHostReboot: reboot the operating system rig runs on (the
	// kernel command line, boot-time hugepages).
	ResetHostReboot Reset = "host-reboot"
	// ResetHostPowerCycle: power the server off and on (cold, ~30 s off),
	// which reloads the NIC firmware's next-boot configuration; a warm
	// reboot does not in DPU mode.
	ResetHostPowerCycle Reset = "host-power-cycle"
)

// resetOrder is the order resets are listed in: the one asked first is
// the one to do first (a power cycle includes a reboot of the host; so
// does mlxfwreset's level 4, a warm reboot). "none" is never listed.
var resetOrder = []Reset{ResetHostPowerCycle, ResetFWWarmReboot, ResetHostReboot, ResetFWDriverRestart, ResetFWArm, ResetFWLivePatch, ResetDPUArmReboot}

// FWReset is the class of an mstfwreset reset level: 0, 1, 3 or 4.
func FWReset(level int) (Reset, error) {
	for _, r := range []Reset{ResetFWLivePatch, ResetFWArm, ResetFWDriverRestart, ResetFWWarmReboot} {
		if l, _ := r.FWResetLevel(); l == level {
			return r, nil
		}
	}
	return "", fmt.Errorf("mstfwreset reset level %d: want 0 (live patch), 1 (Arm only), 3 (driver restart and PCI reset) or 4 (warm reboot)", level)
}

// FWResetLevel is the mstfwreset level of a firmware-reset class.
func (r Reset) FWResetLevel() (int, bool) {
	if !strings.HasPrefix(string(r), "fw-reset-l") || !r.Known() {
		return 0, false
	}
	return int(r[len(r)-1] - '0'), true
}

// Covers reports whether doing r makes a change that needs other take
// effect too: r itself; a power cycle covers every class, "the only
// universally sufficient action" (§1.3); mlxfwreset's level 4 is the warm
// reboot of the host that a system-level reset allows in place of
// `reboot` (§1.3, §20.3). No other pair is covered by the reference (a
// host reboot does not reload NIC firmware in DPU mode).
func (r Reset) Covers(other Reset) bool {
	switch {
	case r == other, other == ResetNone:
		return true
	case r == ResetHostPowerCycle:
		return other.Known()
	case r == ResetFWWarmReboot:
		return other == ResetHostReboot
	}
	return false
}

// Action says what to do, for people: "power-cycle the server (cold)".
func (r Reset) Action() string {
	switch r {
	case ResetNone:
		return "nothing (the change takes effect at once)"
	case ResetDPUArmReboot:
		return "reboot the BlueField's Arm (`reboot` on the Arm, or `SW_RESET 1` to /dev/rshim<N>/misc from the host)"
	case ResetFWLivePatch:
		return "live-patch the NIC firmware (mlxfwreset -l 0 r, or devlink dev reload pci/<bdf> action fw_activate limit no_reset)"
	case ResetFWArm:
		return "reset the BlueField's Arm side (mlxfwreset -l 1 r; -t 4 shuts the Arm OS down)"
	case ResetFWDriverRestart:
		return "reset the NIC firmware with a driver restart and PCI reset (mlxfwreset -l 3 --sync 1 r from the Arm, or devlink dev reload pci/<bdf> action fw_activate; the host PFs reset too)"
	case ResetFWWarmReboot:
		return "reset the NIC firmware and warm-reboot this host (mlxfwreset -l 4 r, once for all cards)"
	case ResetHostReboot:
		return "reboot this host"
	case ResetHostPowerCycle:
		return "power-cycle the server (cold, ~30 s off; a warm reboot does not reload NIC firmware in DPU mode)"
	}
	return string(r)
}

// Known reports whether r is one of the classes above.
func (r Reset) Known() bool {
	if r == ResetNone {
		return true
	}
	for _, k := range resetOrder {
		if r == k {
			return true
		}
	}
	return false
}

// addReset adds r to list unless it is there or ResetNone (nothing
// pending), keeping resetOrder.
func addReset(list []Reset, r Reset) []Reset {
	if r == ResetNone {
		return list
	}
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
