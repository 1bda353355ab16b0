package system

import (
	"fmt"
	"strconv"

	"rig/hugepages"
)

// bootPoolShort says, for a hugepage pool on the running command line, when
// the kernel reserved fewer pages than the line asked ("" otherwise, or
// when the pool is unreadable): at boot the kernel takes them from
// contiguous free memory and silently grants what it finds (dmesg:
// "HugeTLB: allocating N of page size 1.00 GiB failed"). The line is then
// not "already on the command line" as if all were well.
func (s *kernelStep) bootPoolShort(it bootItem) string {
	if it.poolKB == 0 {
		return ""
	}
	p := fmt.Sprintf("/sys/kernel/mm/hugepages/hugepages-%dkB/nr_hugepages", it.poolKB)
	text, err := s.h.ReadString(p)
	if err != nil {
		return ""
	}
	got, err := strconv.Atoi(text)
	if err != nil || got >= it.poolCount {
		return ""
	}
	size := hugepages.FormatSize(it.poolKB)
	return fmt.Sprintf("kernel cmdline: %s is on the running kernel's command line, but boot asked %d, kernel reserved %d (%s is %d): "+
		"at boot the kernel found contiguous memory for only %d pages of %s (dmesg: \"HugeTLB: allocating %d of page size ... failed\"); "+
		"fix: ask fewer (kernel.hugepages count %d), free memory the firmware or other boot-time reservations (crashkernel=, cma=) take, or add memory; "+
		"pages that exist are what DPDK can use", it, it.poolCount, got, p, got, got, size, it.poolCount, got)
}
