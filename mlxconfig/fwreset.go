package mlxconfig

import (
	"regexp"
	"strconv"
	"strings"
)

// FWResetRefusal is a firmware reset refused by mstfwreset/mlxfwreset
// (printed "-E- <text>." by small_utils/mstfwreset.py main) or by the
// kernel for `devlink dev reload … action fw_activate` (mlx5 devlink.c
// extack texts), with its cause and fix (hardware-formats.md §20.2, §20.3,
// §1.3).
type FWResetRefusal struct {
	Line  string `json:"line"`
	Level int    `json:"level"` // the reset level refused, -1 when the line names none
	Cause string `json:"cause"`
	Fix   string `json:"fix"`
}

const (
	slrFix        = "do a system-level reset instead (shut the Arm down with mlxfwreset -d <dev> -l 1 -t 4 r, then warm-reboot the host), or a cold power cycle (off ~30 s)"
	powerCycleFix = "cold power-cycle the server (power off, wait ~30 s, power on): operators report a warm reboot, a BMC warm reset and a quick chassis power cycle leaving the firmware unchanged"
)

var levelRefusedRe = regexp.MustCompile(`Reset-level '(\d)' is not supported in the current state of this device`)

// fwResetRefusals: substring, cause, fix. mstfwreset.py (v4.36.0-1)
// ~L1970-2594; mlx5 devlink.c mlx5_devlink_reload_down / fw_activate.
var fwResetRefusals = []struct{ sub, cause, fix string }{
	{"Synchronization by driver is not supported in the current state of this device",
		"the firmware offers no firmware/driver reset synchronization now (MCAM); BlueField-2 and -3 reset only with driver sync (sync 1), so level 3 cannot run (a 3rd-party BlueField-3 report: only a real power-off helped)", powerCycleFix},
	{"Only the reset types ARM reset (3) and ARM shut down (4) are considered valid",
		"reset level 1 (immediate, Arm only) takes only reset type 3 (Arm reset) or 4 (Arm OS shut down)", "add -t 4 (shut the Arm OS down, the system-level reset's first step) or -t 3"},
	{"The ARM side is not in a running state",
		"reset type 4 shuts down a running Arm, and the Arm is not running (already shut down, or not booted)",
		"read /dev/rshim<N>/misc at DISPLAY_LEVEL 2: after INFO[BL31]: System Off the Arm is down, so warm-reboot the host (mlxfwreset -l 4 r, or reboot); otherwise power-cycle"},
	{"The tool supports only reset-level 4 or 1 on UEFI Secure Boot",
		"with tool-owned synchronization (sync 0) on a UEFI Secure Boot host, PCI config access through sysfs is restricted, so only levels 4 and 1 run",
		"use --sync 1 (driver sync; BlueField-2 and -3 support no other) or level 4 (warm reboot)"},
	{"FW activate requires reboot",
		"the firmware cannot activate the stored image with a driver restart and PCI reset (MFRL offers no level 3)", slrFix},
	{"FW upgrade to the stored FW can't be done by FW live patching",
		"the stored image cannot be live-patched in (level 0)", "activate it with a driver restart and PCI reset: devlink dev reload pci/<bdf> action fw_activate (without limit no_reset)"},
	{"reload is unsupported when SFs are allocated",
		"mlx5 refuses a devlink reload while scalable functions exist", "delete the SFs (devlink port del …) and reload, or use mlxfwreset"},
	{"reload is unsupported in Lag mode",
		"mlx5 refuses a devlink reload while the ports are in a LAG (bond)", "remove the bond over the ports and reload, or use mlxfwreset"},
}

// ClassifyFWReset finds the first refusal line in a firmware reset's
// output; false when the output has none.
func ClassifyFWReset(output string) (FWResetRefusal, bool) {
	for _, raw := range strings.Split(output, "\n") {
		line := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(raw), "-E-"))
		if m := levelRefusedRe.FindStringSubmatch(line); m != nil {
			level, _ := strconv.Atoi(m[1])
			return FWResetRefusal{Line: line, Level: level,
				Cause: "the firmware does not offer reset level " + m[1] + " in its current state (MFRL, or no synchronization method); mlxfwreset -d <dev> q lists what it offers, and only \"-Supported\" levels run", Fix: slrFix}, true
		}
		for _, r := range fwResetRefusals {
			if strings.Contains(line, r.sub) {
				return FWResetRefusal{Line: line, Level: -1, Cause: r.cause, Fix: r.fix}, true
			}
		}
	}
	return FWResetRefusal{}, false
}
