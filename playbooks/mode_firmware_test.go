package playbooks

import (
	"strings"
	"testing"
)

// TestModeFirmwareConflict: a firmware parameter the mode section sets,
// with another value, on a card the mode section may cover, is a playbook
// error at its line naming both fields and the fix; the mode's own value
// (in either form), a parameter the mode does not set, or another card is
// fine.
func TestModeFirmwareConflict(t *testing.T) {
	fw := func(dev, params string) string {
		return "firmware:\n  devices:\n    - device: \"" + dev + "\"\n      parameters: {" + params + "}\n"
	}
	for _, c := range []struct{ yaml, want string }{
		{"name: t\nmode: {want: dpu}\n" + fw("*", "NUM_OF_VFS: 8, INTERNAL_CPU_MODEL: SEPARATED_HOST"),
			`t.yaml:6: firmware.devices[0].parameters.INTERNAL_CPU_MODEL: SEPARATED_HOST conflicts with mode.want: dpu, which sets INTERNAL_CPU_MODEL to EMBEDDED_CPU(1) on every BlueField (device "*" is every card); a parameter is set by one section: remove INTERNAL_CPU_MODEL from this firmware entry (the mode section sets it), or change mode.want`},
		{"name: t\nmode: {want: dpu, devices: [\"03:00.0\"]}\n" + fw("0000:03:00.1", "INTERNAL_CPU_OFFLOAD_ENGINE: 1"),
			"firmware.devices[0].parameters.INTERNAL_CPU_OFFLOAD_ENGINE: 1 conflicts with mode.want: dpu, which sets INTERNAL_CPU_OFFLOAD_ENGINE to ENABLED(0) on every BlueField (0000:03:00.1 is on the card of mode.devices[0])"},
		{"name: t\nmode: {want: nic}\n" + fw("0000:03:00.0", "INTERNAL_CPU_PAGE_SUPPLIER: ECPF"),
			"INTERNAL_CPU_PAGE_SUPPLIER: ECPF conflicts with mode.want: nic, which sets INTERNAL_CPU_PAGE_SUPPLIER to EXT_HOST_PF(1) on a BlueField-2 (mode.devices is auto: every BlueField)"},
		{"name: t\nmode: {want: separated, devices: [\"03:00.0\"]}\n" + fw("/dev/mst/mt41686_pciconf0", "INTERNAL_CPU_MODEL: 1"),
			"/dev/mst/mt41686_pciconf0 is an mst name, which may be a card of mode.devices (name the card by PCI address to tell)"},
	} {
		_, err := Parse("t.yaml", []byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\nerr = %v\nwant %q", c.yaml, err, c.want)
		}
	}
	for _, ok := range []string{
		"name: t\nmode: {want: dpu}\n" + fw("*", "INTERNAL_CPU_MODEL: 1, INTERNAL_CPU_OFFLOAD_ENGINE: enabled, SRIOV_EN: True"),
		"name: t\nmode: {want: separated}\n" + fw("*", "INTERNAL_CPU_OFFLOAD_ENGINE: DISABLED"), // separated sets MODEL only
		"name: t\nmode: {want: dpu, devices: [\"03:00.0\"]}\n" + fw("0000:04:00.0", "INTERNAL_CPU_MODEL: SEPARATED_HOST"),
		"name: t\nmode: {want: nic}\n" + fw("*", "INTERNAL_CPU_PAGE_SUPPLIER: EXT_HOST_PF"),
		"name: t\n" + fw("*", "INTERNAL_CPU_MODEL: SEPARATED_HOST"), // no mode section
	} {
		if _, err := Parse("t.yaml", []byte(ok)); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}
