package playbooks

import (
	"fmt"
	"sort"
	"strings"

	"rig/internal/pci"
	"rig/mlxconfig"
)

// validateModeFirmware checks a playbook with both a mode and a firmware
// section. The rule: each firmware parameter is written by one step. The
// mode section owns the INTERNAL_CPU_* values its mode sets (dpu: all five;
// nic: all five on a BlueField-2, INTERNAL_CPU_MODEL and
// INTERNAL_CPU_OFFLOAD_ENGINE on a BlueField-3; separated:
// INTERNAL_CPU_MODEL) on the cards it covers. A firmware entry may repeat
// one of them with the mode's own value (the firmware step leaves it to the
// mode step, which writes it once); any other value is an error here,
// before anything runs. The check reads the playbook, not the host, so it
// assumes an entry may reach a card of the mode section unless both name
// different cards by PCI address ("*" and mode.devices auto cover every
// card; an mst name can be any card), and a value that differs from the
// mode's on either BlueField generation conflicts.
func validateModeFirmware(mode *ModeSpec, fw *FirmwareSpec) []FieldError {
	w, err := mode.ModeWant()
	if err != nil {
		return nil // mode.want's own error says it
	}
	m, err := mlxconfig.ParseDPUMode(w)
	if err != nil {
		return nil
	}
	var errs []FieldError
	for i, d := range fw.Devices {
		reach, ok := modeReaches(mode, d.Device)
		if !ok {
			continue
		}
		names := make([]string, 0, len(d.Parameters))
		for n := range d.Parameters {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if !mlxconfig.IsModeParam(n) {
				continue
			}
			if sets := modeConflict(m, n, d.Parameters[n]); sets != "" {
				errs = append(errs, FieldError{fmt.Sprintf("firmware.devices[%d].parameters.%s", i, n),
					fmt.Sprintf("%s conflicts with mode.want: %s, which sets %s to %s (%s); a parameter is set by one section: remove %s from this firmware entry (the mode section sets it), or change mode.want",
						d.Parameters[n], m, n, sets, reach, n)})
			}
		}
	}
	return errs
}

// modeReaches says how a firmware entry's device may be a card the mode
// section covers, by the playbook's text; false when it cannot be.
func modeReaches(mode *ModeSpec, dev string) (string, bool) {
	switch {
	case dev == "*":
		return `device "*" is every card`, true
	case mode.AutoDevices():
		return "mode.devices is auto: every BlueField", true
	}
	c, ok := pci.Canonical(dev)
	if !ok {
		return dev + " is an mst name, which may be a card of mode.devices (name the card by PCI address to tell)", true
	}
	for i, md := range mode.Devices {
		if mc, ok := pci.Canonical(md); ok && card(mc) == card(c) {
			return fmt.Sprintf("%s is on the card of mode.devices[%d]", dev, i), true
		}
	}
	return "", false
}

// card is a PCI address up to its function ("0000:03:00.").
func card(bdf string) string { return bdf[:strings.LastIndex(bdf, ".")+1] }

// modeConflict returns what mode m sets parameter name to where value
// differs from it ("EMBEDDED_CPU(1) on every BlueField", "EXT_HOST_PF(1) on
// a BlueField-2"), or "" when m never sets another value.
func modeConflict(m mlxconfig.DPUMode, name, value string) string {
	got, perr := mlxconfig.ParseSetValue(name, value)
	gens := mlxconfig.KnownGenerations()
	var differ []string
	setTo, sets := "", 0
	for _, g := range gens {
		want, err := mlxconfig.Wanted(g, m)
		v, ok := want[name]
		if err != nil || !ok {
			continue
		}
		sets++
		if perr == nil && got == v {
			continue
		}
		differ = append(differ, string(g))
		setTo = mlxconfig.FormatValue(name, v)
	}
	switch {
	case len(differ) == 0:
		return ""
	case sets == len(gens) && len(differ) == len(gens):
		return setTo + " on every BlueField"
	}
	return setTo + " on a " + strings.Join(differ, " and a ")
}
