package doctor

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"rig/internal/cpuset"
	"rig/internal/host"
)

// cpuInfo is the host's CPUs as the kernel lists them.
type cpuInfo struct {
	online   []int
	isOnline map[int]bool
	node     map[int]int // CPU -> NUMA node; empty without /sys/devices/system/node
	nodes    []int
	isolated map[int]bool // /sys/devices/system/cpu/isolated (isolcpus=)
	nohz     map[int]bool // /sys/devices/system/cpu/nohz_full
}

func readCPUList(h *host.Host, p string) ([]int, error) {
	s, err := h.ReadString(p)
	if err != nil {
		return nil, err
	}
	if s == "" || s == "(null)" {
		return nil, nil
	}
	return cpuset.ParseCPUList(s)
}

func setOf(xs []int) map[int]bool {
	m := map[int]bool{}
	for _, x := range xs {
		m[x] = true
	}
	return m
}

func readCPUs(h *host.Host) (cpuInfo, error) {
	var c cpuInfo
	var err error
	if c.online, err = readCPUList(h, cpuset.OnlineCPUsFile); err != nil {
		return c, fmt.Errorf("doctor: online CPUs: %w", err)
	}
	c.isOnline = setOf(c.online)
	iso, _ := readCPUList(h, "/sys/devices/system/cpu/isolated")
	c.isolated = setOf(iso)
	nohz, _ := readCPUList(h, "/sys/devices/system/cpu/nohz_full")
	c.nohz = setOf(nohz)
	c.node = map[int]int{}
	dirs, _ := h.Glob("/sys/devices/system/node/node[0-9]*")
	for _, d := range dirs {
		var n int
		if _, err := fmt.Sscanf(path.Base(d), "node%d", &n); err != nil {
			continue
		}
		cpus, err := readCPUList(h, d+"/cpulist")
		if err != nil {
			continue
		}
		c.nodes = append(c.nodes, n)
		for _, cpu := range cpus {
			c.node[cpu] = n
		}
	}
	return c, nil
}

// maskCPUs is the CPUs an OvS mask key selects; ok false when unset.
func maskCPUs(o *OVS, key string) (cpus []int, mask string, ok bool, err error) {
	if o == nil || o.OtherConfig[key] == "" {
		return nil, "", false, nil
	}
	mask = o.OtherConfig[key]
	cpus, err = cpuset.ParseCPUMask(mask)
	return cpus, mask, true, err
}

// usedCPUs are the CPUs that poll: OvS's PMDs and rig's lcores (all online
// CPUs when neither is known).
func usedCPUs(in Input, c cpuInfo) []int {
	pmd, _, _, _ := maskCPUs(in.OVS, "pmd-cpu-mask")
	used := keys(setOf(append(append([]int(nil), pmd...), in.Cores...)))
	if len(used) == 0 {
		return c.online
	}
	return used
}

func missing(cpus []int, have map[int]bool) []int {
	var out []int
	for _, x := range cpus {
		if !have[x] {
			out = append(out, x)
		}
	}
	return out
}

// checkCPUs: masks and lcores naming CPUs the host does not have (error),
// rig's lcores on OvS's PMD CPUs (error), polling CPUs not isolated
// (warning).
func checkCPUs(in Input, c cpuInfo) []Finding {
	var fs []Finding
	online := cpuset.FormatCPUList(c.online)
	pmd := []int(nil)
	for _, key := range []string{"pmd-cpu-mask", "dpdk-lcore-mask"} {
		cpus, mask, ok, err := maskCPUs(in.OVS, key)
		obj := key + " " + mask
		switch {
		case !ok:
			continue
		case err != nil:
			fs = append(fs, Finding{Check: "cpus", Severity: Error, Object: obj, Evidence: fmt.Sprintf("%s (%s): %v", key, in.OVS.Source, err),
				Fix: "give a hex CPU mask like 0x6 (CPUs 1 and 2)"})
			continue
		}
		if miss := missing(cpus, c.isOnline); len(miss) > 0 {
			fs = append(fs, Finding{Check: "cpus", Severity: Error, Object: obj,
				Evidence: fmt.Sprintf("%s %s (%s) selects CPU(s) %s, which are not online (online: %s, %s)", key, mask, in.OVS.Source, cpuset.FormatCPUList(miss), online, cpuset.OnlineCPUsFile),
				Fix:      fmt.Sprintf("set %s to online CPUs only, e.g. %s", key, cpuset.MaskFor(dropMissing(cpus, c.isOnline, c.online)))})
		}
		if key == "pmd-cpu-mask" {
			pmd = cpus
		}
	}
	if len(in.Cores) > 0 {
		if miss := missing(in.Cores, c.isOnline); len(miss) > 0 {
			fs = append(fs, Finding{Check: "cpus", Severity: Error, Object: "rig lcores " + cpuset.FormatCPUList(in.Cores),
				Evidence: fmt.Sprintf("CPU(s) %s are not online (online: %s)", cpuset.FormatCPUList(miss), online), Fix: "give --cores from the online CPUs"})
		}
		if both := intersect(in.Cores, pmd); len(both) > 0 {
			fs = append(fs, Finding{Check: "cpus", Severity: Error, Object: "rig lcores " + cpuset.FormatCPUList(in.Cores),
				Evidence: fmt.Sprintf("CPU(s) %s are also in OvS's pmd-cpu-mask (%s): two pollers on one CPU each get about half, so a check measures the sharing", cpuset.FormatCPUList(both), in.OVS.Source),
				Fix:      "give rig's dataplane CPUs outside pmd-cpu-mask (the check step picks them so by itself)"})
		}
	}
	fs = append(fs, isolation(c, "OvS PMD CPUs", pmd)...)
	fs = append(fs, isolation(c, "rig lcores", in.Cores)...)
	return fs
}

func dropMissing(cpus []int, have map[int]bool, online []int) []int {
	var out []int
	for _, x := range cpus {
		if have[x] {
			out = append(out, x)
		}
	}
	if len(out) == 0 && len(online) > 1 {
		out = online[len(online)-1:]
	}
	return out
}

func intersect(a, b []int) []int {
	bs := setOf(b)
	var out []int
	for _, x := range a {
		if bs[x] {
			out = append(out, x)
		}
	}
	return out
}

// isolation warns when polling CPUs are not isolated from the scheduler.
func isolation(c cpuInfo, what string, cpus []int) []Finding {
	cpus = intersect(cpus, c.online) // the others are an error of their own
	if len(cpus) == 0 {
		return nil
	}
	obj := what + " " + cpuset.FormatCPUList(cpus)
	notIso := missing(cpus, c.isolated)
	if len(notIso) == 0 {
		ev := "isolated (isolcpus: /sys/devices/system/cpu/isolated)"
		if m := missing(cpus, c.nohz); len(m) > 0 {
			ev += "; not nohz_full: " + cpuset.FormatCPUList(m)
		}
		return []Finding{{Check: "cpus", Severity: OK, Object: obj, Evidence: ev}}
	}
	list := cpuset.FormatCPUList(notIso)
	return []Finding{{Check: "cpus", Severity: Warning, Object: obj,
		Evidence: fmt.Sprintf("CPU(s) %s are not isolated (/sys/devices/system/cpu/isolated: %q): the scheduler runs other tasks there and a poller loses cycles", list, strings.TrimSpace(cpuset.FormatCPUList(keys(c.isolated)))),
		Fix:      fmt.Sprintf("kernel section args [isolcpus=%s, nohz_full=%s, rcu_nocbs=%s], then reboot", list, list, list)}}
}

func keys(m map[int]bool) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}
