package mlxconfig

import (
	"fmt"
	"strconv"
	"strings"
)

// FWVersion is a NIC firmware version: major.minor.subminor, printed
// "%d.%d.%04d" (mlx5 devlink, ethtool, sysfs fw_ver; mstflint when the
// minor is under 100) or "%d.%04d.%04d" (mstflint's VERSION_FORMAT for a
// minor of 100 or more), hardware-formats.md §20.2.
type FWVersion struct {
	Major, Minor, Sub int
}

// ParseFWVersion reads "24.43.1014" (or "16.1000.1234").
func ParseFWVersion(s string) (FWVersion, error) {
	parts := strings.Split(s, ".")
	if len(parts) != 3 {
		return FWVersion{}, fmt.Errorf("firmware version %q: want major.minor.subminor like 24.43.1014", s)
	}
	var n [3]int
	for i, p := range parts {
		if p == "" || len(p) > 5 || strings.TrimLeft(p, "0123456789") != "" {
			return FWVersion{}, fmt.Errorf("firmware version %q: %q is not a number; want major.minor.subminor like 24.43.1014", s, p)
		}
		n[i], _ = strconv.Atoi(p)
	}
	return FWVersion{n[0], n[1], n[2]}, nil
}

// String prints v as mstflint does.
func (v FWVersion) String() string {
	if v.Minor < 100 {
		return fmt.Sprintf("%d.%d.%04d", v.Major, v.Minor, v.Sub)
	}
	return fmt.Sprintf("%d.%04d.%04d", v.Major, v.Minor, v.Sub)
}

// MarshalText is String, "" for an unset version (JSON).
func (v FWVersion) MarshalText() ([]byte, error) {
	if v.IsZero() {
		return []byte{}, nil
	}
	return []byte(v.String()), nil
}

// IsZero reports an unset version.
func (v FWVersion) IsZero() bool { return v == FWVersion{} }

// Firmware is a device's firmware as rig reads it without MFT: the
// version it runs, the one on flash (stored, next boot), the board's PSID.
type Firmware struct {
	Device  string    `json:"device"` // pci/0000:03:00.0 or the BDF mstflint was given
	Running FWVersion `json:"running"`
	Stored  FWVersion `json:"stored"` // "" when the tool reported none
	PSID    string    `json:"psid,omitempty"`
	Source  string    `json:"source"` // "devlink dev info" or "mstflint q"
}

// Pending reports a burned image that does not run yet (stored differs
// from running): devlink reports stored equal to running when nothing is
// pending (mlx5 devlink.c: "no pending version, return running (stored)
// version"), and mstflint prints "FW Version(Running):" only when it
// differs from the flash image (§20.2).
func (f Firmware) Pending() bool { return !f.Stored.IsZero() && f.Stored != f.Running }
