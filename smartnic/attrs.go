package smartnic

import (
	"fmt"
	"strconv"
	"strings"
)

// Parsers for sysfs attribute text (hardware-formats.md §4). Each takes the
// raw file content (trailing newline allowed) and never panics.

// PortState is a parsed ports/N/state or ports/N/phys_state value,
// e.g. "4: ACTIVE" -> {4, "ACTIVE"}, "5: LinkUp" -> {5, "LinkUp"}.
type PortState struct {
	Num  int    `json:"num"`
	Name string `json:"name"`
}

func (s PortState) String() string { return fmt.Sprintf("%d: %s", s.Num, s.Name) }

// IB port states (ib_port_state), as the kernel names them in sysfs.
const (
	StateDown   = 1
	StateActive = 4
)

// Physical port states (sysfs phys_state numbering).
const (
	PhysSleep    = 1
	PhysPolling  = 2
	PhysDisabled = 3
	PhysTraining = 4
	PhysLinkUp   = 5
	PhysErrRecov = 6
	PhysPhyTest  = 7
)

// ParsePortState parses "%d: %s" as the kernel writes state and phys_state
// (drivers/infiniband/core/sysfs.c). The name may contain spaces
// ("7: Phy Test", "9: <unknown>").
func ParsePortState(s string) (PortState, error) {
	t := strings.TrimSpace(s)
	i := strings.Index(t, ":")
	if i <= 0 {
		return PortState{}, fmt.Errorf("port state %q: want \"N: NAME\" (e.g. \"4: ACTIVE\")", t)
	}
	n, err := strconv.Atoi(strings.TrimSpace(t[:i]))
	if err != nil || n < 0 || n > 255 {
		return PortState{}, fmt.Errorf("port state %q: %q is not a state number 0..255", t, t[:i])
	}
	name := strings.TrimSpace(t[i+1:])
	if name == "" {
		return PortState{}, fmt.Errorf("port state %q: no name after the number", t)
	}
	return PortState{Num: n, Name: name}, nil
}

// rdmaStateNames and rdmaPhysNames are how iproute2's `rdma link` prints the
// numbers (iproute2 rdma/link.c, hardware-formats.md §4).
var rdmaStateNames = []string{"NOP", "DOWN", "INIT", "ARMED", "ACTIVE", "ACTIVE_DEFER"}
var rdmaPhysNames = []string{"NOP", "SLEEP", "POLLING", "DISABLED", "ARMED", "LINK_UP",
	"LINK_ERROR_RECOVER", "PHY_TEST", "UNKNOWN", "OPA_OFFLINE", "UNKNOWN", "OPA_TEST"}

// RDMAStateName is the `rdma link` name of a port state number.
func RDMAStateName(n int) string {
	if n >= 0 && n < len(rdmaStateNames) {
		return rdmaStateNames[n]
	}
	return "UNKNOWN"
}

// RDMAPhysName is the `rdma link` name of a physical state number.
func RDMAPhysName(n int) string {
	if n >= 0 && n < len(rdmaPhysNames) {
		return rdmaPhysNames[n]
	}
	return "UNKNOWN"
}

// LinkSpeed is a parsed PCIe current/max_link_speed.
type LinkSpeed struct {
	Text string  `json:"text"`          // verbatim, e.g. "16.0 GT/s PCIe"
	GTs  float64 `json:"gtPerS"`        // 16.0; 0 when unknown
	Gen  int     `json:"gen,omitempty"` // PCIe generation from the rate; 0 unknown
}

// ParseLinkSpeed parses "16.0 GT/s PCIe" (kernels >= 5.7), "16 GT/s"
// (older), "2.5 GT/s" and "Unknown" (GTs 0, no error).
func ParseLinkSpeed(s string) (LinkSpeed, error) {
	t := strings.TrimSpace(s)
	ls := LinkSpeed{Text: t}
	if t == "" {
		return ls, fmt.Errorf("PCIe link speed: empty")
	}
	if strings.HasPrefix(t, "Unknown") {
		return ls, nil
	}
	f := strings.Fields(t)
	if len(f) < 2 || f[1] != "GT/s" || (len(f) == 3 && f[2] != "PCIe") || len(f) > 3 {
		return ls, fmt.Errorf("PCIe link speed %q: want e.g. \"16.0 GT/s PCIe\"", t)
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil || v <= 0 || v > 1000 {
		return ls, fmt.Errorf("PCIe link speed %q: bad rate %q", t, f[0])
	}
	ls.GTs = v
	for gen, r := range []float64{0, 2.5, 5, 8, 16, 32, 64, 128} {
		if gen > 0 && v == r {
			ls.Gen = gen
		}
	}
	return ls, nil
}

// ParseHexID parses "0x15b3" / "0xa2d6" (pci-sysfs "0x%04x").
func ParseHexID(s string) (uint16, error) {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "0x") {
		return 0, fmt.Errorf("PCI id %q: want 0x followed by hex digits", t)
	}
	v, err := strconv.ParseUint(t[2:], 16, 16)
	if err != nil {
		return 0, fmt.Errorf("PCI id %q: %w", t, err)
	}
	return uint16(v), nil
}

// ParseInt parses a decimal attribute such as numa_node ("-1"), speed,
// current_link_width or sriov_numvfs.
func ParseInt(s string) (int, error) {
	t := strings.TrimSpace(s)
	v, err := strconv.Atoi(t)
	if err != nil {
		return 0, fmt.Errorf("%q is not a decimal number", t)
	}
	return v, nil
}

// ParseNetFlags parses /sys/class/net/<if>/flags ("0x1003") and reports
// IFF_UP (administratively up).
func ParseNetFlags(s string) (flags uint32, adminUp bool, err error) {
	t := strings.TrimSpace(s)
	v, err := strconv.ParseUint(strings.TrimPrefix(t, "0x"), 16, 32)
	if err != nil || !strings.HasPrefix(t, "0x") {
		return 0, false, fmt.Errorf("netdev flags %q: want hex like 0x1003", t)
	}
	return uint32(v), v&0x1 != 0, nil
}

// ParseEswitchShow parses `devlink dev eswitch show pci/<bdf>` text:
// "pci/0000:03:00.0: mode switchdev inline-mode none encap-mode basic"
// (hardware-formats.md §4; fields appear only when reported). It returns
// the mode ("legacy", "switchdev", "switchdev_inactive"), "" when absent.
func ParseEswitchShow(out string) (string, error) {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if !strings.HasSuffix(f[0], ":") {
			return "", fmt.Errorf("devlink eswitch output %q: want \"pci/<bdf>: mode …\"", strings.TrimSpace(line))
		}
		for i := 1; i+1 < len(f); i += 2 {
			if f[i] == "mode" {
				return f[i+1], nil
			}
		}
		return "", nil
	}
	return "", fmt.Errorf("devlink eswitch output: empty")
}
