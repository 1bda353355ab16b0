// Package cpuset reads and writes CPU sets: hex masks (OvS other_config
// pmd-cpu-mask, dpdk-lcore-mask) and the kernel's cpulist format.
package cpuset

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// MaxCPUMaskDigits bounds a hex CPU mask: 256 digits name CPUs 0..1023,
// above DPDK's RTE_MAX_LCORE (128 in Debian's build) and any BlueField or
// ConnectX host; a longer value is a typo or garbage, not a mask.
const MaxCPUMaskDigits = 256

// ParseCPUMask returns the CPUs a hex mask ("0x6", "6", "0XF0") selects, in
// ascending order.
func ParseCPUMask(mask string) ([]int, error) {
	hex := strings.TrimPrefix(strings.TrimPrefix(mask, "0x"), "0X")
	if hex == "" {
		return nil, fmt.Errorf("cpu mask %q: no hex digits", mask)
	}
	if len(hex) > MaxCPUMaskDigits {
		return nil, fmt.Errorf("cpu mask of %d hex digits: at most %d (CPUs 0..%d)", len(hex), MaxCPUMaskDigits, MaxCPUMaskDigits*4-1)
	}
	var cpus []int
	for i := len(hex) - 1; i >= 0; i-- {
		v, err := strconv.ParseUint(hex[i:i+1], 16, 8)
		if err != nil {
			return nil, fmt.Errorf("cpu mask %q: %q is not a hex digit", mask, hex[i:i+1])
		}
		base := (len(hex) - 1 - i) * 4
		for b := 0; b < 4; b++ {
			if v&(1<<b) != 0 {
				cpus = append(cpus, base+b)
			}
		}
	}
	return cpus, nil
}

// ParseCPUList parses the kernel's cpulist format ("0-3,8,10-11").
func ParseCPUList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	var cpus []int
	if s == "" {
		return nil, nil
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("cpu list %q: bad entry %q", s, part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("cpu list %q: bad range %q", s, part)
			}
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	sort.Ints(cpus)
	return cpus, nil
}

// FormatCPUList writes cpus (ascending) in cpulist format ("0-3,8").
func FormatCPUList(cpus []int) string {
	var parts []string
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(cpus[i]))
		} else {
			parts = append(parts, strconv.Itoa(cpus[i])+"-"+strconv.Itoa(cpus[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// OnlineCPUsFile is where the kernel lists the online CPUs.
const OnlineCPUsFile = "/sys/devices/system/cpu/online"

// MaskFor returns the smallest hex mask selecting cpus ("0x6" for 1,2).
func MaskFor(cpus []int) string {
	if len(cpus) == 0 {
		return "0x0"
	}
	max := cpus[len(cpus)-1]
	digits := make([]byte, max/4+1)
	for _, c := range cpus {
		digits[c/4] |= 1 << (c % 4)
	}
	var b strings.Builder
	b.WriteString("0x")
	for i := len(digits) - 1; i >= 0; i-- {
		b.WriteString(strconv.FormatUint(uint64(digits[i]), 16))
	}
	return b.String()
}
