// Package diagnose explains what the ovs driver reads: why an interface
// did not attach or DPDK did not initialise (Diagnose, DiagnoseDPDK, from
// the database, sysfs and the vswitchd log since its start, waited for by
// EvidenceLog), `rig ovs status` (ReadStatus, ReadFlows), and whether a
// port's datapath flows were offloaded to the NIC and why not
// (AnalyzeOffload). It imports package ovs; ovs never imports it.
package diagnose

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"rig/ovs"
	"rig/smartnic"
)

// Diagnosis kinds (Diagnosis.Kind, stable ids in JSON): what is wrong.
const (
	ProblemDPDKNotInit      = "dpdk-not-initialized"
	ProblemDPDKNotRequested = "dpdk-not-requested"
	ProblemOVSDBUnreachable = "ovsdb-unreachable"
	ProblemOVSDBRead        = "ovsdb-read-failed"
	ProblemNoHugepages      = "hugepages-insufficient"
	ProblemMempool          = "socket-mem-too-small"
	ProblemPCIAbsent        = "pci-device-absent"
	ProblemMlx5NoRDMA       = "mlx5-no-rdma-device"
	ProblemBadDevargs       = "malformed-devargs"
	ProblemMemifSocketInUse = "memif-socket-in-use"
	ProblemDevargsInUse     = "devargs-in-use"
	ProblemNoDevargs        = "devargs-missing"
	ProblemNoSuchNetdev     = "no-such-device"
	ProblemAttachFailed     = "attach-failed"
	ProblemNoDriver         = "no-dpdk-driver"
	ProblemWrongDriver      = "kernel-driver-not-for-dpdk"
	ProblemIOMMU            = "vfio-iommu-setup"
	ProblemPCIExcluded      = "pci-excluded-by-eal-args"
	ProblemMTU              = "mtu-unsupported"
	ProblemDeviceConfig     = "device-config-failed"
	ProblemDOCAName         = "doca-name-unresolved"
	ProblemUnknown          = "port-error"
)

// matching returns the distinct lines containing every needle (last max).
func matching(t ovs.LogTail, max int, needles ...string) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range t {
		ok := true
		for _, n := range needles {
			if !strings.Contains(l, n) {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		msg := logMessage(l)
		if seen[msg] {
			continue
		}
		seen[msg] = true
		out = append(out, l)
	}
	if len(out) > max {
		out = out[len(out)-max:]
	}
	return out
}

// logMessage strips the "time|seq|" prefix so repeats compare equal.
func logMessage(l string) string {
	parts := strings.SplitN(l, "|", 3)
	if len(parts) == 3 {
		return parts[2]
	}
	return l
}

var (
	// DPDK lib/ethdev/rte_ethdev.c eth_dev_validate_mtu
	maxFrame  = regexp.MustCompile(`Frame size \((\d+)\) > device max frame size \((\d+)\)`)
	notEnough = regexp.MustCompile(`Not enough memory available on socket (\d+)! Requested: (\d+)MB, available: (\d+)MB`)
)

// DiagnoseDPDK explains dpdk_initialized=false when dpdk-init asks for DPDK.
func DiagnoseDPDK(st *ovs.State, log ovs.LogTail) ovs.Diagnosis {
	init, set := st.OtherConfig["dpdk-init"]
	d := ovs.Diagnosis{Object: "ovs: dpdk", Error: "dpdk-init=" + init + " but dpdk_initialized=false", Kind: ProblemDPDKNotInit}
	// OVS-DOCA's doca-init=true initialises DPDK as if dpdk-init were true
	// (lib/ovs-doca.c ovs_doca_init__)
	if doca := st.OtherConfig["doca-init"] == "true"; doca && init != "true" && init != "try" {
		d.Error = "doca-init=true but dpdk_initialized=false"
		if !st.DOCA {
			d.Kind = ProblemDPDKNotRequested
			d.Cause = "other_config:doca-init=true is set but dpdk-init is not, and this Open vSwitch is upstream's, not NVIDIA's OVS-DOCA (its database has no doca_initialized column): it ignores doca-init and never initialises DPDK"
			d.Fix = "run NVIDIA's OVS-DOCA; or set ovs.config.dpdk-init: try, give the dpdk ports devargs or netdev:, and run `rig up`"
			return d
		}
	} else if init != "true" && init != "try" {
		d.Kind = ProblemDPDKNotRequested
		d.Error = "DPDK not requested: other_config:dpdk-init is unset"
		if set {
			d.Error = fmt.Sprintf("DPDK not requested: other_config:dpdk-init is %q", init)
		}
		what := "unset"
		if set {
			what = strconv.Quote(init)
		}
		d.Cause = "other_config:dpdk-init is " + what + ", so ovs-vswitchd never initialises DPDK and no dpdk port can attach"
		d.Fix = "set ovs.config.dpdk-init: try (or true) in the playbook and run `rig up` (it restarts ovs-vswitchd)"
		return d
	}
	if m := matching(log, 1, "Not enough memory available on socket"); len(m) > 0 {
		d.Kind = ProblemNoHugepages
		d.Evidence = m
		if sm := notEnough.FindStringSubmatch(m[0]); sm != nil {
			d.Cause = fmt.Sprintf("dpdk-socket-mem asks for %s MB on socket %s but only %s MB of hugepages are free there", sm[2], sm[1], sm[3])
		} else {
			d.Cause = "dpdk-socket-mem asks for more hugepage memory than is free"
		}
		d.Fix = "free hugepages (stop what holds them: `rig hugepages status`), reserve more (hugepages section, e.g. 2M x 512) or lower ovs.config.dpdk-socket-mem; then `rig up` restarts ovs-vswitchd (DPDK takes its memory only at start)"
		return d
	}
	if m := matching(log, 2, "EAL:", "hugepage"); len(m) > 0 && len(matching(log, 1, "Cannot init memory")) > 0 ||
		len(matching(log, 1, "No available hugepages")) > 0 || len(matching(log, 1, "Cannot get hugepage information")) > 0 {
		d.Kind = ProblemNoHugepages
		d.Evidence = append(matching(log, 2, "hugepage"), matching(log, 1, "Cannot init memory")...)
		d.Cause = "no free hugepages for DPDK (none reserved, or all in use)"
		d.Fix = "reserve hugepages (hugepages section of the playbook; `rig up -p hugepages-2m`) or free those in use (`rig hugepages status`); then `rig up` restarts ovs-vswitchd (DPDK takes its memory only at start)"
		return d
	}
	if m := matching(log, 3, "|dpdk|"); len(m) > 0 {
		ev := matching(log, 3, "Unable to initialize DPDK")
		if len(ev) == 0 {
			ev = matching(ovs.LogTail(m), 3, "ERR")
		}
		if len(ev) > 0 {
			d.Evidence = ev
			d.Cause = "DPDK's EAL failed to initialise: " + logMessage(ev[len(ev)-1])
			d.Fix = "check ovs.config (dpdk-extra, dpdk-lcore-mask, dpdk-socket-mem) against the EAL error, then `rig up`"
			return d
		}
	}
	d.Cause = "ovs-vswitchd was started before other_config:dpdk-init was set (DPDK settings are read only at start)"
	d.Fix = "restart ovs-vswitchd (`rig up` does it; or `systemctl restart openvswitch-switch`)"
	return d
}

// Diagnose explains a failed interface (ofport -1 or error set). h is the
// host seam (sysfs under its root), log the vswitchd log since its start.
// Older OvS leave Interface.error empty; then the log line that OvS wrote
// for the interface stands in for it (errorFromLog).
func Diagnose(h ovs.Host, st *ovs.State, ifc ovs.Interface, log ovs.LogTail) ovs.Diagnosis {
	d := ovs.Diagnosis{Object: "ovs: port " + ifc.Name, Error: ifc.Error, Kind: ProblemUnknown}
	e := ifc.Error
	if e == "" {
		d.Error = fmt.Sprintf("ofport is %d", ifc.OFPort)
		if line := errorFromLog(ifc, log); line != "" {
			e = logText(line)
			d.Error += "; Interface.error is empty (older OvS), the ovs-vswitchd log says: " + e
			d.Evidence = []string{line}
		}
	}
	switch {
	case (strings.HasPrefix(ifc.Type, "dpdk") || ifc.IsDPDKPort()) && (!st.DPDKInitialized || strings.Contains(e, "Address family not supported")):
		dd := DiagnoseDPDK(st, log)
		d.Kind, d.Cause, d.Fix, d.Evidence = dd.Kind, "DPDK is not initialised in ovs-vswitchd (dpdk_initialized=false): "+dd.Cause, dd.Fix, dd.Evidence
		d.Evidence = append(d.Evidence, matching(log, 1, "could not create netdev "+ifc.Name+" of unknown type")...)
	case strings.Contains(e, "Error attaching device"):
		diagnoseAttach(h, st, &d, ifc.Devargs(), log)
	case strings.Contains(e, "could not add network device"):
		diagnoseOfprotoAdd(st, &d, ifc, log)
	case strings.Contains(e, "which is already in use by"):
		d.Kind = ProblemDevargsInUse
		d.Cause = "two ports name the same DPDK device in options:dpdk-devargs"
		d.Fix = "give each port its own devargs, or delete the other port"
	case strings.Contains(e, "is missing 'options:dpdk-devargs'"):
		diagnoseNoDevargs(st, &d, ifc, log)
	case strings.Contains(e, "could not set configuration") && len(matching(log, 1, ifc.Name+": Could not generate DPDK devargs")) > 0:
		diagnoseDOCAName(h, &d, ifc, log)
	case strings.Contains(e, "(No such device)"):
		d.Kind = ProblemNoSuchNetdev
		d.Evidence = append(d.Evidence, matching(log, 1, "could not open network device "+ifc.Name+" (")...)
		d.Cause = fmt.Sprintf("no network device %s exists for a type=%s port", ifc.Name, ifc.Type)
		d.Fix = "for DPDK use type: dpdk with devargs; for a kernel port create the netdev first"
	default:
		d.Cause = "ovs-vswitchd could not add the interface"
		d.Fix = "see the evidence lines from the ovs-vswitchd log"
		d.Evidence = append(d.Evidence, matching(log, 3, ifc.Name)...)
	}
	d.Evidence = dedupe(d.Evidence)
	return d
}

// errorFromLog returns the last log line in which OvS reported the
// interface's failure, the texts it also puts in Interface.error
// (vswitchd/bridge.c iface_do_create and lib/netdev.c netdev_set_config,
// lib/netdev-dpdk.c), most specific first; "" when there is none.
func errorFromLog(ifc ovs.Interface, log ovs.LogTail) string {
	n := ifc.Name
	var needles []string
	if da := ifc.Devargs(); da != "" {
		needles = append(needles, "Error attaching device '"+da+"' to DPDK")
	}
	needles = append(needles, "'"+n+"' is missing 'options:dpdk-devargs'", "'"+n+"' is trying to use device ",
		"could not add network device "+n+" to ofproto (", "could not open network device "+n+" (", "|"+n+": could not set configuration (")
	for _, nd := range needles {
		if m := matching(log, 1, nd); len(m) > 0 {
			return m[0]
		}
	}
	return ""
}

// logText is a log line's message: "…|00245|bridge|WARN|could not open …" -> "could not open …".
func logText(l string) string {
	if parts := strings.SplitN(l, "|", 5); len(parts) == 5 {
		return parts[4]
	}
	return l
}

// diagnoseOfprotoAdd explains "could not add network device NAME to
// ofproto (…)": the netdev was created but the datapath could not add
// it, because its memory pool or its device configuration failed
// (lib/dpif-netdev.c "Failed to set interface %s new configuration").
func diagnoseOfprotoAdd(st *ovs.State, d *ovs.Diagnosis, ifc ovs.Interface, log ovs.LogTail) {
	name := ifc.Name
	if len(matching(log, 1, "Failed to create memory pool for netdev "+name+",")) > 0 {
		d.Kind = ProblemMempool
		d.Evidence = append(matching(log, 1, "Failed to create mempool"), matching(log, 1, "Failed to create memory pool for netdev "+name)...)
		sm, sl := st.OtherConfig["dpdk-socket-mem"], st.OtherConfig["dpdk-socket-limit"]
		d.Cause = fmt.Sprintf("DPDK could not allocate the port's packet buffer pool (\"Failed to create mempool\"): dpdk-socket-mem=%s dpdk-socket-limit=%s MB is too small, or the hugepages are used up",
			orNone(sm), orNone(sl))
		d.Fix = "raise ovs.config.dpdk-socket-mem (and dpdk-socket-limit, 0 = no limit) or reserve more hugepages, then `rig up` (restarts ovs-vswitchd); each dpdk port needs about 20-40 MB at MTU 1500"
		return
	}
	if m := matching(log, 1, "Interface "+name+" MTU (", ") setup error: "); len(m) > 0 {
		d.Kind = ProblemMTU
		frame := before(log, m[0], 3, "> device max frame size (")
		d.Evidence = append(frame, m...)
		d.Cause = fmt.Sprintf("the device does not take the MTU OvS asked for (mtu_request %d): %s", ifc.MTURequest, logText(m[0]))
		if len(frame) > 0 {
			if sm := maxFrame.FindStringSubmatch(frame[0]); sm != nil {
				n, _ := strconv.Atoi(sm[2])
				d.Cause += fmt.Sprintf("; DPDK: frame size %s > device max frame size %d, so this device takes an MTU of at most %d", sm[1], n, n-18)
			}
		}
		d.Fix = "lower the port's mtu_request to what the device takes (or leave it unset); for net_af_packet raise framesz= and blocksz= in its devargs"
		return
	}
	if m := matching(log, 3, "Interface "+name); len(m) > 0 {
		d.Kind = ProblemDeviceConfig
		d.Evidence = m
		d.Cause = "DPDK opened the device but could not configure it (rte_eth_dev_configure or queue setup failed): " + logText(m[len(m)-1])
		d.Fix = "check the port's n_rxq and mtu_request against the device's limits (`ovs-vsctl get Interface " + name + " status` shows max_rx_queues, max_rx_pktlen), then `rig up`"
		return
	}
	d.Kind = ProblemDeviceConfig
	d.Cause = "ovs-vswitchd created the netdev but its datapath could not add it"
	d.Fix = "see the evidence lines from the ovs-vswitchd log"
	d.Evidence = append(d.Evidence, matching(log, 3, name)...)
}

// before returns, of the up to n lines before the (first) line equal to
// anchor, those containing needle.
func before(t ovs.LogTail, anchor string, n int, needle string) []string {
	for i, l := range t {
		if l != anchor {
			continue
		}
		var out []string
		for j := max(0, i-n); j < i; j++ {
			if strings.Contains(t[j], needle) {
				out = append(out, t[j])
			}
		}
		return out
	}
	return nil
}

// after returns, of the up to n lines after the last line equal to
// anchor, those containing needle.
func after(t ovs.LogTail, anchor string, n int, needle string) []string {
	for i := len(t) - 1; i >= 0; i-- {
		if t[i] != anchor {
			continue
		}
		var out []string
		for j := i + 1; j < len(t) && j <= i+n; j++ {
			if strings.Contains(t[j], needle) {
				out = append(out, t[j])
			}
		}
		return out
	}
	return nil
}

// diagnoseNoDevargs explains upstream OvS's "'NAME' is missing
// 'options:dpdk-devargs'": which OvS it is decides the fix, as only
// NVIDIA's OVS-DOCA (doca-init=true) resolves a port by its netdev name.
func diagnoseNoDevargs(st *ovs.State, d *ovs.Diagnosis, ifc ovs.Interface, log ovs.LogTail) {
	d.Kind = ProblemNoDevargs
	d.Evidence = append(d.Evidence, matching(log, 1, "'"+ifc.Name+"' is missing 'options:dpdk-devargs'")...)
	give := "give the port devargs (PCI address, representor or vdev) or netdev: NAME (rig resolves its mlx5 devargs) in the playbook"
	switch {
	case st.DOCA && !st.DOCAInitialized:
		d.Cause = "this is NVIDIA's OVS-DOCA, but doca_initialized is false: a type=dpdk port without options:dpdk-devargs is resolved by its netdev name only with other_config:doca-init=true"
		d.Fix = "set ovs.config.doca-init: true in the playbook and run `rig up` (it restarts ovs-vswitchd); or " + give
	case st.OtherConfig["doca-init"] == "true":
		d.Cause = "other_config:doca-init=true is set, but this Open vSwitch is upstream's, not NVIDIA's OVS-DOCA (its database has no doca_initialized column): it ignores doca-init and needs options:dpdk-devargs for every type=dpdk port"
		d.Fix = give + "; or run NVIDIA's OVS-DOCA (DOCA's openvswitch packages; on a BlueField /etc/mellanox/mlnx-ovs.conf OVS_DOCA=\"yes\")"
	default:
		d.Cause = "a type=dpdk port needs options:dpdk-devargs in upstream Open vSwitch; resolving a port by its netdev name alone is NVIDIA OVS-DOCA's extension (other_config:doca-init=true)"
		d.Fix = give + "; on OVS-DOCA set ovs.config.doca-init: true instead"
	}
}

// diagnoseDOCAName explains an OVS-DOCA port named by its netdev that
// OVS-DOCA could not resolve ("NAME: Could not generate DPDK devargs",
// lib/netdev-doca.c), from what sysfs shows for the netdev.
func diagnoseDOCAName(h ovs.Host, d *ovs.Diagnosis, ifc ovs.Interface, log ovs.LogTail) {
	d.Kind = ProblemDOCAName
	d.Evidence = append(d.Evidence, matching(log, 2, "|"+ifc.Name+": ")...)
	n, err := ovs.ResolveDOCAName(h, ifc.Name)
	var ne *smartnic.NetdevError
	if errors.As(err, &ne) {
		d.Cause = fmt.Sprintf("OVS-DOCA resolves a port without devargs by its netdev name, and netdev %s does not resolve: %s (sysfs shows: %s)", ifc.Name, ne.Why, ne.Found)
		d.Fix = ne.Fix()
		return
	}
	d.Cause = fmt.Sprintf("OVS-DOCA could not generate devargs for %s although sysfs shows the %s", ifc.Name, n)
	d.Fix = "see the evidence lines from the ovs-vswitchd log; give the port devargs to bypass the name resolution"
}

func dedupe(lines []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, l := range lines {
		if !seen[logMessage(l)] {
			seen[logMessage(l)] = true
			out = append(out, l)
		}
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "(unset)"
	}
	return s
}
