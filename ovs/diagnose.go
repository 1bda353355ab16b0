package ovs

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"rig/internal/pci"
)

// Diagnosis explains why an interface (or DPDK itself) is not working.
type Diagnosis struct {
	Object   string   `json:"object"` // "ovs: port dpdk0" or "ovs: dpdk"
	Error    string   `json:"error"`  // what OvS says (Interface.error, or the symptom)
	Kind     string   `json:"kind"`   // stable id, e.g. "pci-device-absent"
	Cause    string   `json:"cause"`
	Fix      string   `json:"fix"`
	Evidence []string `json:"evidence,omitempty"` // vswitchd log lines behind the diagnosis
	Argv     []string `json:"argv,omitempty"`     // the tool command that failed, when one did
}

func (d Diagnosis) String() string {
	return fmt.Sprintf("%s: %s; likely cause: %s; fix: %s", d.Object, d.Error, d.Cause, d.Fix)
}

// Diagnosis kinds (Diagnosis.Kind, stable ids in JSON): what is wrong.
const (
	ProblemVswitchdDown     = "vswitchd-not-running"
	ProblemDPDKNotInit      = "dpdk-not-initialized"
	ProblemDPDKNotRequested = "dpdk-not-requested"
	ProblemOVSDBUnreachable = "ovsdb-unreachable"
	ProblemOVSDBRead        = "ovsdb-read-failed"
	ProblemVswitchdDied     = "vswitchd-died"
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
	ProblemUnknown          = "port-error"
)

// LogTail is the part of ovs-vswitchd's log written since its last start.
type LogTail []string

// isProblemLine keeps WARN/ERR/EMER lines.
func isProblemLine(l string) bool {
	return strings.Contains(l, "|WARN|") || strings.Contains(l, "|ERR|") || strings.Contains(l, "|EMER|")
}

// ReadLogTail reads the instance's ovs-vswitchd log (a private instance's
// is a real path, the system one's is under the host root) from its last
// "opened log file" line (= last start) on, looking at the last 4 MiB at
// most. A missing log gives nil.
func ReadLogTail(h Host, t Target) LogTail {
	f, err := t.open(h, t.LogFile)
	if err != nil {
		return nil
	}
	defer f.Close()
	const max = 4 << 20
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	off := int64(0)
	if fi.Size() > max {
		off = fi.Size() - max
	}
	buf := make([]byte, fi.Size()-off)
	n, _ := f.ReadAt(buf, off)
	lines := strings.Split(string(buf[:n]), "\n")
	start := 0
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], "|vlog|INFO|opened log file") {
			start = i
			break
		}
	}
	var out LogTail
	for _, l := range lines[start:] {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// LastStartLines returns up to max lines of the log since the last start that pass keep.
func LastStartLines(h Host, t Target, max int, keep func(string) bool) []string {
	var out []string
	for _, l := range ReadLogTail(h, t) {
		if keep(l) {
			out = append(out, l)
		}
	}
	if len(out) > max {
		out = out[len(out)-max:]
	}
	return out
}

// matching returns the distinct lines containing every needle (last max).
func (t LogTail) matching(max int, needles ...string) []string {
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
	notEnough  = regexp.MustCompile(`Not enough memory available on socket (\d+)! Requested: (\d+)MB, available: (\d+)MB`)
	devargsKey = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
)

// PCIAddress returns the full BDF (domain added) when devargs name a PCI
// device ("0000:03:00.0,representor=[65535]" -> "0000:03:00.0").
func PCIAddress(devargs string) (string, bool) {
	first, _, _ := strings.Cut(devargs, ",")
	return pci.Canonical(first)
}

// CheckDevargs is a syntax check of DPDK devargs: "<device>[,key=value...]"
// where the device is a PCI address or a vdev name (net_null0), values may
// hold bracketed lists ("representor=[0-1,65535]"). It returns "" when the
// syntax is fine.
func CheckDevargs(devargs string) string {
	if devargs == "" {
		return "empty"
	}
	if strings.ContainsAny(devargs, " \t\n\"'") {
		return "contains whitespace or quotes"
	}
	parts, err := splitDevargs(devargs)
	if err != "" {
		return err
	}
	dev := parts[0]
	if dev == "" {
		return "no device name before the first comma"
	}
	if _, ok := PCIAddress(dev); !ok && !devargsKey.MatchString(dev) {
		return fmt.Sprintf("device %q is neither a PCI address (0000:03:00.0) nor a vdev name (net_null0)", dev)
	}
	for _, kv := range parts[1:] {
		if kv == "" {
			return "empty argument (two commas in a row or a trailing comma)"
		}
		k, _, found := strings.Cut(kv, "=")
		if !found {
			return fmt.Sprintf("argument %q is not key=value", kv)
		}
		if !devargsKey.MatchString(k) {
			return fmt.Sprintf("argument %q has an empty or invalid key", kv)
		}
	}
	return ""
}

// splitDevargs splits on commas outside brackets.
func splitDevargs(s string) ([]string, string) {
	var parts []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '[':
			depth++
		case ']':
			depth--
			if depth < 0 {
				return nil, "unbalanced ']'"
			}
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return nil, "unbalanced '['"
	}
	return append(parts, s[start:]), ""
}

// DiagnoseDPDK explains dpdk_initialized=false when dpdk-init asks for DPDK.
func DiagnoseDPDK(st *State, log LogTail) Diagnosis {
	init, set := st.OtherConfig["dpdk-init"]
	d := Diagnosis{Object: "ovs: dpdk", Error: "dpdk-init=" + init + " but dpdk_initialized=false", Kind: ProblemDPDKNotInit}
	if init != "true" && init != "try" {
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
	if m := log.matching(1, "Not enough memory available on socket"); len(m) > 0 {
		d.Kind = ProblemNoHugepages
		d.Evidence = m
		if sm := notEnough.FindStringSubmatch(m[0]); sm != nil {
			d.Cause = fmt.Sprintf("dpdk-socket-mem asks for %s MB on socket %s but only %s MB of hugepages are free there", sm[2], sm[1], sm[3])
		} else {
			d.Cause = "dpdk-socket-mem asks for more hugepage memory than is free"
		}
		d.Fix = "reserve more hugepages (hugepages section, e.g. 2M x 512) or lower ovs.config.dpdk-socket-mem, then `rig up`"
		return d
	}
	if m := log.matching(2, "EAL:", "hugepage"); len(m) > 0 && len(log.matching(1, "Cannot init memory")) > 0 ||
		len(log.matching(1, "No available hugepages")) > 0 || len(log.matching(1, "Cannot get hugepage information")) > 0 {
		d.Kind = ProblemNoHugepages
		d.Evidence = append(log.matching(2, "hugepage"), log.matching(1, "Cannot init memory")...)
		d.Cause = "no free hugepages for DPDK (none reserved, or all in use)"
		d.Fix = "reserve hugepages (hugepages section of the playbook; `rig up -p hugepages-2m`), then restart ovs-vswitchd with `rig up`"
		return d
	}
	if m := log.matching(3, "|dpdk|"); len(m) > 0 {
		ev := log.matching(3, "Unable to initialize DPDK")
		if len(ev) == 0 {
			ev = LogTail(m).matching(3, "ERR")
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
func Diagnose(h Host, st *State, ifc Interface, log LogTail) Diagnosis {
	d := Diagnosis{Object: "ovs: port " + ifc.Name, Error: ifc.Error, Kind: ProblemUnknown}
	if d.Error == "" {
		d.Error = fmt.Sprintf("ofport is %d", ifc.OFPort)
	}
	devargs := ifc.Devargs()
	isDPDK := strings.HasPrefix(ifc.Type, "dpdk")
	e := ifc.Error
	switch {
	case isDPDK && (!st.DPDKInitialized || strings.Contains(e, "Address family not supported")):
		dd := DiagnoseDPDK(st, log)
		d.Kind, d.Cause, d.Fix, d.Evidence = dd.Kind, "DPDK is not initialised in ovs-vswitchd (dpdk_initialized=false): "+dd.Cause, dd.Fix, dd.Evidence
		d.Evidence = append(d.Evidence, log.matching(1, "could not create netdev "+ifc.Name+" of unknown type")...)
	case strings.Contains(e, "Error attaching device"):
		diagnoseAttach(h, &d, devargs, log)
	case strings.Contains(e, "could not add network device") && len(log.matching(1, "Failed to create memory pool for netdev "+ifc.Name)) > 0,
		len(log.matching(1, "Failed to create memory pool for netdev "+ifc.Name+",")) > 0:
		d.Kind = ProblemMempool
		d.Evidence = append(log.matching(1, "Failed to create mempool"), log.matching(1, "Failed to create memory pool for netdev "+ifc.Name)...)
		sm, sl := st.OtherConfig["dpdk-socket-mem"], st.OtherConfig["dpdk-socket-limit"]
		d.Cause = fmt.Sprintf("DPDK could not allocate the port's packet buffer pool (\"Failed to create mempool\"): dpdk-socket-mem=%s dpdk-socket-limit=%s MB is too small, or the hugepages are used up",
			orNone(sm), orNone(sl))
		d.Fix = "raise ovs.config.dpdk-socket-mem (and dpdk-socket-limit, 0 = no limit) or reserve more hugepages, then `rig up` (restarts ovs-vswitchd); each dpdk port needs about 20-40 MB at MTU 1500"
	case strings.Contains(e, "which is already in use by"):
		d.Kind = ProblemDevargsInUse
		d.Cause = "two ports name the same DPDK device in options:dpdk-devargs"
		d.Fix = "give each port its own devargs, or delete the other port"
	case strings.Contains(e, "is missing 'options:dpdk-devargs'"):
		d.Kind = ProblemNoDevargs
		d.Cause = "a type=dpdk port needs options:dpdk-devargs (PCI address, representor or vdev)"
		d.Fix = "set devargs for the port in the playbook"
	case strings.Contains(e, "(No such device)"):
		d.Kind = ProblemNoSuchNetdev
		d.Cause = fmt.Sprintf("no network device %s exists for a type=%s port", ifc.Name, ifc.Type)
		d.Fix = "for DPDK use type: dpdk with devargs; for a kernel port create the netdev first"
	default:
		d.Cause = "ovs-vswitchd could not add the interface"
		d.Fix = "see the evidence lines from the ovs-vswitchd log"
		d.Evidence = log.matching(3, ifc.Name)
	}
	d.Evidence = dedupe(d.Evidence)
	return d
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

func diagnoseAttach(h Host, d *Diagnosis, devargs string, log LogTail) {
	d.Kind = ProblemAttachFailed
	dev := strings.SplitN(devargs, ",", 2)[0]
	// memif: a socket path that another (or a deleted) port still holds
	if m := log.matching(1, "memif_socket_create", "Address already in use"); strings.HasPrefix(dev, "net_memif") && len(m) > 0 {
		d.Kind = ProblemMemifSocketInUse
		d.Evidence = m
		d.Cause = "the memif socket is already in use: another port uses it, or a deleted memif port's socket cannot be reused by the same ovs-vswitchd"
		d.Fix = "use a different socket= path for this memif port, or restart ovs-vswitchd to release it"
		return
	}
	if bdf, ok := PCIAddress(devargs); ok {
		d.Evidence = append(log.matching(2, bdf), log.matching(1, strings.TrimPrefix(bdf, "0000:"))...)
		dir := "/sys/bus/pci/devices/" + bdf
		if !h.Exists(dir) {
			d.Kind = ProblemPCIAbsent
			d.Cause = fmt.Sprintf("PCI device %s does not exist on this host (no %s)", bdf, dir)
			d.Fix = "use a PCI address that `lspci -D` lists (for mlx5: /sys/class/net/<if>/device); on a BlueField the uplinks are usually 0000:03:00.0 and 0000:03:00.1"
			return
		}
		vendor, _ := readString(h, dir+"/vendor")
		if vendor == "0x15b3" {
			if !h.Exists(dir+"/infiniband") || len(log.matching(1, "No Verbs device matches")) > 0 || len(log.matching(1, "no Verbs device matches")) > 0 {
				d.Kind = ProblemMlx5NoRDMA
				d.Cause = fmt.Sprintf("mlx5 device %s has no RDMA device (no %s/infiniband/): the mlx5 PMD is bifurcated and needs mlx5_core + mlx5_ib (ib_uverbs) loaded and rdma-core installed", bdf, dir)
				d.Fix = "modprobe mlx5_ib ib_uverbs; keep the device bound to mlx5_core (do not bind it to vfio-pci); install rdma-core/libibverbs"
				return
			}
		}
		if vendor == "0x15b3" {
			// mlx5 is bifurcated: the PMD reaches the device through its
			// RDMA device while it stays bound to mlx5_core. Binding it to
			// vfio-pci is the wrong fix: it removes the RDMA device.
			d.Cause = fmt.Sprintf("the mlx5 PMD could not attach %s; mlx5 is bifurcated (the device stays bound to mlx5_core and DPDK reaches it through its RDMA device), so the usual causes are a representor index the eswitch does not have, the eswitch not in switchdev mode, or another DPDK process holding the port", bdf)
			d.Fix = fmt.Sprintf("keep %s bound to mlx5_core (do not bind it to vfio-pci); check that `rdma link` lists it, that `devlink dev eswitch show pci/%s` says mode switchdev when the devargs name a representor, and read the evidence lines from the ovs-vswitchd log", bdf, bdf)
		} else {
			drv := "no driver"
			if l, err := h.Readlink(dir + "/driver"); err == nil {
				drv = "driver " + filepath.Base(l)
			}
			d.Cause = fmt.Sprintf("DPDK could not attach PCI device %s (bound to %s; a non-mlx5 NIC must be bound to vfio-pci for DPDK, or another process uses it)", bdf, drv)
			d.Fix = fmt.Sprintf("bind %s to vfio-pci: dpdk-devbind.py --bind=vfio-pci %s (modprobe vfio-pci first), then `rig up`", bdf, bdf)
		}
		if len(d.Evidence) == 0 {
			d.Evidence = log.matching(3, "EAL:")
		}
		return
	}
	if why := CheckDevargs(devargs); why != "" {
		d.Kind = ProblemBadDevargs
		d.Evidence = log.matching(2, "Driver cannot attach the device")
		d.Cause = fmt.Sprintf("malformed devargs %q: %s", devargs, why)
		d.Fix = "write devargs as <pci-address|vdev-name>[,key=value...], e.g. 0000:03:00.0,representor=[65535] or net_null0"
		return
	}
	if m := log.matching(2, "Driver cannot attach the device ("+dev+")"); len(m) > 0 {
		d.Kind = ProblemBadDevargs
		d.Evidence = append(log.matching(2, dev+"):"), m...)
		d.Cause = fmt.Sprintf("the DPDK driver for %s rejected the devargs %q (unknown or invalid key=value argument)", dev, devargs)
		d.Fix = "check the arguments against the PMD's documented devargs (e.g. doc/guides/nics/<pmd>.rst)"
		return
	}
	if m := log.matching(1, "Cannot find device ("+dev+")"); len(m) > 0 || !strings.HasPrefix(dev, "net_") {
		d.Evidence = m
		d.Cause = fmt.Sprintf("DPDK has no driver or device named %q", dev)
		d.Fix = "vdev names start with the PMD name (net_null0, net_af_packet0, net_memif0) and PCI addresses look like 0000:03:00.0"
		return
	}
	d.Cause = fmt.Sprintf("DPDK could not attach %q", devargs)
	d.Fix = "see the evidence lines from the ovs-vswitchd log"
	d.Evidence = log.matching(3, dev)
}
