// Package cpuset is CPU sets as Linux and DPDK write them: the kernel's
// cpulist format ("0-3,8", sysfs online/isolated/cpulist files, EAL -l),
// hex masks (OvS pmd-cpu-mask, dpdk-lcore-mask) and the host's online CPUs,
// read through the host seam.
package cpuset

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// MaxCPUs bounds a cpulist range: Linux's NR_CPUS is at most 8192.
const MaxCPUs = 8192

// MaxMaskDigits bounds a hex CPU mask: 256 digits name CPUs 0..1023,
// above DPDK's RTE_MAX_LCORE (128 in Debian's build) and any BlueField or
// ConnectX host; a longer value is a typo or garbage, not a mask.
const MaxMaskDigits = 256

// ParseMask returns the CPUs a hex mask ("0x6", "6", "0XF0") selects, in
// ascending order.
func ParseMask(mask string) ([]int, error) {
	hex := strings.TrimPrefix(strings.TrimPrefix(mask, "0x"), "0X")
	if hex == "" {
		return nil, fmt.Errorf("cpu mask %q: no hex digits", mask)
	}
	if len(hex) > MaxMaskDigits {
		return nil, fmt.Errorf("cpu mask of %d hex digits: at most %d (CPUs 0..%d)", len(hex), MaxMaskDigits, MaxMaskDigits*4-1)
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

// ParseList parses the kernel's cpulist format ("0-3,8,10-11", white
// space around entries allowed) into sorted unique CPUs; "" is no CPU.
func ParseList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	seen := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
		a, b, isRange := strings.Cut(strings.TrimSpace(part), "-")
		lo, err := strconv.Atoi(a)
		if err != nil || lo < 0 {
			return nil, fmt.Errorf("%q is not a number or range", part)
		}
		hi := lo
		if isRange {
			if hi, err = strconv.Atoi(b); err != nil || hi < lo {
				return nil, fmt.Errorf("%q is not a number or range", part)
			}
		}
		if hi-lo >= MaxCPUs {
			return nil, fmt.Errorf("range %q too large", part)
		}
		for v := lo; v <= hi; v++ {
			seen[v] = true
		}
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

// FormatList writes cpus (ascending) in cpulist format ("0-3,8").
func FormatList(cpus []int) string {
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

// OnlineFile is where the kernel lists the online CPUs.
const OnlineFile = "/sys/devices/system/cpu/online"

// Reader reads host files under the host root (internal/host.Host is one).
type Reader interface {
	ReadFile(p string) ([]byte, error)
	Path(p string) string
}

// Online reads the host's online CPUs (OnlineFile) through r.
func Online(r Reader) ([]int, error) {
	raw, err := r.ReadFile(OnlineFile)
	if err != nil {
		return nil, err
	}
	cpus, err := ParseList(string(raw))
	if err != nil {
		return nil, fmt.Errorf("%s: cpu list %q: %w", r.Path(OnlineFile), strings.TrimSpace(string(raw)), err)
	}
	return cpus, nil
}

// CheckMaskOnline checks that every CPU mask (the setting key, e.g. OvS's
// pmd-cpu-mask) selects is online on the host r reads. It returns "" when
// it is, else what is wrong and the online set.
func CheckMaskOnline(r Reader, key, mask string) (string, error) {
	cpus, err := ParseMask(mask)
	if err != nil {
		return "", err
	}
	online, err := Online(r)
	if err != nil {
		return "", fmt.Errorf("read the online CPUs: %w", err)
	}
	on := map[int]bool{}
	for _, c := range online {
		on[c] = true
	}
	var missing []int
	for _, c := range cpus {
		if !on[c] {
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 {
		return "", nil
	}
	return fmt.Sprintf("%s %s selects CPU(s) %s, which this host does not have online (online CPUs: %s, from %s)",
		key, mask, FormatList(missing), FormatList(online), OnlineFile), nil
}

// Mask returns the smallest hex mask selecting cpus ("0x6" for 1,2).
func Mask(cpus []int) string {
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
