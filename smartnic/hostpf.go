package smartnic

import (
	"strings"
)

// HostPF is the PF number of a BlueField's host PF netdev, as the x86
// host sees it (hardware-formats.md §20.1: PF0 BB:DD.0, PF1 BB:DD.1; the
// Arm's pf0hpf/pf1hpf stand for them): ok false for any other netdev. The
// name is never the key (it varies by kernel), the function's vendor and
// device ID are.
func HostPF(h NetdevReader, netdev string) (int, bool) {
	f, err := ReadNetdevFunction(h, netdev)
	if err != nil || f.BDF == "" {
		return 0, false
	}
	dir := "/sys/class/net/" + netdev + "/device/"
	v, err1 := h.ReadFile(dir + "vendor")
	d, err2 := h.ReadFile(dir + "device")
	if err1 != nil || err2 != nil || strings.TrimSpace(string(v)) != "0x15b3" {
		return 0, false
	}
	id, err := ParseHexID(strings.TrimSpace(string(d)))
	if m, _ := LookupModel(id); err != nil || !m.IsBlueField() {
		return 0, false
	}
	return int(f.BDF[len(f.BDF)-1] - '0'), true
}
