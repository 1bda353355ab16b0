package smartnic

import (
	"fmt"
	"strconv"
	"strings"

	"rig/internal/host"
)

// IBAddr is the InfiniBand addressing of a port: what `rdma link` prints
// before "state" on an InfiniBand port. The kernel sends these four only
// when rdma_protocol_ib(port) (drivers/infiniband/core/nldev.c
// fill_port_info), so RoCE (Ethernet) ports have none.
type IBAddr struct {
	// SubnetPrefix as iproute2 prints it: "fe80:0000:0000:0000".
	SubnetPrefix string `json:"subnetPrefix"`
	LID          uint32 `json:"lid"`
	SMLID        uint32 `json:"smLid"`
	LMC          uint8  `json:"lmc"`
}

// readIBAddr reads them from the port's sysfs dir when its link_layer is
// InfiniBand (drivers/infiniband/core/sysfs.c): lid and sm_lid "0x%x",
// lid_mask_count "%d" (LMC; no file is named lmc), and gids/0 "%pI6", whose
// upper 64 bits are the subnet prefix (GID 0 = GidPrefix:PortGUID; sysfs
// has no subnet_prefix file, netlink takes it from PortInfo's GidPrefix).
// nil, nil for any other link layer.
func readIBAddr(h *host.Host, dir, linkLayer string) (*IBAddr, error) {
	if strings.TrimSpace(linkLayer) != "InfiniBand" {
		return nil, nil
	}
	rd := func(name string) (string, error) {
		s, err := h.ReadString(dir + "/" + name)
		if err != nil {
			return "", fmt.Errorf("InfiniBand port: read %s: %w", name, err)
		}
		return s, nil
	}
	a := &IBAddr{}
	for _, f := range []struct {
		name  string
		parse func(string) error
	}{
		{"lid", func(s string) (err error) { a.LID, err = ParseSysfsHex32(s); return }},
		{"sm_lid", func(s string) (err error) { a.SMLID, err = ParseSysfsHex32(s); return }},
		{"lid_mask_count", func(s string) (err error) { a.LMC, err = parseLMC(s); return }},
		{"gids/0", func(s string) (err error) { a.SubnetPrefix, err = ParseGIDPrefix(s); return }},
	} {
		s, err := rd(f.name)
		if err != nil {
			return nil, err
		}
		if err := f.parse(s); err != nil {
			return nil, fmt.Errorf("InfiniBand port: %s: %w", f.name, err)
		}
	}
	return a, nil
}

// ParseSysfsHex32 parses "0x%x" (lid, sm_lid): "0x2a" -> 42, "0xffff".
func ParseSysfsHex32(s string) (uint32, error) {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "0x") || len(t) == 2 {
		return 0, fmt.Errorf("%q: want 0x followed by hex digits (kernel \"0x%%x\")", t)
	}
	v, err := strconv.ParseUint(t[2:], 16, 32)
	if err != nil {
		return 0, fmt.Errorf("%q: not a 32-bit hex number", t)
	}
	return uint32(v), nil
}

func parseLMC(s string) (uint8, error) {
	t := strings.TrimSpace(s)
	v, err := strconv.ParseUint(t, 10, 8)
	if err != nil { // netlink carries it as u8 (IBA PortInfo: 3 bits)
		return 0, fmt.Errorf("%q: want a decimal LMC 0..255", t)
	}
	return uint8(v), nil
}

// ParseGIDPrefix takes a GID as sysfs prints it ("%pI6": eight groups of
// four lower-case hex digits, "fe80:0000:0000:0000:0c42:a103:0017:2f4e")
// and returns its upper 64 bits the way iproute2 prints subnet_prefix
// ("%04x:%04x:%04x:%04x", rdma/link.c): "fe80:0000:0000:0000".
func ParseGIDPrefix(s string) (string, error) {
	t := strings.TrimSpace(s)
	g := strings.Split(t, ":")
	if len(g) != 8 {
		return "", fmt.Errorf("GID %q: want 8 colon-separated groups of 4 hex digits", t)
	}
	var v [4]uint64
	for i, grp := range g {
		n, err := strconv.ParseUint(grp, 16, 16)
		if err != nil || len(grp) != 4 {
			return "", fmt.Errorf("GID %q: group %d %q is not 4 hex digits", t, i+1, grp)
		}
		if i < 4 {
			v[i] = n
		}
	}
	return fmt.Sprintf("%04x:%04x:%04x:%04x", v[0], v[1], v[2], v[3]), nil
}
