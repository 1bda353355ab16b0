package diagnose

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"

	"rig/internal/devargs"
	"rig/ovs"
)

// Diagnosis of "Error attaching device '<devargs>' to DPDK" (OvS 3.1
// lib/netdev-dpdk.c netdev_dpdk_process_devargs, after rte_dev_probe
// failed) from the EAL lines logged just before it and from sysfs. The EAL
// texts, as DPDK 22.11 prints them (each recorded on this VM with
// ovs-vswitchd-dpdk 3.1.0, see diagnose_test.go, or taken from the
// librte_eal/librte_bus_pci strings of Debian's DPDK 22.11.11):
//   - lib/eal/common/eal_common_dev.c local_dev_probe: "EAL: failed to parse
//     device \"%s\"" (no bus/driver takes the name), "EAL: Cannot find
//     device (%s)" (the bus scan did not find it), "EAL: Driver cannot
//     attach the device (%s)" (a driver's probe failed, or none matched).
//   - drivers/bus/pci/pci_common.c: "EAL: Probe PCI driver: %s (%x:%04x)
//     device: %s (socket %i)" once a PMD takes a PCI device, then the
//     PMD's own errors (e.g. "eth_virtio_pci_init(): Failed to init PCI
//     device" for a virtio NIC still on virtio-pci).
//   - lib/eal/linux/eal_vfio.c rte_vfio_setup_device: "EAL: %s VFIO group is
//     not viable! Not all devices in IOMMU group bound to VFIO or unbound",
//     "EAL: %s cannot get IOMMU group", "EAL: %s not managed by VFIO
//     driver", "EAL: Cannot open %s: %s" (/dev/vfio/N), "EAL: %s DMA
//     remapping failed, error %i (%s)"; drivers/bus/pci: "EAL:   Expecting
//     '%s' IOVA mode but current mode is '%s', not initializing".

// diagnoseAttach fills d for a failed attach of devargs.
func diagnoseAttach(h ovs.Host, st *ovs.State, d *ovs.Diagnosis, args string, log ovs.LogTail) {
	d.Kind = ProblemAttachFailed
	dev := devargs.Device(args)
	// memif: a socket path that another (or a deleted) port still holds
	if m := matching(log, 1, "memif_socket_create", "Address already in use"); strings.HasPrefix(dev, "net_memif") && len(m) > 0 {
		d.Kind = ProblemMemifSocketInUse
		d.Evidence = m
		d.Cause = "the memif socket is already in use: another port uses it, or a deleted memif port's socket cannot be reused by the same ovs-vswitchd"
		d.Fix = "use a different socket= path for this memif port, or restart ovs-vswitchd to release it"
		return
	}
	if bdf, ok := devargs.PCI(args); ok {
		diagnosePCIAttach(h, st, d, bdf, log)
		return
	}
	diagnoseVdevAttach(d, args, dev, log)
}

// diagnoseVdevAttach tells a malformed devargs, a name no driver takes
// ("failed to parse device"), a driver that could not open its device
// (its own error line) and a driver that rejected the arguments apart.
func diagnoseVdevAttach(d *ovs.Diagnosis, args, dev string, log ovs.LogTail) {
	parseFail := matching(log, 1, `EAL: failed to parse device "`+dev)
	if why := devargs.Check(args); why != "" {
		d.Kind = ProblemBadDevargs
		d.Evidence = append(parseFail, matching(log, 2, "Driver cannot attach the device")...)
		d.Cause = fmt.Sprintf("malformed devargs %q: %s", args, why)
		d.Fix = "write devargs as <pci-address|vdev-name>[,key=value...], e.g. 0000:03:00.0,representor=[65535] or net_null0"
		return
	}
	if len(parseFail) > 0 {
		d.Kind = ProblemNoDriver
		d.Evidence = parseFail
		d.Cause = fmt.Sprintf("no DPDK driver takes the device name %q (\"failed to parse device\"): a vdev's name starts with the name of a driver this DPDK has (net_null, net_af_packet, net_memif, net_tap, net_vhost, net_virtio_user, ...)", dev)
		d.Fix = "fix the device name in the port's devargs: a PCI address (0000:03:00.0) or a vdev such as net_af_packet0,iface=eth0"
		return
	}
	if m := matching(log, 2, "Driver cannot attach the device ("+dev+")"); len(m) > 0 {
		if pmd := pmdErrors(log, dev+":"); len(pmd) > 0 {
			d.Evidence = append(pmd, m...)
			d.Cause = fmt.Sprintf("the DPDK driver of %s could not open its device: %s", dev, logText(pmd[len(pmd)-1]))
			d.Fix = fmt.Sprintf("check what devargs %q point at (net_af_packet: iface= must name a netdev in ovs-vswitchd's network namespace; net_memif: the socket's directory must exist)", args)
			return
		}
		d.Kind = ProblemBadDevargs
		d.Evidence = append(matching(log, 2, dev+"):"), m...)
		d.Cause = fmt.Sprintf("the DPDK driver for %s rejected the devargs %q (unknown or invalid key=value argument)", dev, args)
		d.Fix = "check the arguments against the PMD's documented devargs (e.g. doc/guides/nics/<pmd>.rst)"
		return
	}
	if m := matching(log, 1, "Cannot find device ("+dev+")"); len(m) > 0 || !strings.HasPrefix(dev, "net_") {
		d.Evidence = m
		d.Cause = fmt.Sprintf("DPDK has no driver or device named %q", dev)
		d.Fix = "vdev names start with the PMD name (net_null0, net_af_packet0, net_memif0) and PCI addresses look like 0000:03:00.0"
		return
	}
	d.Cause = fmt.Sprintf("DPDK could not attach %q", args)
	d.Fix = "see the evidence lines from the ovs-vswitchd log"
	d.Evidence = matching(log, 3, dev)
}

// probeErrors are the ERR lines a PCI driver logged after EAL's "Probe
// PCI driver: … device: BDF" (its probe's own errors).
func probeErrors(log ovs.LogTail, bdf string) []string {
	m := matching(log, 1, "Probe PCI driver: ", bdf)
	if len(m) == 0 {
		return nil
	}
	var out []string
	for _, l := range after(log, m[0], 3, "|ERR|") {
		if !strings.Contains(l, "|ERR|EAL: ") {
			out = append(out, l)
		}
	}
	return out
}

// pmdErrors are a driver's own ERR lines that contain needle (not EAL's
// generic attach lines).
func pmdErrors(log ovs.LogTail, needle string) []string {
	var out []string
	for _, l := range matching(log, 3, "|ERR|", needle) {
		if !strings.Contains(l, "|ERR|EAL: ") {
			out = append(out, l)
		}
	}
	return out
}

// diagnosePCIAttach explains a PCI device DPDK could not attach: absent,
// kept from DPDK by the EAL arguments, an mlx5 function (bifurcated), or
// a NIC on the wrong kernel driver, on a UIO driver, or on vfio-pci.
func diagnosePCIAttach(h ovs.Host, st *ovs.State, d *ovs.Diagnosis, bdf string, log ovs.LogTail) {
	d.Evidence = append(matching(log, 3, bdf), matching(log, 1, strings.TrimPrefix(bdf, "0000:"))...)
	d.Evidence = append(d.Evidence, probeErrors(log, bdf)...)
	dir := "/sys/bus/pci/devices/" + bdf
	if !h.Exists(dir) {
		d.Kind = ProblemPCIAbsent
		d.Cause = fmt.Sprintf("PCI device %s does not exist on this host (no %s)", bdf, dir)
		d.Fix = "use a PCI address that `lspci -D` lists (for mlx5: /sys/class/net/<if>/device); on a BlueField the uplinks are usually 0000:03:00.0 and 0000:03:00.1"
		return
	}
	if excl := ealExclusion(st.OtherConfig["dpdk-extra"], bdf); excl != "" && len(matching(log, 1, "Cannot find device ("+bdf+")")) > 0 {
		d.Kind = ProblemPCIExcluded
		d.Cause = fmt.Sprintf("PCI device %s exists, but DPDK never scanned it (\"Cannot find device\"): other_config:dpdk-extra %s", bdf, excl)
		d.Fix = "remove that option from ovs.config.dpdk-extra (or allow " + bdf + " with -a), then `rig up` (it restarts ovs-vswitchd)"
		return
	}
	drv := pciDriver(h, dir)
	if vendor, _ := ovs.ReadString(h, dir+"/vendor"); vendor == "0x15b3" {
		if !diagnoseMlx5Driver(d, bdf, drv) {
			diagnoseMlx5Attach(h, d, bdf, dir, log)
		}
		return
	}
	// EAL's own stage before what sysfs suggests
	switch ealStage(log, bdf) {
	case "iommu":
		if drv == "vfio-pci" { // EAL sets up VFIO only for a device on vfio-pci
			diagnoseVFIO(h, d, bdf, dir, log)
			return
		}
	case "bus":
		diagnoseNotScanned(d, bdf, drv)
		return
	case "probe":
		if drv != "vfio-pci" && drv != "igb_uio" && drv != "uio_pci_generic" {
			diagnoseProbeOnKernelDriver(h, d, bdf, dir, drv, log)
			return
		}
	}
	switch drv {
	case "vfio-pci":
		diagnoseVFIO(h, d, bdf, dir, log)
	case "igb_uio", "uio_pci_generic":
		d.Cause = fmt.Sprintf("PCI device %s is bound to the UIO driver %s, which DPDK can use, yet the attach failed; UIO needs IOVA as PA (ovs-vswitchd must be able to read physical addresses: root) and gives no IOMMU protection", bdf, drv)
		d.Fix = fmt.Sprintf("prefer vfio-pci: dpdk-devbind.py --bind=vfio-pci %s, then `rig up`; and read the evidence lines", bdf)
	default:
		d.Kind = ProblemWrongDriver
		what := "is bound to no driver"
		if drv != "" {
			what = "is bound to the kernel driver " + drv + ", which DPDK cannot use"
		}
		d.Cause = fmt.Sprintf("DPDK could not attach PCI device %s: it %s; a non-mlx5 NIC must be bound to vfio-pci for DPDK", bdf, what)
		d.Fix = fmt.Sprintf("bind %s to vfio-pci: dpdk-devbind.py --bind=vfio-pci %s (modprobe vfio-pci first), then `rig up`", bdf, bdf)
		if nets, _ := h.ReadDir(dir + "/net"); len(nets) > 0 {
			d.Fix += fmt.Sprintf("; its kernel netdev %s goes away when you do", nets[0].Name())
		}
	}
	if len(d.Evidence) == 0 {
		d.Evidence = matching(log, 3, "EAL:")
	}
}

// diagnoseMlx5Attach: mlx5 is bifurcated, the PMD reaches the device
// through its RDMA device while it stays bound to mlx5_core; binding it
// to vfio-pci is the wrong fix (it removes the RDMA device).
func diagnoseMlx5Attach(h ovs.Host, d *ovs.Diagnosis, bdf, dir string, log ovs.LogTail) {
	if !h.Exists(dir+"/infiniband") || len(matching(log, 1, "No Verbs device matches")) > 0 || len(matching(log, 1, "no Verbs device matches")) > 0 {
		d.Kind = ProblemMlx5NoRDMA
		d.Cause = fmt.Sprintf("mlx5 device %s has no RDMA device (no %s/infiniband/): the mlx5 PMD is bifurcated and needs mlx5_core + mlx5_ib (ib_uverbs) loaded and rdma-core installed", bdf, dir)
		d.Fix = "modprobe mlx5_ib ib_uverbs; keep the device bound to mlx5_core (do not bind it to vfio-pci); install rdma-core/libibverbs"
		return
	}
	d.Cause = fmt.Sprintf("the mlx5 PMD could not attach %s; mlx5 is bifurcated (the device stays bound to mlx5_core and DPDK reaches it through its RDMA device), so the usual causes are a representor index the eswitch does not have, the eswitch not in switchdev mode, or another DPDK process holding the port", bdf)
	d.Fix = fmt.Sprintf("keep %s bound to mlx5_core (do not bind it to vfio-pci); check that `rdma link` lists it, that `devlink dev eswitch show pci/%s` says mode switchdev when the devargs name a representor, and read the evidence lines from the ovs-vswitchd log", bdf, bdf)
}

// pciDriver is the kernel driver a PCI device is bound to ("" = none).
func pciDriver(h ovs.Host, dir string) string {
	if l, err := h.Readlink(dir + "/driver"); err == nil {
		return path.Base(l)
	}
	return ""
}

var probePMD = regexp.MustCompile(`Probe PCI driver: (\S+) \(`)

// iommuFix is what makes VFIO usable when the IOMMU setup stops it.
const iommuFix = "enable the IOMMU: add intel_iommu=on iommu=pt (Intel) or amd_iommu=on iommu=pt (AMD) to the kernel command line and reboot; " +
	"on a machine without an IOMMU (e.g. a VM without a vIOMMU) use vfio's no-IOMMU mode instead: " +
	"echo 1 > /sys/module/vfio/parameters/enable_unsafe_noiommu_mode, then bind the device to vfio-pci again"

// diagnoseVFIO explains a device on vfio-pci that DPDK could not attach:
// the driver binding is right, so the PMD's probe, the IOMMU group or the
// IOMMU itself is the cause.
func diagnoseVFIO(h ovs.Host, d *ovs.Diagnosis, bdf, dir string, log ovs.LogTail) {
	d.Kind = ProblemIOMMU
	group, hasGroup := iommuGroup(h, dir)
	facts := iommuFacts(h, group, hasGroup)
	if m := matching(log, 1, "Probe PCI driver: ", bdf); len(m) > 0 {
		d.Kind = ProblemAttachFailed
		pmd := "a"
		if sm := probePMD.FindStringSubmatch(m[0]); sm != nil {
			pmd = sm[1]
		}
		d.Cause = fmt.Sprintf("%s is on vfio-pci and DPDK's %s driver took it, but the driver's probe failed", bdf, pmd)
		if errs := probeErrors(log, bdf); len(errs) > 0 {
			d.Cause += ": " + logText(errs[len(errs)-1])
		}
		d.Fix = "the driver's error line says why (device state, firmware, an unsupported variant of the NIC); see the evidence lines"
		return
	}
	ev := func(needle string) []string {
		m := matching(log, 1, needle)
		d.Evidence = append(d.Evidence, m...)
		return m
	}
	switch {
	case len(ev("VFIO group is not viable")) > 0:
		d.Cause = fmt.Sprintf("VFIO cannot use IOMMU group %s of %s: every device in a group must be on vfio-pci or unbound (\"VFIO group is not viable\"); %s", group, bdf, groupPeers(h, dir, bdf))
		d.Fix = "bind the group's other devices to vfio-pci too (dpdk-devbind.py --bind=vfio-pci BDF) or unbind them; if unrelated devices share the group, put the NIC in a slot with its own IOMMU group (ACS)"
	case len(ev("EAL: Cannot open /dev/vfio")) > 0:
		d.Cause = "ovs-vswitchd cannot open the VFIO group device: " + logText(ev("EAL: Cannot open /dev/vfio")[0])
		d.Fix = "run ovs-vswitchd as root, or give its user read/write access to /dev/vfio/" + group + " and /dev/vfio/vfio"
	case len(ev("DMA remapping failed")) > 0 || len(ev("Cannot set up DMA remapping")) > 0:
		d.Cause = fmt.Sprintf("the IOMMU refused DPDK's DMA mappings for %s (%s)", bdf, facts)
		d.Fix = "raise ovs-vswitchd's locked-memory limit (systemd LimitMEMLOCK=infinity) and look for IOMMU faults in dmesg; then `rig up`"
	case len(ev("Expecting 'VA' IOVA mode but current mode is 'PA'")) > 0:
		d.Cause = fmt.Sprintf("the driver needs IOVA as VA, but EAL chose PA because it found no usable IOMMU (%s)", facts)
		d.Fix = iommuFixFor(h)
	case !hasGroup || len(ev(bdf+" cannot get IOMMU group")) > 0 || len(ev(bdf+" not managed by VFIO driver")) > 0:
		d.Cause = fmt.Sprintf("%s is on vfio-pci but VFIO cannot use it: %s; the IOMMU is off and vfio is not in no-IOMMU mode", bdf, facts)
		d.Fix = iommuFixFor(h)
	default:
		d.Cause = fmt.Sprintf("%s is already bound to vfio-pci, so the driver binding is not the problem; with vfio-pci the usual cause is the IOMMU setup (%s)", bdf, facts)
		d.Fix = iommuFixFor(h) + "; and read the evidence lines"
	}
}

// iommuGroup is the device's IOMMU group number, if it has one.
func iommuGroup(h ovs.Host, dir string) (string, bool) {
	l, err := h.Readlink(dir + "/iommu_group")
	if err != nil {
		return "", false
	}
	return path.Base(l), true
}

// groupPeers names the other devices of the device's IOMMU group and
// their drivers.
func groupPeers(h ovs.Host, dir, bdf string) string {
	ents, err := h.ReadDir(dir + "/iommu_group/devices")
	if err != nil {
		return "its IOMMU group's devices are unreadable"
	}
	var peers []string
	for _, e := range ents {
		if e.Name() == bdf {
			continue
		}
		drv := pciDriver(h, "/sys/bus/pci/devices/"+e.Name())
		if drv == "" {
			drv = "no driver"
		}
		peers = append(peers, e.Name()+" ("+drv+")")
	}
	if len(peers) == 0 {
		return "it is alone in its group"
	}
	return "the group also holds " + strings.Join(peers, ", ")
}

// iommuFacts says what the host shows about its IOMMU: the device's
// group, how many groups the kernel made, vfio's no-IOMMU mode and the
// IOMMU options on the kernel command line.
func iommuFacts(h ovs.Host, group string, hasGroup bool) string {
	var f []string
	if hasGroup {
		f = append(f, "IOMMU group "+group)
	} else {
		f = append(f, "no iommu_group link for the device")
	}
	if ents, err := h.ReadDir("/sys/kernel/iommu_groups"); err == nil && len(ents) > 0 {
		f = append(f, strconv.Itoa(len(ents))+" IOMMU groups on the host")
	} else {
		f = append(f, "no IOMMU groups on the host (/sys/kernel/iommu_groups is empty)")
	}
	if v, err := ovs.ReadString(h, "/sys/module/vfio/parameters/enable_unsafe_noiommu_mode"); err == nil {
		mode := "off"
		if v == "Y" || v == "1" {
			mode = "on"
		}
		f = append(f, "vfio no-IOMMU mode "+mode)
	}
	if cl, err := ovs.ReadString(h, "/proc/cmdline"); err == nil {
		var opts []string
		for _, w := range strings.Fields(cl) {
			if strings.HasPrefix(w, "intel_iommu=") || strings.HasPrefix(w, "amd_iommu=") || strings.HasPrefix(w, "iommu=") || strings.HasPrefix(w, "iommu.") {
				opts = append(opts, w)
			}
		}
		if len(opts) == 0 {
			f = append(f, "no intel_iommu=/amd_iommu=/iommu= option on the kernel command line")
		} else {
			f = append(f, "kernel command line: "+strings.Join(opts, " "))
		}
	}
	return strings.Join(f, ", ")
}

// ealExclusion says how dpdk-extra keeps DPDK from scanning bdf: --no-pci,
// an allow list (-a/--allow, -w/--pci-whitelist) without it, or a block
// list (-b/--block, --pci-blacklist) with it; "" when it does not.
func ealExclusion(extra, bdf string) string {
	short := strings.TrimPrefix(bdf, "0000:")
	var allow []string
	f := strings.Fields(extra)
	for i := 0; i < len(f); i++ {
		opt, val, hasVal := strings.Cut(f[i], "=")
		switch opt {
		case "--no-pci":
			return "has --no-pci"
		case "-a", "--allow", "-w", "--pci-whitelist", "-b", "--block", "--pci-blacklist":
			if !hasVal && i+1 < len(f) {
				i++
				val = f[i]
			}
			dev := strings.SplitN(val, ",", 2)[0]
			hit := dev == bdf || dev == short
			if strings.HasPrefix(opt, "-b") || opt == "--block" || opt == "--pci-blacklist" {
				if hit {
					return "blocks it (" + opt + " " + val + ")"
				}
				continue
			}
			if hit {
				return ""
			}
			allow = append(allow, dev)
		}
	}
	if len(allow) > 0 {
		return "allows only " + strings.Join(allow, ", ") + " (-a)"
	}
	return ""
}
