package rshim

import "strings"

// trap is a known failure line (hardware-formats.md §19.4, §19.5, §19.8)
// with its cause and fix. A line matches when its kind, level and module
// match (empty: any) and its text contains sub (case-insensitively when
// fold, as bfb-install's grep -Ei does).
type trap struct {
	kind, level, module string
	sub                 string
	fold                bool
	// pending: not a failure; burned NIC firmware waits for a reset.
	pending    bool
	cause, fix string
	where      string // the section of hardware-formats.md
}

// traps, most specific first. Lines of the log (LogMessage, LogCrash)
// come from rshim's misc; LogOther lines are bfb-install's output or
// rshim's journal, which ParseLog keeps when given them.
var traps = []trap{
	{kind: LogMessage, level: "ERR", module: "MISC", sub: "Installation failed",
		cause: "the BFB installer failed (its fail(): the reason is the ERR line before, and the DPU reboots into what its eMMC holds)",
		fix:   "read the installer's console (/dev/rshim<N>/console) for the failing step; check that the BFB is built for this card (BlueField-2 or -3) and that bf.cfg is right, then push again", where: "§19.5"},
	{sub: "CRITICAL ERROR", fold: true,
		cause: "the boot firmware or the installer logged CRITICAL ERROR (bfb-install stops on it; which component writes it is UNCONFIRMED, closed source)",
		fix:   "read the log lines before it and the console (/dev/rshim<N>/console); power-cycle the server and push the BFB again", where: "§19.4, §21.7"},
	{kind: LogMessage, level: "ERR", module: "BL1", sub: "PSC error",
		cause: "the PSC firmware failed to boot; the boot is halted",
		fix:   "power-cycle the server and push the BFB again; if the line comes back, the card needs NVIDIA support (send the rshim log)", where: "§19.5"},
	{kind: LogCrash,
		cause: "the Arm crashed during boot (an exception or panic record in the rshim log)",
		fix:   "keep the log with its register lines, power-cycle the server and push the BFB again", where: "§19.2"},
	{kind: LogMessage, sub: "Host power cycle is required", pending: true, where: "§19.5"},
	{kind: LogMessage, sub: "Run mlxfwreset or system-level reset to load new NIC firmware", pending: true, where: "§19.5"},
	{kind: LogOther, sub: "Connection timed out",
		cause: "the boot stream stalled longer than rshim's BOOT_TIMEOUT (slow DDR training, a capsule NIC-firmware update or a BMC can exceed it) and the write to /dev/rshim<N>/boot failed with ETIMEDOUT",
		fix:   "raise the timeout (echo \"BOOT_TIMEOUT 600\" > /dev/rshim<N>/misc, or BOOT_TIMEOUT in /etc/rshim.conf) and push again", where: "§19.8 trap 1"},
	{kind: LogOther, sub: "Interrupted system call",
		cause: "the boot stream stalled and rshim older than 2.8.2 failed the write with EINTR instead of waiting",
		fix:   "update rshim to 2.8.2 or newer, or raise BOOT_TIMEOUT, and push again", where: "§19.8 trap 1"},
	{kind: LogOther, sub: "another backend already attached",
		cause: "another rshim backend owns the chip (the BMC over USB prevails on cards with a BMC), so the host has no /dev/rshim<N>",
		fix:   "stop and disable rshim on the BMC (or Redfish HostRshim Enabled), then restart rshim on the host; or start rshim with --force and write FORCE_CMD 1", where: "§19.1, §19.8 trap 2"},
	{kind: LogOther, sub: "failed to receive ownership transfer ack",
		cause: "FORCE_CMD asked the owning backend to release the chip and it did not answer (it depends on the other driver)",
		fix:   "stop rshim on the BMC by hand, then restart rshim on the host", where: "§19.1"},
	{kind: LogOther, sub: "Need to enable IOMMU/VFIO for kernel lock-down",
		cause: "the kernel is locked down (integrity or confidentiality) and vfio-pci is missing, so rshim's PCIe backend refuses to start",
		fix:   "load vfio-pci and enable the IOMMU (intel_iommu=on or amd_iommu=on), or use the BMC's rshim", where: "§19.8 trap 5"},
	{kind: LogOther, sub: "set to locked mode",
		cause: "the BlueField-3 is in secure NIC (locked) mode: most rshim functions are disabled on the PCIe backend",
		fix:   "use the USB or livefish rshim, or leave secure NIC mode", where: "§19.8 trap 4"},
	{kind: LogOther, sub: "Failed to push boot stream",
		cause: "bfb-install could not write the BFB to /dev/rshim<N>/boot",
		fix:   "read the error before this line (write error: …); check that no other writer holds boot (EBUSY) and that rshim runs", where: "§19.4"},
}

// match reports whether l is t's line.
func (t trap) match(l LogLine) bool {
	if t.kind != "" && t.kind != l.Kind || t.level != "" && t.level != l.Level || t.module != "" && t.module != l.Module {
		return false
	}
	if t.fold {
		return strings.Contains(strings.ToLower(l.Text), strings.ToLower(t.sub))
	}
	return strings.Contains(l.Text, t.sub)
}

// findTrap is the first trap l matches.
func findTrap(l LogLine) (trap, bool) {
	for _, t := range traps {
		if t.match(l) {
			return t, true
		}
	}
	return trap{}, false
}

// Finding is a known failure (or pending firmware) found in log lines.
type Finding struct {
	Line    string `json:"line"`
	Pending bool   `json:"pending,omitempty"` // NIC firmware waits for a host power cycle
	Cause   string `json:"cause,omitempty"`
	Fix     string `json:"fix,omitempty"`
	Source  string `json:"source"` // the section of hardware-formats.md
}

// Diagnose lists the known failures in lines: the rshim log, bfb-install's
// output, rshim's journal (ParseLog reads any of them), in order.
func Diagnose(lines []LogLine) []Finding {
	var out []Finding
	for _, l := range lines {
		if t, ok := findTrap(l); ok {
			out = append(out, Finding{Line: l.String(), Pending: t.pending, Cause: t.cause, Fix: t.fix, Source: t.where})
		}
	}
	return out
}
