package doctor

import (
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"

	"rig/hugepages"
	"rig/internal/cpuset"
	"rig/internal/host"
	"rig/smartnic"
)

// nics are the NIC physical functions (not VFs, not RShim).
func nics(inv *smartnic.Inventory) []smartnic.Function {
	var out []smartnic.Function
	for _, f := range inv.Functions {
		if f.Kind == "nic" {
			out = append(out, f)
		}
	}
	return out
}

// checkPCIe: a link trained below what slot and card can do (mlnx_tune's
// "PCI width/speed" check) cuts the port's bandwidth.
func checkPCIe(inv *smartnic.Inventory) []Finding {
	var fs []Finding
	for _, f := range nics(inv) {
		l := f.Link
		if l == nil || l.Max.GTs == 0 {
			continue
		}
		ev := fmt.Sprintf("%s: x%d at %s (max x%d at %s; current_link_* / max_link_* in sysfs)", f.Model, l.Width, l.Current.Text, l.MaxWidth, l.Max.Text)
		if !l.Degraded {
			fs = append(fs, Finding{Check: "pcie", Severity: OK, Object: f.BDF, Evidence: ev})
			continue
		}
		fs = append(fs, Finding{Check: "pcie", Severity: Warning, Object: f.BDF, Evidence: ev + ": the link trained below its maximum, so the port cannot reach line rate at small frames",
			Fix: "seat the card in a slot with the full width and generation (check the board manual and the BIOS's PCIe bifurcation / link speed settings)"})
	}
	return fs
}

// checkNUMA: polling CPUs and hugepages on another node than the NIC pay
// the inter-socket link on every packet.
func checkNUMA(h *host.Host, inv *smartnic.Inventory, in Input, c cpuInfo) []Finding {
	if len(c.nodes) < 2 {
		return []Finding{{Check: "numa", Severity: Info, Object: "NUMA", Evidence: fmt.Sprintf("%d NUMA node(s) in /sys/devices/system/node: locality holds by construction", len(c.nodes))}}
	}
	pmd, _, _, _ := maskCPUs(in.OVS, "pmd-cpu-mask")
	var fs []Finding
	for _, f := range nics(inv) {
		if f.NUMANode < 0 {
			fs = append(fs, Finding{Check: "numa", Severity: Info, Object: f.BDF, Evidence: "numa_node -1: the firmware reports no node for this function"})
			continue
		}
		for _, g := range []struct {
			what string
			cpus []int
		}{{"OvS PMD CPUs", pmd}, {"rig lcores", in.Cores}} {
			var far []int
			for _, cpu := range g.cpus {
				if n, ok := c.node[cpu]; ok && n != f.NUMANode {
					far = append(far, cpu)
				}
			}
			if len(far) > 0 {
				fs = append(fs, Finding{Check: "numa", Severity: Warning, Object: f.BDF,
					Evidence: fmt.Sprintf("%s (node %d) is polled by %s %s on another node", f.Model, f.NUMANode, g.what, cpuset.FormatCPUList(far)),
					Fix:      fmt.Sprintf("use CPUs of node %d (/sys/devices/system/node/node%d/cpulist)", f.NUMANode, f.NUMANode)})
			}
		}
		if pages := nodePages(h, f.NUMANode); pages == 0 && nodePagesAll(h, c.nodes) > 0 {
			fs = append(fs, Finding{Check: "numa", Severity: Warning, Object: f.BDF,
				Evidence: fmt.Sprintf("no hugepages on node %d, the NIC's, while other nodes have some: DPDK's mbufs for this port live across the socket link", f.NUMANode),
				Fix:      fmt.Sprintf("reserve pages on node %d (hugepages section: node: %d)", f.NUMANode, f.NUMANode)})
		}
	}
	return fs
}

func nodePages(h *host.Host, node int) int {
	dirs, _ := h.Glob(fmt.Sprintf("/sys/devices/system/node/node%d/hugepages/hugepages-*", node))
	total := 0
	for _, d := range dirs {
		s, _ := h.ReadString(d + "/nr_hugepages")
		n, _ := strconv.Atoi(s)
		total += n
	}
	return total
}

func nodePagesAll(h *host.Host, nodes []int) int {
	t := 0
	for _, n := range nodes {
		t += nodePages(h, n)
	}
	return t
}

// checkIOMMU: vfio-pci functions without an IOMMU group cannot work
// (error); a translating IOMMU in front of the NICs costs DMA performance
// (NVIDIA's tuning guides use iommu=pt).
func checkIOMMU(h *host.Host) []Finding {
	var fs []Finding
	noiommu, _ := h.ReadString("/sys/module/vfio/parameters/enable_unsafe_noiommu_mode")
	bound, _ := h.Glob("/sys/bus/pci/drivers/vfio-pci/[0-9a-f]*:*")
	for _, b := range bound {
		bdf := path.Base(b)
		if h.Exists("/sys/bus/pci/devices/"+bdf+"/iommu_group") || noiommu == "Y" {
			continue
		}
		fs = append(fs, Finding{Check: "iommu", Severity: Error, Object: bdf,
			Evidence: "bound to vfio-pci but has no IOMMU group (/sys/bus/pci/devices/" + bdf + "/iommu_group) and vfio's no-IOMMU mode is off: DPDK cannot map its DMA",
			Fix:      "enable the IOMMU (kernel section args [intel_iommu=on, iommu=pt] or amd_iommu=on; VT-d/AMD-Vi in the firmware), then reboot"})
	}
	units, _ := h.Glob("/sys/class/iommu/*")
	cmd, _ := h.ReadString("/proc/cmdline")
	if len(units) == 0 {
		return append(fs, Finding{Check: "iommu", Severity: Info, Object: "IOMMU", Evidence: "no IOMMU (/sys/class/iommu is empty): fine for mlx5 (bifurcated); vfio-pci needs one or no-IOMMU mode"})
	}
	types := map[string]bool{}
	groups, _ := h.Glob("/sys/kernel/iommu_groups/*/type")
	for _, g := range groups {
		t, _ := h.ReadString(g)
		types[t] = true
	}
	pt := types["identity"] && len(types) == 1 || hasArg(cmd, "iommu=pt") || hasArg(cmd, "iommu.passthrough=1")
	if pt {
		return append(fs, Finding{Check: "iommu", Severity: OK, Object: "IOMMU", Evidence: fmt.Sprintf("%d IOMMU unit(s), passthrough (identity domains / iommu=pt)", len(units))})
	}
	return append(fs, Finding{Check: "iommu", Severity: Warning, Object: "IOMMU",
		Evidence: fmt.Sprintf("%d IOMMU unit(s) translating DMA (no iommu=pt / iommu.passthrough=1 on /proc/cmdline, group types %s): every NIC DMA goes through the IOTLB", len(units), strings.Join(sortedKeys(types), ",")),
		Fix:      "kernel section args [iommu=pt] (x86) or [iommu.passthrough=1] (Arm), then reboot"})
}

func hasArg(cmdline, arg string) bool {
	for _, f := range strings.Fields(cmdline) {
		if f == arg {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// checkGovernor: polling CPUs below the performance governor clock down
// between bursts.
func checkGovernor(h *host.Host, cpus []int) []Finding {
	if len(cpus) == 0 {
		return nil
	}
	var slow []string
	seen := 0
	for _, cpu := range cpus {
		g, err := h.ReadString(fmt.Sprintf("/sys/devices/system/cpu/cpu%d/cpufreq/scaling_governor", cpu))
		if err != nil {
			continue
		}
		seen++
		if g != "performance" {
			slow = append(slow, fmt.Sprintf("cpu%d=%s", cpu, g))
		}
	}
	obj := "CPUs " + cpuset.FormatCPUList(cpus)
	switch {
	case seen == 0:
		return []Finding{{Check: "governor", Severity: Info, Object: obj, Evidence: "no cpufreq (scaling_governor absent): a VM or firmware-controlled frequency"}}
	case len(slow) > 0:
		return []Finding{{Check: "governor", Severity: Warning, Object: obj, Evidence: "scaling_governor " + strings.Join(slow, " ") + ": the clock drops between bursts, adding latency and jitter",
			Fix: "cpupower frequency-set -g performance (package linux-cpupower), or the firmware's performance profile"}}
	}
	return []Finding{{Check: "governor", Severity: OK, Object: obj, Evidence: "scaling_governor performance"}}
}

// checkTHP: THP "always" makes khugepaged compact memory behind the
// pollers' backs.
func checkTHP(h *host.Host) []Finding {
	s, err := h.ReadString("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil {
		return nil
	}
	mode := s
	if i := strings.Index(s, "["); i >= 0 {
		if j := strings.Index(s[i:], "]"); j > 0 {
			mode = s[i+1 : i+j]
		}
	}
	if mode == "always" {
		return []Finding{{Check: "thp", Severity: Warning, Object: "transparent hugepages", Evidence: "enabled: " + s + ": khugepaged collapses pages in the background, stalling pollers now and then",
			Fix: "kernel section args [transparent_hugepage=madvise] (or never), or echo madvise > /sys/kernel/mm/transparent_hugepage/enabled"}}
	}
	return []Finding{{Check: "thp", Severity: OK, Object: "transparent hugepages", Evidence: "enabled: " + s}}
}

// checkIrqbalance: irqbalance spreads device interrupts over every CPU it
// is not told to leave alone (it skips isolcpus/nohz_full CPUs itself).
func checkIrqbalance(h *host.Host, c cpuInfo) []Finding {
	comms, _ := h.Glob("/proc/[0-9]*/comm")
	running := false
	for _, p := range comms {
		if s, _ := h.ReadString(p); s == "irqbalance" {
			running = true
			break
		}
	}
	if !running {
		return []Finding{{Check: "irqbalance", Severity: OK, Object: "irqbalance", Evidence: "not running"}}
	}
	notIso := missing(c.online, c.isolated)
	if len(notIso) == len(c.online) {
		return []Finding{{Check: "irqbalance", Severity: Warning, Object: "irqbalance", Evidence: "running, and no CPU is isolated: NIC interrupts land on the CPUs the pollers use",
			Fix: "isolate the polling CPUs (kernel section isolcpus=), or IRQBALANCE_BANNED_CPULIST=<polling CPUs> in /etc/default/irqbalance, or stop irqbalance"}}
	}
	return []Finding{{Check: "irqbalance", Severity: Info, Object: "irqbalance", Evidence: "running; it leaves the isolated CPUs " + cpuset.FormatCPUList(keys(c.isolated)) + " alone"}}
}

// checkHugepages: OvS with DPDK needs its dpdk-socket-mem free per node
// before it initialises, and a hugetlbfs mount.
func checkHugepages(h *host.Host, in Input) []Finding {
	o := in.OVS
	if o == nil || !isTrue(o.OtherConfig["dpdk-init"]) || o.Initialized {
		return nil
	}
	st, err := hugepages.ReadState(h)
	if err != nil {
		return []Finding{{Check: "hugepages", Severity: Error, Object: "hugepages", Evidence: fmt.Sprintf("dpdk-init is set (%s) but hugepages cannot be read: %v", o.Source, err), Fix: "the hugepages section reserves and mounts them"}}
	}
	var fs []Finding
	if len(st.Mounts) == 0 {
		fs = append(fs, Finding{Check: "hugepages", Severity: Error, Object: "hugetlbfs", Evidence: "dpdk-init is set (" + o.Source + ") but no hugetlbfs is mounted (/proc/mounts): DPDK in ovs-vswitchd fails to initialise",
			Fix: "hugepages section mounts: [{path: /dev/hugepages}]"})
	}
	return append(fs, socketMem(st, o)...)
}

func isTrue(s string) bool { return s == "true" || s == "try" }

// freeMB is the free hugepage memory of a node (-1: system-wide), all sizes.
func freeMB(st *hugepages.State, node int) int64 {
	var kb int64
	for _, p := range st.Pools {
		if p.Node == node {
			kb += int64(p.Free) * p.SizeKB
		}
	}
	return kb / 1024
}

// socketMem compares dpdk-socket-mem (MB per NUMA node, "1024,0") with the
// free hugepage memory of each node; without it, DPDK grows on demand and
// needs some free pages at all.
func socketMem(st *hugepages.State, o *OVS) []Finding {
	sm := o.OtherConfig["dpdk-socket-mem"]
	if sm == "" {
		if free := freeMB(st, hugepages.AllNodes); free == 0 {
			return []Finding{{Check: "hugepages", Severity: Error, Object: "hugepages", Evidence: "dpdk-init is set (" + o.Source + ") and no hugepage is free",
				Fix: "hugepages section: reserve pages (e.g. 1024 x 2M)"}}
		}
		return []Finding{{Check: "hugepages", Severity: OK, Object: "hugepages", Evidence: fmt.Sprintf("%d MB free; no dpdk-socket-mem: DPDK takes memory as it needs it", freeMB(st, hugepages.AllNodes))}}
	}
	var fs []Finding
	for node, f := range strings.Split(sm, ",") {
		want, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil {
			return []Finding{{Check: "hugepages", Severity: Error, Object: "dpdk-socket-mem " + sm, Evidence: fmt.Sprintf("%q is not MB per NUMA node (%s)", sm, o.Source), Fix: "give MB per node, like 1024,1024"}}
		}
		if want == 0 {
			continue
		}
		pool := node
		if !st.HasNode(node) {
			if node > 0 {
				fs = append(fs, Finding{Check: "hugepages", Severity: Error, Object: "dpdk-socket-mem " + sm,
					Evidence: fmt.Sprintf("asks %d MB on NUMA node %d, which this host does not have (nodes %v)", want, node, st.Nodes), Fix: "give one value per existing node"})
				continue
			}
			pool = hugepages.AllNodes
		}
		if free := freeMB(st, pool); free < want {
			fs = append(fs, Finding{Check: "hugepages", Severity: Error, Object: fmt.Sprintf("dpdk-socket-mem node %d", node),
				Evidence: fmt.Sprintf("OvS asks %d MB on node %d (dpdk-socket-mem %s, %s) but only %d MB of hugepages are free there: DPDK init in ovs-vswitchd will fail", want, node, sm, o.Source, free),
				Fix:      fmt.Sprintf("reserve at least %d MB more on node %d (hugepages section), or lower dpdk-socket-mem", want-free, node)})
		} else {
			fs = append(fs, Finding{Check: "hugepages", Severity: OK, Object: fmt.Sprintf("dpdk-socket-mem node %d", node), Evidence: fmt.Sprintf("%d MB wanted, %d MB free", want, free)})
		}
	}
	return fs
}
