// Package pci is rig's one PCI address type and parser: playbooks, the OvS
// diagnosis and the bench configuration all read addresses through it.
package pci

import (
	"fmt"
	"strconv"
	"strings"
)

// Addr is a PCI function address, domain:bus:device.function.
type Addr struct {
	Domain uint32
	Bus    uint8
	Dev    uint8 // 0..0x1f
	Fn     uint8 // 0..7
}

// Parse reads "0000:03:00.0" or the short "03:00.0" (domain 0), in either
// hex case. The domain has 4 to 8 hex digits (Linux prints wider domains for
// VMD bridges), bus and device two each, the function one. Nothing may
// follow: cut devargs ("0000:03:00.0,representor=[0]") at the comma first.
func Parse(s string) (Addr, error) {
	a, err := parse(s)
	if err != nil {
		return Addr{}, fmt.Errorf("PCI address %q: %s; want domain:bus:device.function like 0000:03:00.0 (or 03:00.0)", s, err)
	}
	return a, nil
}

func parse(s string) (Addr, error) {
	var a Addr
	rest, fn, ok := strings.Cut(s, ".")
	if !ok {
		return a, fmt.Errorf("no '.' before the function")
	}
	parts := strings.Split(rest, ":")
	switch len(parts) {
	case 2:
		parts = append([]string{"0000"}, parts...)
	case 3:
	default:
		return a, fmt.Errorf("want 1 or 2 ':' separators, found %d", len(parts)-1)
	}
	dom, err := hexField(parts[0], 4, 8, "domain")
	if err != nil {
		return a, err
	}
	bus, err := hexField(parts[1], 2, 2, "bus")
	if err != nil {
		return a, err
	}
	dev, err := hexField(parts[2], 2, 2, "device")
	if err != nil {
		return a, err
	}
	if dev > 0x1f {
		return a, fmt.Errorf("device %s is over 1f", parts[2])
	}
	f, err := hexField(fn, 1, 1, "function")
	if err != nil {
		return a, err
	}
	if f > 7 {
		return a, fmt.Errorf("function %s is over 7", fn)
	}
	return Addr{Domain: uint32(dom), Bus: uint8(bus), Dev: uint8(dev), Fn: uint8(f)}, nil
}

// hexField parses a field of min..max hex digits (no sign, no 0x).
func hexField(s string, min, max int, what string) (uint64, error) {
	if len(s) < min || len(s) > max {
		if min == max {
			return 0, fmt.Errorf("%s %q: want %d hex digits", what, s, min)
		}
		return 0, fmt.Errorf("%s %q: want %d to %d hex digits", what, s, min, max)
	}
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return 0, fmt.Errorf("%s %q: not hex", what, s)
		}
	}
	return strconv.ParseUint(s, 16, 32)
}

// String is the canonical form sysfs uses: "0000:03:00.0", lower case.
func (a Addr) String() string {
	return fmt.Sprintf("%04x:%02x:%02x.%x", a.Domain, a.Bus, a.Dev, a.Fn)
}

// Canonical returns s in canonical form when it is a PCI address.
func Canonical(s string) (string, bool) {
	a, err := Parse(s)
	if err != nil {
		return "", false
	}
	return a.String(), true
}
