package mlxconfig

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Failure kinds (Failure.Kind): what a failing mstconfig/mlxconfig query
// or set said, by the families of its "-E-" lines. The texts are
// mstflint's (Mellanox/mstflint, quoted per kind below; hardware-formats.md
// §13). MlxCfg::err and printErr print them to stdout as "-E- <text>"
// (mlxconfig/mlxcfg_ui.cpp), so they are read from stdout and stderr.
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
	// (mlxconfig/mlxcfg_4th_gen_commander.cpp, ConnectX-3), "Failed to get
	// device type" (Commander::create), and flint's "Cannot open Device: %s.
	// %s" (flint/err_msgs.h FLINT_OPEN_FWOPS_DEVICE_ERROR) whose reason is an
	// MFE_* name (mflash/mflash.c mf_err2str).
	FailOpen = "open-failed"
	// "Failed to identify the device" (Commander::create: dm_get_device_id failed).
	FailIdentify = "identify-failed"
	// "Unsupported device", "MTUSB device is not supported." (Commander::create),
	// "Device not supported." (mlxcfg_4th_gen_commander.cpp MCE_UNSUPPORTED_DEVICE).
	FailUnsupportedDevice = "unsupported-device"
	// "Device in Livefish mode is not supported" (Commander::create).
	FailLivefish = "livefish"
	// "The Device doesn't support %s parameter"
	// (mlxconfig/mlxcfg_generic_commander.cpp queryParamViews).
	FailParamUnsupported = "param-unsupported"
	// "Aborted by user." (mlxcfg_ui.cpp askUser: no -y and no answer).
	FailAborted = "aborted"
	// any other "-E-" line, or none
	FailUnknown = "tool-error"
)

// Failure is a classified firmware-tool failure: the kind, the device the
// tool named (else the -d argument), the MFE_/ME_ error code and rc when
// the text carries them, and the "-E-" line it was classified from.
type Failure struct {
	Kind   string `json:"kind"`
	Tool   string `json:"tool"`
	Device string `json:"device,omitempty"`
	Code   string `json:"code,omitempty"` // MFE_CR_ERROR, ME_REG_ACCESS_DEV_BUSY, ...
	RC     int    `json:"rc,omitempty"`   // the "rc=(N)" number, 0 when absent
	Param  string `json:"param,omitempty"`
	Line   string `json:"line,omitempty"` // the -E- text, without the prefix
}

var (
	reRC       = regexp.MustCompile(`rc=\((-?[0-9]+)\)`)
	reCode     = regexp.MustCompile(`\b(MFE_[A-Z0-9_]+|ME_[A-Z0-9_]+)\b`)
	reOpenDev  = regexp.MustCompile(`(?:Failed to open device|Cannot open Device): (\S+?)\.(?: (.*))?$`)
	reParam    = regexp.MustCompile(`doesn't support (\S+) parameter`)
	reDevInTxt = regexp.MustCompile(`(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]|/dev/mst/\S+`)
)

// ErrorLines returns the "-E-" messages of a tool's output, without the
// prefix. A message may follow a prompt on the same line: askUser prints
// " Apply new Configuration? (y/n) [n] : " without a newline, and with no
// answer on stdin "-E- Aborted by user." comes right after it.
func ErrorLines(out string) []string {
	var lines []string
	for _, raw := range strings.Split(strings.ReplaceAll(out, "\r\n", "\n"), "\n") {
		if i := strings.Index(raw, "-E-"); i >= 0 {
			lines = append(lines, strings.TrimSpace(raw[i+len("-E-"):]))
		}
	}
	return lines
}

// failurePatterns maps the texts above to their kinds, most specific first.
var failurePatterns = []struct {
	substr, kind string
}{
	{"Error when trying to check if NV access registers are supported", FailNVAccessCheck},
	{"Cannot access NV register", FailNVAccessDenied},
	{"does not support NV access register", FailNVAccessDenied},
	{"NVQC access register is not supported", FailNVAccessDenied},
	{"Device in Livefish mode is not supported", FailLivefish},
	{"Failed to identify the device", FailIdentify},
	{"Unsupported device", FailUnsupportedDevice},
	{"MTUSB device is not supported", FailUnsupportedDevice},
	{"Device not supported", FailUnsupportedDevice},
	{"Failed to open the device", FailOpen},
	{"Failed to open device", FailOpen},
	{"Cannot open Device", FailOpen},
	{"Failed to get device type", FailOpen},
	{"doesn't support any configuration changes", FailParamUnsupported},
	{"doesn't support", FailParamUnsupported},
	{"Aborted by user", FailAborted},
}

// ClassifyFailure reads a failing run of tool (mstconfig or mlxconfig)
// on device dev (its -d argument): out is what the tool printed (stdout
// and stderr). The first -E- line of a known family decides; without one
// the kind is FailUnknown with the first -E- line.
func ClassifyFailure(tool, dev, out string) Failure {
	f := Failure{Kind: FailUnknown, Tool: tool, Device: dev}
	lines := ErrorLines(out)
	if len(lines) > 0 {
		f.Line = lines[0]
	}
	for _, p := range failurePatterns {
		for _, l := range lines {
			if strings.Contains(l, p.substr) {
				f.Kind, f.Line = p.kind, l
				f.fill(l)
				return f
			}
		}
	}
	return f
}

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

// Cause says what the failure most likely means ("" when unknown).
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
	return ""
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
	case "MFE_HW_ACCESS_DISABLED":
		return fmt.Sprintf("hardware access to %s is disabled (MFE_HW_ACCESS_DISABLED)", f.dev())
	case "MFE_SEM_LOCKED", "ME_SEM_LOCKED":
		return fmt.Sprintf("%s is busy: another tool holds its semaphore (%s)", f.dev(), f.Code)
	case "MFE_CR_ERROR", "ME_CR_ERROR":
		return fmt.Sprintf("reading the configuration space of %s failed (%s): the function is hung or gone, or kernel lockdown blocks the access", f.dev(), f.Code)
	}
	if strings.Contains(f.Line, "Permission denied") {
		return fmt.Sprintf("%s may not open %s: permission denied (not run as root)", f.Tool, f.dev())
	}
	code := ""
	if f.Code != "" {
		code = " (" + f.Code + ")"
	}
	return fmt.Sprintf("%s could not open %s%s: not run as root, no such device (wrong PCI address, or a /dev/mst path without `mst start` and its mst_pci/mst_pciconf modules), "+
		"kernel lockdown (Secure Boot) blocking config-space access, or the device busy in another tool", f.Tool, f.dev(), code)
}

// Fix says what to do about the failure ("" when unknown).
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
	return ""
}

// Summary is one line: kind, device, code.
func (f Failure) Summary() string {
	s := f.Kind + " on " + f.dev()
	if f.Code != "" {
		s += " (" + f.Code + ")"
	}
	return s
}
