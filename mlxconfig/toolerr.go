package mlxconfig

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"rig/internal/pci"
)

// Failure kinds (Failure.Kind): what a failing mstconfig/mlxconfig query
// or set (or mstprivhost) said, by the families of its "-E-" lines, with
// the host's facts deciding between the causes mstflint prints as one
// text. The texts are mstflint's (Mellanox/mstflint, quoted per kind
// below; hardware-formats.md §13). MlxCfg::err and printErr print them to
// stdout as "-E- <text>" (mlxconfig/mlxcfg_ui.cpp), mtcr's own messages go
// to stderr (perror, fprintf(stderr)), so both streams are read.
const (
	// "Error when trying to check if NV access registers are supported[ rc=(N)]"
	// (mlxconfig/mlxcfg_generic_commander.cpp GenericCommander::supportsNVData,
	// any MError of the NVQC/MNVQC register read but the two below). Seen on a
	// BlueField whose mode was just changed and whose host was only rebooted
	// (Mellanox/mstflint issue #1191: "after running the mlxconfig set command,
	// a full power-cycle is required — a simple reboot will not suffice").
	FailNVAccessCheck = "nv-access-check-failed"
	// "Cannot access NV register. Either FW does not support NV access
	// register, or HW access is disabled. rc=(N)" (BAD_PARAM/INTERNAL_ERROR;
	// older: "FW does not support NV access registers"), and "NVQC access
	// register is not supported. Try a different type of access to the
	// device." (REG_NOT_SUPP), same function.
	FailNVAccessDenied = "nv-access-unsupported"
	// "Failed to open the device" (mlxconfig/mlxcfg_commander.cpp
	// Commander::create, mopen returned NULL), "Failed to open device: %s. %s"
	// (mlxconfig/mlxcfg_4th_gen_commander.cpp, ConnectX-3; older mstflint's
	// mlxconfig/mlxcfg_ui.cpp MlxCfg::resetDevCfg), "Failed to query device:
	// %s. Failed to open device" (older mlxcfg_ui.cpp MlxCfg::queryDevCfg with
	// mlxconfig/mlxcfg_lib.cpp MlxCfgOps::open's MCE_OPEN_DEVICE text),
	// "Failed to get device type" (Commander::create), and flint's "Cannot
	// open Device: %s. %s" (flint/err_msgs.h FLINT_OPEN_FWOPS_DEVICE_ERROR)
	// whose reason is strerror and an MFE_* name (mflash/mflash.c
	// mf_err2str; issue #20: "Cannot open Device: 0031:01:00.0. Operation not
	// supported. MFE_CR_ERROR"). Without a host fact that tells the cause
	// apart (below) the kind stays open-failed.
	FailOpen = "open-failed"
	// The device the tool was given is not there: the open failed and
	// /sys/bus/pci/devices/<BDF> does not exist (mopen_ul_int finds no such
	// function in mdevices_info and returns NULL); mtcr could not parse the
	// name ("Unable to parse device name %s" on stderr,
	// mtcr_ul/mtcr_ul_com.c mtcr_parse_name: a /dev/mst name or a typo given
	// to mstflint); "No devices found." (mlxconfig/mlxcfg_ui.cpp NO_DEV_ERR,
	// mstflint's build, a query without -d); mstprivhost's "Unknown device
	// '%s'!" (mlxconfig/mstprivhost.py PrivilegeMgr.validate: its mstmcra
	// read of the device id failed).
	FailNoDevice = "device-not-found"
	// The function is not driven by mlx5_core: "Cannot perform operation,
	// Driver might be down." (mlxconfig/mlxcfg_lib.cpp MlxCfgOps errmap
	// MCE_DRIVER_DOWN, also the ConnectX-3 commander's), or an open or
	// identify failure on a function whose /sys/bus/pci/devices/<BDF>/driver
	// is not mlx5_core (none, or another driver such as vfio-pci).
	FailDriver = "driver-not-loaded"
	// The tool may not reach the device: an open or identify failure while
	// rig is not root (mopen_ul_int refuses any euid but 0 with EACCES), or
	// under kernel lockdown (issue #416, mstflint 4.15: "write counter to
	// semaphore: Permission denied" on stderr, mtcr_ul_com.c
	// mtcr_pciconf_cap9_sem's perror, then "-E- Failed to open the device";
	// issue #1371, mstflint 4.33: "-E- Failed to open the device" by RDMA
	// name, "-E- Failed to identify the device" by BDF), or a "Permission
	// denied"/"Operation not permitted" in the output; and MFE_HW_ACCESS_DISABLED
	// (mflash/mflash.c mf_err2str for MFE_LOCKED_CRSPACE: the crspace is
	// locked) or flint's "HW access is disabled on the device.".
	FailPermission = "no-permission"
	// MFT's device node is not there: the -d is a /dev/mst/ path that does
	// not exist (`mst start` not run since boot), or MFT's "No devices
	// found, mst might be stopped. You may need to run 'mst start' to load
	// MST modules." (mlxconfig/mlxcfg_ui.cpp NO_DEV_ERR, the non-MST_UL
	// build).
	FailMSTNode = "mst-node-missing"
	// "Failed to identify the device" (Commander::create: dm_get_device_id
	// failed); older "Failed to identify device." (mlxconfig/mlxcfg_lib.cpp
	// MlxCfgOps::opend, behind "Failed to query device: %s. ").
	FailIdentify = "identify-failed"
	// "Unsupported device", "MTUSB device is not supported." (Commander::create),
	// "Device not supported." (mlxcfg_4th_gen_commander.cpp MCE_UNSUPPORTED_DEVICE),
	// mstprivhost's "Device '%s' is not supported, only BlueField devices are
	// supported!" (mstprivhost.py PrivilegeMgr.validate).
	FailUnsupportedDevice = "unsupported-device"
	// "Device in Livefish mode is not supported" (Commander::create).
	FailLivefish = "livefish"
	// "The Device doesn't support %s parameter"
	// (mlxconfig/mlxcfg_generic_commander.cpp queryParamViews).
	FailParamUnsupported = "param-unsupported"
	// "Aborted by user." (mlxcfg_ui.cpp askUser: no -y and no answer).
	FailAborted = "aborted"
	// any other "-E-" line (unclassified: its text is the cause), or none
	FailUnknown = "tool-error"
)

// Reasons (Failure.Reason): which fact or text decided a kind that has
// more than one cause.
const (
	whyNoPCIFunction = "no-pci-function"
	whyUnparsedName  = "unparsable-name"
	whyNoDevices     = "no-devices"
	whyUnknownDevice = "unknown-device"
	whyNodeAbsent    = "node-absent"
	whyMSTStopped    = "mst-stopped"
	whyNotRoot       = "not-root"
	whyLockdown      = "lockdown"
	whyRefused       = "refused"
	whyHWAccess      = "hw-access-disabled"
	whyUnbound       = "unbound"
	whyDriverDown    = "driver-down"
)

// Failure is a classified firmware-tool failure: the kind, the device the
// tool named (else the -d argument), the MFE_/ME_ error code and rc when
// the text carries them, the "-E-" line it was classified from, and what
// decided between causes (Reason, with the fact or line as Evidence).
type Failure struct {
	Kind     string   `json:"kind"`
	Tool     string   `json:"tool"`
	Device   string   `json:"device,omitempty"`
	Code     string   `json:"code,omitempty"` // MFE_CR_ERROR, ME_REG_ACCESS_DEV_BUSY, ...
	RC       int      `json:"rc,omitempty"`   // the "rc=(N)" number, 0 when absent
	Param    string   `json:"param,omitempty"`
	Line     string   `json:"line,omitempty"` // the -E- text, without the prefix
	Raw      string   `json:"raw,omitempty"`  // the tool's -E- line as printed, from "-E-" on, trimmed
	Reason   string   `json:"reason,omitempty"`
	Evidence string   `json:"evidence,omitempty"`
	Argv     []string `json:"argv,omitempty"` // the command, to rerun by hand
	Exit     string   `json:"exit,omitempty"` // how it ended: "exit status 3"
}

// Run is one failing run of a firmware tool, as ClassifyRun reads it.
type Run struct {
	Tool   string
	Args   []string // the arguments after the tool's name
	Device string   // the -d argument
	Output string   // stdout and stderr
	Exit   string   // how it ended ("exit status 3"), "" when unknown
	Facts  *HostFacts
}

var (
	reRC       = regexp.MustCompile(`rc=\((-?[0-9]+)\)`)
	reCode     = regexp.MustCompile(`\b(MFE_[A-Z0-9_]+|ME_[A-Z0-9_]+)\b`)
	reOpenDev  = regexp.MustCompile(`(?:Failed to open device|Cannot open Device|Failed to query device|Failed to set configuration on device): (\S+?)\.(?: (.*))?$`)
	reParam    = regexp.MustCompile(`doesn't support (\S+) parameter`)
	reDevInTxt = regexp.MustCompile(`(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]|/dev/mst/\S+`)
	// the "-E-" marker: at the start of a line or after a prefix that ends
	// in a non-word character (a timestamp and a space, "[...]", a prompt's
	// ": "), followed by a blank or the end of the line
	reMarker = regexp.MustCompile(`(?:^|[^\w-])(-E-)(?:\s|$)`)
	// mtcr's stderr lines that tell a cause the -E- line does not
	reUnparsed = regexp.MustCompile(`Unable to parse device name (\S+)`)
	reErrno    = regexp.MustCompile(`Permission denied|Operation not permitted`)
)

// errorLine is one -E- message: its text after the marker and the line
// as printed from the marker on.
type errorLine struct{ text, raw string }

// outputLines splits a tool's output into lines (\n, \r\n and a lone \r,
// which progress output uses).
func outputLines(out string) []string {
	out = strings.ReplaceAll(out, "\r\n", "\n")
	return strings.FieldsFunc(out, func(r rune) bool { return r == '\n' || r == '\r' })
}

func errorLines(out string) []errorLine {
	var lines []errorLine
	for _, raw := range outputLines(out) {
		if m := reMarker.FindStringSubmatchIndex(raw); m != nil {
			lines = append(lines, errorLine{text: strings.TrimSpace(raw[m[3]:]), raw: strings.TrimSpace(raw[m[2]:])})
		}
	}
	return lines
}

// ErrorLines returns the "-E-" messages of a tool's output, without the
// marker. A message may follow a prefix on the same line: a log
// timestamp ("2026-12-04 10:00:01 -E- ..."), a bracketed tag, or a prompt
// (askUser prints " Apply new Configuration? (y/n) [n] : " without a
// newline, and with no answer on stdin "-E- Aborted by user." comes right
// after it).
func ErrorLines(out string) []string {
	var texts []string
	for _, l := range errorLines(out) {
		texts = append(texts, l.text)
	}
	return texts
}

// failurePatterns maps the texts above to their kinds, most specific first.
var failurePatterns = []struct {
	substr, kind, reason string
}{
	{"Error when trying to check if NV access registers are supported", FailNVAccessCheck, ""},
	{"Cannot access NV register", FailNVAccessDenied, ""},
	{"does not support NV access register", FailNVAccessDenied, ""},
	{"NVQC access register is not supported", FailNVAccessDenied, ""},
	{"Device in Livefish mode is not supported", FailLivefish, ""},
	{"Cannot perform operation, Driver might be down", FailDriver, whyDriverDown},
	{"MFE_HW_ACCESS_DISABLED", FailPermission, whyHWAccess},
	{"HW access is disabled on the device", FailPermission, whyHWAccess},
	{"mst might be stopped", FailMSTNode, whyMSTStopped},
	{"No devices found", FailNoDevice, whyNoDevices},
	{"Unknown device '", FailNoDevice, whyUnknownDevice},
	{"Failed to identify the device", FailIdentify, ""},
	{"Failed to identify device", FailIdentify, ""},
	{"Unsupported device", FailUnsupportedDevice, ""},
	{"MTUSB device is not supported", FailUnsupportedDevice, ""},
	{"Device not supported", FailUnsupportedDevice, ""},
	{"only BlueField devices are supported", FailUnsupportedDevice, ""},
	{"Failed to open the device", FailOpen, ""},
	{"Failed to open device", FailOpen, ""},
	{"Cannot open Device", FailOpen, ""},
	{"Failed to get device type", FailOpen, ""},
	{"doesn't support any configuration changes", FailParamUnsupported, ""},
	{"doesn't support", FailParamUnsupported, ""},
	{"Aborted by user", FailAborted, ""},
}

// ClassifyFailure reads a failing run of tool (mstconfig or mlxconfig)
// on device dev (its -d argument) from what it printed (stdout and
// stderr), without host facts or the command line: ClassifyRun with only
// those.
func ClassifyFailure(tool, dev, out string) Failure {
	return ClassifyRun(Run{Tool: tool, Device: dev, Output: out})
}

// ClassifyRun reads a failing run. The first -E- line of a known family
// decides the kind; an open or identify failure is then told apart by
// mtcr's own stderr lines and the host facts (a missing PCI function or
// /dev/mst node, not root, kernel lockdown, the driver). Without a known
// family the kind is FailUnknown with the first -E- line (or none).
func ClassifyRun(r Run) Failure {
	f := Failure{Kind: FailUnknown, Tool: r.Tool, Device: r.Device, Exit: r.Exit}
	if len(r.Args) > 0 {
		f.Argv = append([]string{r.Tool}, r.Args...)
	}
	lines := errorLines(r.Output)
	if len(lines) > 0 {
		f.Line, f.Raw = lines[0].text, lines[0].raw
	}
	for _, p := range failurePatterns {
		for _, l := range lines {
			if strings.Contains(l.text, p.substr) {
				f.Kind, f.Reason, f.Line, f.Raw = p.kind, p.reason, l.text, l.raw
				f.fill(l.text)
				if f.Reason == whyHWAccess && f.Code == "" {
					f.Code = "MFE_HW_ACCESS_DISABLED"
				}
				f.refine(r)
				return f
			}
		}
	}
	return f
}

// refine tells the causes of an open or identify failure apart: mtcr's
// stderr lines first (the tool's own words), then the host facts, most
// decisive first. A busy device (semaphore held) keeps its own cause.
func (f *Failure) refine(r Run) {
	if f.Kind != FailOpen && f.Kind != FailIdentify {
		if f.Kind == FailDriver && r.Facts != nil && r.Facts.DriverRead {
			f.Evidence = driverFact(r.Facts)
		}
		return
	}
	if f.Code == "MFE_SEM_LOCKED" || f.Code == "ME_SEM_LOCKED" {
		return
	}
	all := outputLines(r.Output)
	find := func(re *regexp.Regexp) string {
		for _, l := range all {
			if re.MatchString(l) {
				return strings.TrimSpace(l)
			}
		}
		return ""
	}
	h := r.Facts
	if h == nil {
		h = &HostFacts{}
	}
	set := func(kind, reason, evidence string) { f.Kind, f.Reason, f.Evidence = kind, reason, evidence }
	// the tool opened the device before it failed to identify it: the
	// name, the node, the function and the uid were right
	open := f.Kind == FailOpen
	switch errnoLine, unparsed := find(reErrno), find(reUnparsed); {
	case open && unparsed != "":
		set(FailNoDevice, whyUnparsedName, unparsed)
	case open && h.MST == Absent:
		set(FailMSTNode, whyNodeAbsent, h.MSTNode+" does not exist")
	case open && h.PCI == Absent:
		set(FailNoDevice, whyNoPCIFunction, h.PCIPath+" does not exist")
	case open && h.EUIDKnown && h.EUID != 0:
		set(FailPermission, whyNotRoot, fmt.Sprintf("rig runs as uid %d", h.EUID))
	case h.LockedDown():
		ev := "/sys/kernel/security/lockdown: " + h.LockdownText
		if errnoLine != "" {
			ev = errnoLine + "; " + ev
		}
		set(FailPermission, whyLockdown, ev)
	case errnoLine != "":
		set(FailPermission, whyRefused, errnoLine)
	case h.DriverRead && !mlxDriver(h.Driver):
		set(FailDriver, whyUnbound, driverFact(h))
	}
}

// mlxDriver: the NIC drivers under which mstflint opens a function.
func mlxDriver(d string) bool { return d == "mlx5_core" || d == "mlx4_core" }

// driverFact words the driver fact: which driver, and that mlx5_core's
// directory has no entry for the function.
func driverFact(h *HostFacts) string {
	bdf := strings.TrimPrefix(h.PCIPath, "/sys/bus/pci/devices/")
	if mlxDriver(h.Driver) {
		return fmt.Sprintf("%s/driver is %s", h.PCIPath, h.Driver)
	}
	bound := "no driver bound (no " + h.PCIPath + "/driver)"
	if h.Driver != "" {
		bound = fmt.Sprintf("%s/driver is %s", h.PCIPath, h.Driver)
	}
	return fmt.Sprintf("%s, no /sys/bus/pci/drivers/mlx5_core/%s", bound, bdf)
}

// quote puts a text the tool printed in quotes, as printed (no escapes).
func quote(s string) string { return "\"" + s + "\"" }

// fill pulls the device, rc, MFE/ME code and parameter out of line.
func (f *Failure) fill(line string) {
	if m := reOpenDev.FindStringSubmatch(line); m != nil {
		f.Device = m[1]
	} else if d := reDevInTxt.FindString(line); d != "" {
		f.Device = d
	}
	if m := reRC.FindStringSubmatch(line); m != nil {
		f.RC, _ = strconv.Atoi(m[1])
		f.Code = MErrorName(f.RC)
	}
	if m := reCode.FindString(line); m != "" {
		f.Code = m
	}
	if m := reParam.FindStringSubmatch(line); m != nil {
		f.Param = m[1]
	}
}

// MErrorName names an mtcr MError number (Mellanox/mstflint
// include/mtcr_ul/mtcr_com_defs.h enum MError): the general block 1..6 and
// the register-access block from 0x100; "" for others (their numbering
// moved between mstflint versions).
func MErrorName(rc int) string {
	general := []string{"", "ME_ERROR", "ME_BAD_PARAMS", "ME_CR_ERROR", "ME_NOT_IMPLEMENTED", "ME_SEM_LOCKED", "ME_MEM_ERROR"}
	reg := []string{"ME_REG_ACCESS_BAD_STATUS_ERR", "ME_REG_ACCESS_BAD_METHOD", "ME_REG_ACCESS_NOT_SUPPORTED",
		"ME_REG_ACCESS_DEV_BUSY", "ME_REG_ACCESS_VER_NOT_SUPP", "ME_REG_ACCESS_UNKNOWN_TLV", "ME_REG_ACCESS_REG_NOT_SUPP",
		"ME_REG_ACCESS_CLASS_NOT_SUPP", "ME_REG_ACCESS_METHOD_NOT_SUPP", "ME_REG_ACCESS_BAD_PARAM", "ME_REG_ACCESS_RES_NOT_AVLBL",
		"ME_REG_ACCESS_MSG_RECPT_ACK", "ME_REG_ACCESS_UNKNOWN_ERR", "ME_REG_ACCESS_SIZE_EXCCEEDS_LIMIT", "ME_REG_ACCESS_CONF_CORRUPT",
		"ME_REG_ACCESS_LEN_TOO_SMALL", "ME_REG_ACCESS_BAD_CONFIG", "ME_REG_ACCESS_ERASE_EXEEDED", "ME_REG_ACCESS_INTERNAL_ERROR"}
	switch {
	case rc > 0 && rc < len(general):
		return general[rc]
	case rc >= 0x100 && rc < 0x100+len(reg):
		return reg[rc-0x100]
	}
	return ""
}

// Known reports whether the failure was recognised.
func (f Failure) Known() bool { return f.Kind != FailUnknown }

// what names the device for messages.
func (f Failure) dev() string {
	if f.Device == "" {
		return "<device>"
	}
	return f.Device
}

// command is the tool's command line, to rerun by hand.
func (f Failure) command() string {
	if len(f.Argv) > 0 {
		return strings.Join(f.Argv, " ")
	}
	if f.Device != "" {
		return f.Tool + " -d " + f.Device + " q"
	}
	return f.Tool + " q"
}

// Cause says what the failure most likely means. It is never empty: an
// unclassified failure's cause is the tool's own -E- line, marked so.
func (f Failure) Cause() string {
	switch f.Kind {
	case FailNVAccessCheck:
		return fmt.Sprintf("the firmware of %s does not answer NV configuration access%s; most often its mode (INTERNAL_CPU_*) was changed and the host was only rebooted: "+
			"a warm reboot does not reload the NIC firmware, so it stays between the old and the new configuration "+
			"(the state after `rig up`/`rig mode set` exits 3, \"power cycle required\", and the server is rebooted instead); "+
			"less often another tool (mstconfig, flint, mstfwreset) holds the device", f.dev(), f.rcText())
	case FailNVAccessDenied:
		if strings.Contains(f.Line, "Try a different type of access") {
			return fmt.Sprintf("the firmware of %s does not offer the NVQC register through this access path (%s)", f.dev(), f.rcText())
		}
		return fmt.Sprintf("the firmware of %s refuses NV configuration access%s: firmware too old for NV configuration, or hardware access to the device is disabled", f.dev(), f.rcText())
	case FailOpen:
		return f.openCause()
	case FailNoDevice, FailDriver, FailPermission, FailMSTNode:
		return f.accessCause()
	case FailIdentify:
		return fmt.Sprintf("%s opened %s but could not read its device id: the function is hung or resetting, or config-space access is blocked", f.Tool, f.dev())
	case FailUnsupportedDevice:
		return fmt.Sprintf("this %s does not support %s (the tool is older than the device, or the device is not a NIC it configures)", f.Tool, f.dev())
	case FailLivefish:
		return fmt.Sprintf("%s is in Livefish (firmware recovery) mode: no valid NIC firmware is running", f.dev())
	case FailParamUnsupported:
		param := f.Param
		if param == "" {
			param = "any configuration parameter"
		}
		return fmt.Sprintf("the firmware of %s does not expose %s to this host: not a BlueField (a ConnectX has no INTERNAL_CPU_* parameters), firmware too old for it, or a restricted (zero-trust) host", f.dev(), param)
	case FailAborted:
		return fmt.Sprintf("%s asked for confirmation and got no answer (run without -y)", f.Tool)
	}
	if f.Raw != "" {
		return fmt.Sprintf("unclassified: %s printed %s, a message rig does not know", f.Tool, quote(f.Raw))
	}
	exit := ""
	if f.Exit != "" {
		exit = " (" + f.Exit + ")"
	}
	return fmt.Sprintf("unclassified: %s failed%s without printing an -E- line, so it gave no cause", f.Tool, exit)
}

// accessCause explains the kinds whose cause a fact or mtcr's own line
// decided (Reason), naming that evidence.
func (f Failure) accessCause() string {
	d, ev := f.dev(), f.Evidence
	switch f.Reason {
	case whyNoPCIFunction:
		return fmt.Sprintf("there is no PCI function %s on this host (%s): a wrong PCI address (playbook devices, --device), or the card is not enumerated (seating, slot power, BIOS)", d, ev)
	case whyUnparsedName:
		return fmt.Sprintf("%s could not parse the device name %s (%s, mtcr's parser): mstflint takes a PCI address (0000:03:00.0), an RDMA device (mlx5_0) or a sysfs config path, not MFT's /dev/mst names; or the name has a typo", f.Tool, d, quote(ev))
	case whyNoDevices:
		return fmt.Sprintf("%s found no Mellanox device it supports on PCI (%s): the card is not enumerated, or this mstflint does not know its device id", f.Tool, quote(f.Raw))
	case whyUnknownDevice:
		return fmt.Sprintf("%s could not read the device id of %s (%s: its mstmcra read failed): a wrong address, not run as root, or the device is unreachable", f.Tool, d, quote(f.Raw))
	case whyNodeAbsent:
		return fmt.Sprintf("%s was given MFT's device node %s, which does not exist (%s): `mst start` has not run since boot (it loads mst_pci/mst_pciconf and creates /dev/mst/*), or the node's name is wrong", f.Tool, d, ev)
	case whyMSTStopped:
		return fmt.Sprintf("%s (NVIDIA MFT) found no /dev/mst device (%s): `mst start` has not run since boot, so MFT's modules and device nodes are not there", f.Tool, quote(f.Raw))
	case whyNotRoot:
		return fmt.Sprintf("%s may not open %s: %s, not root, and mstflint's mopen refuses every user but root (mtcr_ul mopen_ul_int, EACCES); MFT's tools need root too", f.Tool, d, ev)
	case whyLockdown:
		return fmt.Sprintf("the kernel is locked down (%s), which refuses the direct PCI config-space and BAR access %s uses on %s (lockdown_reason \"direct PCI access\"; Secure Boot turns lockdown on)", ev, f.Tool, d)
	case whyRefused:
		return fmt.Sprintf("the kernel refused %s access to %s (%s) although it ran as root: kernel lockdown (Secure Boot), or a confined context (a container without CAP_SYS_RAWIO/CAP_SYS_ADMIN, an LSM policy)", f.Tool, d, quote(ev))
	case whyHWAccess:
		return fmt.Sprintf("hardware access to %s is disabled (%s: its crspace is locked, as `flint hw_access disable` leaves it)", d, f.Code)
	case whyUnbound:
		return fmt.Sprintf("%s is not driven by mlx5_core (%s): the mlx5_core module is not loaded, its probe of the function failed, or another driver (vfio-pci) holds it, and %s could not open the function without it", d, ev, f.Tool)
	case whyDriverDown:
		c := fmt.Sprintf("%s says the NIC driver is down on %s (%s): mlx5_core (mlx4_core on a ConnectX-3) is not loaded or not bound to the function", f.Tool, d, quote(f.Raw))
		if ev != "" {
			c += " (" + ev + ")"
		}
		return c
	}
	return f.openCause()
}

func (f Failure) rcText() string {
	switch {
	case f.Code != "":
		return fmt.Sprintf(" (rc %d, %s)", f.RC, f.Code)
	case f.RC != 0:
		return fmt.Sprintf(" (rc %d)", f.RC)
	}
	return ""
}

// openCause explains an open failure by its MFE/ME code when there is one.
func (f Failure) openCause() string {
	switch f.Code {
	case "MFE_SEM_LOCKED", "ME_SEM_LOCKED":
		return fmt.Sprintf("%s is busy: another tool holds its semaphore (%s)", f.dev(), f.Code)
	case "MFE_CR_ERROR", "ME_CR_ERROR":
		return fmt.Sprintf("reading the configuration space of %s failed (%s): the function is hung or gone, or kernel lockdown blocks the access", f.dev(), f.Code)
	}
	code := ""
	if f.Code != "" {
		code = " (" + f.Code + ")"
	}
	return fmt.Sprintf("%s could not open %s%s: not run as root, no such device (wrong PCI address, or a /dev/mst path without `mst start` and its mst_pci/mst_pciconf modules), "+
		"kernel lockdown (Secure Boot) blocking config-space access, mlx5_core not bound, or the device busy in another tool", f.Tool, f.dev(), code)
}

// Fix says what to do about the failure. It is never empty: an
// unclassified failure's fix is to rerun the command by hand.
func (f Failure) Fix() string {
	d := f.dev()
	switch f.Kind {
	case FailNVAccessCheck:
		return fmt.Sprintf("cold power cycle the server (power off, wait ~30 s, power on; a reboot is not enough), or reset the NIC firmware with `mstfwreset -d %s reset` (MFT: `mlxfwreset -d %s reset`); "+
			"make sure no other mstconfig/flint runs on %s; then rerun", d, d, d)
	case FailNVAccessDenied:
		if strings.Contains(f.Line, "Try a different type of access") {
			return fmt.Sprintf("use the other access path: the PCI address (`%s -d 0000:03:00.0 ...`) instead of a /dev/mst path, or `mst start` and /dev/mst/<name>", f.Tool)
		}
		return fmt.Sprintf("check the firmware with `flint -d %s q` and update it; if hardware access is disabled, enable it with `flint -d %s hw_access enable`", d, d)
	case FailOpen:
		return fmt.Sprintf("run as root; check the address with `lspci -d 15b3:` (and `lspci -s %s -vv`); for /dev/mst paths run `mst start` or give the PCI address; "+
			"stop other firmware tools on the device; under kernel lockdown use a kernel/boot without lockdown for firmware work", d)
	case FailNoDevice, FailDriver, FailPermission, FailMSTNode:
		return f.accessFix()
	case FailIdentify:
		return fmt.Sprintf("check `lspci -s %s -vv` and `dmesg | grep mlx5`; cold power cycle the server if the device stays unreadable", d)
	case FailUnsupportedDevice:
		return "install a newer mstflint (or NVIDIA MFT's mlxconfig), which knows this device"
	case FailLivefish:
		return fmt.Sprintf("burn valid firmware (`flint -d %s -i <firmware.bin> burn`, or `mlxfwmanager -u`), then cold power cycle", d)
	case FailParamUnsupported:
		return "remove the setting for this device; on a BlueField update the firmware, or make the change from the Arm side if this host is restricted"
	case FailAborted:
		return "answer the prompt, or pass -y"
	}
	return fmt.Sprintf("run `%s` by hand as root and read all it prints (stdout and stderr); `%s -v` names the mstflint/MFT version to look the message up in", f.command(), f.Tool)
}

func (f Failure) accessFix() string {
	d := f.dev()
	switch f.Reason {
	case whyNoPCIFunction, whyNoDevices, whyUnknownDevice:
		return "find the card's address with `lspci -d 15b3:` (or `rig inventory`) and correct the device (playbook devices, --device); if the card is not listed, check its seating, slot power and BIOS, and `dmesg | grep -i -e pci -e mlx5`"
	case whyUnparsedName:
		return fmt.Sprintf("give the PCI address instead of %s (`lspci -d 15b3:`; `mst status -v` maps /dev/mst names to addresses)", d)
	case whyNodeAbsent, whyMSTStopped:
		return "run `mst start` (then `mst status -v` lists the nodes) and rerun, or give the PCI address: mstflint's mstconfig opens it by address and needs no `mst start`"
	case whyNotRoot:
		return "run rig as root (sudo rig ...)"
	case whyLockdown, whyRefused:
		return "check `cat /sys/kernel/security/lockdown` and `dmesg | grep -i lockdown`; do firmware work on a boot without lockdown (Secure Boot off), or with a firmware tool that goes through a signed kernel module (mstflint >= 4.18 with its mstflint_access module, or NVIDIA MFT's); " +
			"in a container, run privileged in the host's namespaces"
	case whyHWAccess:
		return fmt.Sprintf("enable hardware access with `flint -d %s hw_access enable [key]`, then rerun", d)
	case whyUnbound, whyDriverDown:
		bdf := d
		if c, ok := pci.Canonical(strings.ToLower(d)); ok {
			bdf = c
		}
		return fmt.Sprintf("load the driver (`modprobe mlx5_core`) and check `dmesg | grep mlx5`; if another driver holds %s, give it back (`rig down` for rig's bind step, or `echo %s > /sys/bus/pci/devices/%s/driver/unbind; echo %s > /sys/bus/pci/drivers/mlx5_core/bind`); then rerun", bdf, bdf, bdf, bdf)
	}
	return Failure{Kind: FailOpen, Tool: f.Tool, Device: f.Device}.Fix()
}

// Summary is one line: kind, device, code ("unclassified" when unknown).
func (f Failure) Summary() string {
	s := f.Kind + " on " + f.dev()
	if !f.Known() {
		s = "unclassified " + s
	}
	if f.Code != "" {
		s += " (" + f.Code + ")"
	}
	return s
}
