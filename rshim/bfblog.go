package rshim

import (
	"regexp"
	"strconv"
	"strings"
)

// InstallState is where a BFB install stands, read from its log.
type InstallState string

const (
	// InstallWaiting: no installer line yet (the push is under way, the
	// Arm is still in its boot firmware, or the log was cleared).
	InstallWaiting InstallState = "waiting"
	// InstallInProgress: the installer runs (Stage says where).
	InstallInProgress InstallState = "in-progress"
	// InstallRebooting: the installer logged "Rebooting..." and the DPU
	// reboots into the new OS. bfb-install exits here; the install is not
	// done until "DPU is ready" (§19.4 early exit trap), and a NIC
	// firmware reset (level 3) may still hit the host PFs; what it does to
	// the host's RShim link is UNCONFIRMED (§19.5, §21.7).
	InstallRebooting InstallState = "rebooting"
	// InstallReady: the new OS logged "DPU is ready" (bfup.service).
	InstallReady InstallState = "ready"
	// InstallNICMode: "In Enhanced NIC mode" (which firmware writes it,
	// and at which level and module, is UNCONFIRMED: closed source, §21.7;
	// it is matched in any message, case-insensitively, as bfb-install's
	// grep -Ei does): the card is in NIC mode,
	// the Arm boots no OS, "DPU is ready" never comes (§19.5, §19.8 trap 3).
	// It ends a NIC-mode install; a DPU-mode install (ModeDPU) reads it as
	// failed.
	InstallNICMode InstallState = "nic-mode"
	// InstallFailed: an error line ended the install (Line, Cause, Fix).
	InstallFailed InstallState = "failed"
)

// Mode is the card mode an install expects (bfb-install's two exit
// conditions outside deferred mode, §19.4).
type Mode string

const (
	ModeDPU Mode = "dpu" // ends on "DPU is ready"
	ModeNIC Mode = "nic" // ends on "In Enhanced NIC mode"
)

// Install is what a BFB install's log says.
type Install struct {
	State InstallState `json:"state"`
	// Stage is the last installer line that says where it is ("Installing
	// OS image", "Updating NIC firmware..."), "" before the first.
	Stage string `json:"stage,omitempty"`
	// Percent is the installer's last "total N% complete", -1 when it
	// printed none: bfb-build writes that line to the console only
	// (ilog, `BFB-Installer: Installing <step> <passed|failed>, total N%
	// complete`), so a misc log never has it; a console capture does.
	Percent int `json:"percent"`
	// Line is the line that decided a ready, NIC-mode or failed state.
	Line string `json:"line,omitempty"`
	// Cause and Fix explain a failed state.
	Cause string `json:"cause,omitempty"`
	Fix   string `json:"fix,omitempty"`
	// NICFirmware is the version of "NIC firmware update done: <ver>"
	// (or "Running NIC FW: <ver>"), "" when the BFB burned none.
	NICFirmware string `json:"nicFirmware,omitempty"`
	// PowerCycle: the installer burned NIC firmware it could not activate
	// ("Host power cycle is required", or in NIC mode "Run mlxfwreset or
	// system-level reset"): the new firmware is pending (§19.5, §20.3).
	PowerCycle bool `json:"powerCycle,omitempty"`
	// Notes are lines worth showing that change no state ("Invalid
	// bf.cfg": the config was ignored).
	Notes []string `json:"notes,omitempty"`

	// prev is the message before the current one: fail() logs its
	// reason, then "ERR Installation failed". The reason's level is the
	// message's own (fail "Failed to access target device: …" shows as
	// INFO[MISC]; §19.5 shows it as ERR[MISC]), so any level is taken.
	prev string
}

var (
	percentRe = regexp.MustCompile(`BFB-Installer: Installing (.+) (?:passed|failed), total (\d{1,3})% complete`)
	nicFWRe   = regexp.MustCompile(`(?:NIC firmware update done: |Running NIC FW: )(\S+)`)
	// stageRe: the installer's progress messages (§19.5 table; bfb-build
	// common/install.env/common, nic-fw, ubuntu/24.04/install.sh).
	stageRe = regexp.MustCompile(`^(?:\S+ installation (?:started|completed)|Installing (?:first |second )?OS image|Running \S+ from bf\.cfg|Changing the default password for user \S+|Updating NIC firmware\.\.\.|Installed NIC Firmware is the same as provided.*|NIC firmware update done: .*|Installation finished|Running NIC Firmware reset|NIC Firmware reset (?:done|passed).*|Found bf\.cfg|Linux up)$`)
)

// ClassifyInstall reads the log lines of one install, oldest first, from
// the push on (lines from before it, such as an old "DPU is ready", would
// be read as this install's). Failures are final: after fail() the DPU
// reboots into what its eMMC holds, which may well log "DPU is ready".
func ClassifyInstall(lines []LogLine, mode Mode) Install {
	in := Install{State: InstallWaiting, Percent: -1}
	for _, l := range lines {
		if in.State == InstallFailed {
			break
		}
		in.step(l, mode)
	}
	return in
}

// step applies one line.
func (in *Install) step(l LogLine, mode Mode) {
	text := l.Text
	if m := percentRe.FindStringSubmatch(text); m != nil {
		in.Percent, _ = strconv.Atoi(m[2])
		in.Stage = "Installing " + m[1]
		in.progress()
		return
	}
	if m := nicFWRe.FindStringSubmatch(text); m != nil {
		in.NICFirmware = m[1]
	}
	if t, ok := findTrap(l); ok {
		if t.pending {
			in.PowerCycle = true
			in.Notes = append(in.Notes, l.String())
			return
		}
		in.State, in.Line, in.Cause, in.Fix = InstallFailed, l.String(), t.cause, t.fix
		if in.prev != "" && t.kind == LogMessage {
			in.Cause += "; the line before: " + strings.TrimSpace(in.prev)
		}
		return
	}
	if l.Kind == LogMessage {
		defer func() { in.prev = l.String() }()
	}
	lower := strings.ToLower(text)
	switch {
	case l.Kind != LogMessage:
	case text == "NIC firmware update failed":
		in.Notes = append(in.Notes, l.String()+": the BFB's NIC firmware was not burned; the card keeps the firmware it had")
	case text == "Invalid bf.cfg":
		in.Notes = append(in.Notes, l.String()+": the config was ignored (it failed bash -n); fix its syntax")
	case strings.Contains(lower, "in enhanced nic mode"):
		in.nicMode(l, mode)
	case strings.Contains(lower, "dpu is ready"):
		in.State, in.Line = InstallReady, l.String()
	case strings.Contains(lower, "rebooting..."):
		in.State, in.Stage = InstallRebooting, "rebooting into the new OS"
	case l.Module == "MISC" && stageRe.MatchString(text):
		in.Stage = text
		in.progress()
	}
}

// progress moves a waiting install on (a later stage line never takes a
// ready or rebooting install back: "Linux up" follows "Rebooting...").
func (in *Install) progress() {
	if in.State == InstallWaiting || in.State == InstallRebooting && in.Stage == "Linux up" {
		in.State = InstallInProgress
	}
}

func (in *Install) nicMode(l LogLine, mode Mode) {
	in.Line = l.String()
	if mode == ModeNIC {
		in.State = InstallNICMode
		return
	}
	in.State = InstallFailed
	in.Cause = "the card is in NIC mode: the Arm boots no OS outside a BFB install, so \"DPU is ready\" never comes (hardware-formats.md §19.5)"
	in.Fix = "switch the card to DPU mode (the mode step, then the power cycle it asks), or install expecting NIC mode"
}

// Stalled is the cause and fix for an install that reached no end before
// the caller's timeout, by where it stopped. bfb-install itself has no
// overall timeout (§19.4); how long "Rebooting..." to "DPU is ready" may
// take is UNCONFIRMED (§21.7), so the timeout is the caller's.
func (in Install) Stalled() (cause, fix string) {
	const console = "read the console (/dev/rshim<N>/console, which works before any IP) for where the Arm stopped"
	switch in.State {
	case InstallWaiting:
		return "no installer line reached the rshim log: the boot stream stalled before the installer ran (BOOT_TIMEOUT, §19.8 trap 1), another reader with CLEAR_ON_READ 1 consumed the log (trap 6), or the 1 KB log was full and dropped the lines (trap 7)",
			console + "; check that no other bfb-install or monitor reads misc, then push again"
	case InstallRebooting:
		return "the installer logged Rebooting... but the new OS never logged \"DPU is ready\": it did not boot, or it is still in a NIC firmware reset",
			console + "; after a NIC firmware burn a host power cycle may be needed"
	case InstallInProgress:
		return "the installer stopped logging at \"" + in.Stage + "\" (a NIC firmware or boot-firmware capsule update can take minutes)", console
	}
	return "", ""
}
