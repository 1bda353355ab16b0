package bench

import (
	"encoding/binary"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// IPRange is first + count consecutive IPv4 addresses.
type IPRange struct {
	First uint32
	N     uint32
}

// ParseIPRange parses "10.0.0.1" or "10.0.0.1-10.0.0.16".
func ParseIPRange(s string) (IPRange, error) {
	a, b, isRange := strings.Cut(strings.TrimSpace(s), "-")
	ip := func(x string) (uint32, error) {
		p := net.ParseIP(strings.TrimSpace(x)).To4()
		if p == nil {
			return 0, fmt.Errorf("IPv4 range %q: %q is not an IPv4 address", s, x)
		}
		return binary.BigEndian.Uint32(p), nil
	}
	lo, err := ip(a)
	if err != nil {
		return IPRange{}, err
	}
	hi := lo
	if isRange {
		if hi, err = ip(b); err != nil {
			return IPRange{}, err
		}
	}
	if hi < lo {
		return IPRange{}, fmt.Errorf("IPv4 range %q: end before start", s)
	}
	return IPRange{First: lo, N: hi - lo + 1}, nil
}

// PortRange is first + count consecutive UDP ports.
type PortRange struct {
	First uint16
	N     uint32
}

// ParsePortRange parses "1024" or "1024-1087".
func ParsePortRange(s string) (PortRange, error) {
	a, b, isRange := strings.Cut(strings.TrimSpace(s), "-")
	p := func(x string) (uint16, error) {
		v, err := strconv.ParseUint(strings.TrimSpace(x), 10, 16)
		if err != nil {
			return 0, fmt.Errorf("UDP port range %q: %q is not a port 0-65535", s, x)
		}
		return uint16(v), nil
	}
	lo, err := p(a)
	if err != nil {
		return PortRange{}, err
	}
	hi := lo
	if isRange {
		if hi, err = p(b); err != nil {
			return PortRange{}, err
		}
	}
	if hi < lo {
		return PortRange{}, fmt.Errorf("UDP port range %q: end before start", s)
	}
	return PortRange{First: lo, N: uint32(hi-lo) + 1}, nil
}

// ParseMAC parses a colon-separated MAC address.
func ParseMAC(s string) ([6]byte, error) {
	var m [6]byte
	hw, err := net.ParseMAC(s)
	if err != nil || len(hw) != 6 {
		return m, fmt.Errorf("MAC %q: want aa:bb:cc:dd:ee:ff", s)
	}
	copy(m[:], hw)
	return m, nil
}
