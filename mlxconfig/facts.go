package mlxconfig

import (
	"path"
	"strings"

	"rig/internal/host"
	"rig/internal/pci"
)

// Presence is whether a path a fact names exists: unknown when it was not
// looked at.
type Presence int8

const (
	PresenceUnknown Presence = iota
	Present
	Absent
)

// HostFacts are what the host shows about the device a failing firmware
// tool was given. mstconfig says only "-E- Failed to open the device"
// whatever failed inside mopen (mtcr_ul/mtcr_ul_com.c mopen_ul_int sets
// errno and returns NULL: EACCES for a non-root caller, EINVAL for a name
// it cannot parse, ENOTSUP for an unknown device id, and NULL for a BDF
// with no sysfs entry), so the host is asked what the tool was not. A
// zero HostFacts knows nothing; ClassifyRun uses each fact only when set.
type HostFacts struct {
	// EUID is the effective uid the tool ran with (rig's), when
	// EUIDKnown.
	EUID      int
	EUIDKnown bool
	// PCIPath is /sys/bus/pci/devices/<BDF> for a -d that is a PCI
	// address ("" otherwise) and PCI whether it exists.
	PCIPath string
	PCI     Presence
	// Driver is the driver bound to that function (the base name of
	// PCIPath/driver, or mlx5_core when /sys/bus/pci/drivers/mlx5_core/<BDF>
	// exists; "" none); DriverRead says it was looked at.
	Driver     string
	DriverRead bool
	// MSTNode is a -d under /dev/mst/ (MFT's device nodes, created by
	// `mst start`) and MST whether it exists.
	MSTNode string
	MST     Presence
	// Lockdown is the active mode of /sys/kernel/security/lockdown
	// ("none", "integrity", "confidentiality"; the kernel brackets it:
	// "none [integrity] confidentiality"), "" when unread; LockdownText
	// the file's text.
	Lockdown     string
	LockdownText string
}

// LockedDown reports a kernel lockdown mode other than none: Secure Boot
// turns it on, and it refuses user-space config-space and BAR access
// ("direct PCI access", kernel_lockdown(7)).
func (h *HostFacts) LockedDown() bool {
	return h != nil && h.Lockdown != "" && h.Lockdown != "none"
}

// ReadHostFacts reads the facts about dev (a -d argument: a PCI address
// or a /dev/mst path) under h's root; euid < 0 leaves the uid unknown.
func ReadHostFacts(h *host.Host, dev string, euid int) HostFacts {
	f := HostFacts{EUID: euid, EUIDKnown: euid >= 0}
	dev = strings.TrimSpace(dev)
	switch {
	case strings.HasPrefix(dev, "/dev/mst/"):
		f.MSTNode = path.Clean(dev)
		f.MST = presence(h, f.MSTNode)
	default:
		if bdf, ok := pci.Canonical(strings.ToLower(dev)); ok {
			f.PCIPath = "/sys/bus/pci/devices/" + bdf
			f.PCI = presence(h, f.PCIPath)
			if f.PCI == Present {
				f.DriverRead = true
				if link, err := h.Readlink(f.PCIPath + "/driver"); err == nil {
					f.Driver = path.Base(link)
				}
				// mlx5_core's own entry for the function, where the
				// function's driver link is missing or names another
				if f.Driver != "mlx5_core" && presence(h, "/sys/bus/pci/drivers/mlx5_core/"+bdf) == Present {
					f.Driver = "mlx5_core"
				}
			}
		}
	}
	if s, err := h.ReadString("/sys/kernel/security/lockdown"); err == nil {
		f.LockdownText = strings.TrimSpace(s)
		f.Lockdown = ParseLockdown(f.LockdownText)
	}
	return f
}

func presence(h *host.Host, p string) Presence {
	if _, err := h.Lstat(p); err == nil {
		return Present
	}
	return Absent
}

// ParseLockdown returns the bracketed (active) mode of the kernel's
// lockdown file ("none [integrity] confidentiality" → "integrity"), ""
// when none is bracketed.
func ParseLockdown(s string) string {
	i := strings.Index(s, "[")
	if i < 0 {
		return ""
	}
	j := strings.Index(s[i:], "]")
	if j < 0 {
		return ""
	}
	return strings.TrimSpace(s[i+1 : i+j])
}
