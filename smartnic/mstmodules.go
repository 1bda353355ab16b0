package smartnic

import (
	"strings"

	"rig/internal/host"
)

// MSTModules is the "MST modules:" block of `mst status`: whether NVIDIA
// MFT's two kernel modules are loaded. MFT's mst script decides each with
// `is_module NAME` = `/sbin/lsmod | grep -w NAME`, and lsmod lists
// /proc/modules, so rig reads /proc/modules under the host root (absent
// under a fixture root: nothing loaded). rig itself never loads them.
type MSTModules struct {
	PCI     bool `json:"mstPci"`     // mst_pci: PCI memory (BAR) access, /dev/mst/*_pci_cr*
	PCIConf bool `json:"mstPciconf"` // mst_pciconf: configuration-cycle access, /dev/mst/*_pciconf*
}

// ReadMSTModules reads /proc/modules under the host root.
func ReadMSTModules(h *host.Host) MSTModules {
	s, _ := h.ReadString("/proc/modules") // unreadable or no module support: none loaded
	loaded := ParseProcModules(s)
	return MSTModules{PCI: loaded["mst_pci"], PCIConf: loaded["mst_pciconf"]}
}

// ParseProcModules returns the module names of /proc/modules text, one
// module a line, name first ("mst_pciconf 49152 0 - Live 0x0000000000000000
// (OE)", kernel/module/procfs.c m_show). Lines without a name are skipped.
func ParseProcModules(s string) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(s, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			out[f[0]] = true
		}
	}
	return out
}

// The lines of MFT's print_status (the mst script), verbatim; `mst status
// -v` prints "PCI devices:" right after them, with no blank line
// (hardware-formats.md §2.2 sample). The "MST PPC Bus module loaded" line
// (from /proc/devices, PowerPC only) is not modelled.
func (m MSTModules) lines() string {
	var b strings.Builder
	b.WriteString("MST modules:\n------------\n")
	if m.PCI {
		b.WriteString("    MST PCI module loaded\n")
	} else {
		b.WriteString("    MST PCI module is not loaded\n")
	}
	if m.PCIConf {
		b.WriteString("    MST PCI configuration module loaded\n")
	} else {
		b.WriteString("    MST PCI configuration module is not loaded\n")
	}
	return b.String()
}
