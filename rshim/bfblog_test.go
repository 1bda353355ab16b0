package rshim

import (
	"reflect"
	"strings"
	"testing"
)

func TestClassifyInstall(t *testing.T) {
	for _, tc := range []struct {
		file       string
		mode       Mode
		state      InstallState
		stage      string
		line       string
		cause      string // a substring
		fw         string
		powerCycle bool
	}{
		{file: "bfb-ubuntu-nicfw.log", mode: ModeDPU, state: InstallReady, stage: "Linux up", line: " INFO[MISC]: DPU is ready", fw: "24.43.1014"},
		{file: "bfb-fail.log", mode: ModeDPU, state: InstallFailed, stage: "Ubuntu installation started", line: " ERR[MISC]: Installation failed",
			cause: "the line before: INFO[MISC]: Ubuntu is not supported on this DPU"},
		{file: "bfb-powercycle.log", mode: ModeDPU, state: InstallRebooting, stage: "rebooting into the new OS", fw: "24.43.1014", powerCycle: true},
		{file: "bfb-install-timeout.txt", mode: ModeDPU, state: InstallFailed, line: "cat: write error: Connection timed out", cause: "BOOT_TIMEOUT"},
		{file: "bfb-nic-mode.log", mode: ModeNIC, state: InstallNICMode, stage: "Installation finished", line: " INFO[MISC]: In Enhanced NIC mode", powerCycle: true},
		{file: "bfb-nic-mode.log", mode: ModeDPU, state: InstallFailed, stage: "Installation finished", line: " INFO[MISC]: In Enhanced NIC mode", cause: "in NIC mode", powerCycle: true},
		{file: "log-crash.txt", mode: ModeDPU, state: InstallFailed, line: " Exception(BL31): syndrome = 0x96000010(Data Abort)", cause: "the Arm crashed"},
		{file: "misc-bf2-level2-boot.txt", mode: ModeDPU, state: InstallWaiting},
	} {
		t.Run(tc.file+"/"+string(tc.mode), func(t *testing.T) {
			in := ClassifyInstall(ParseLog(sample(t, tc.file)), tc.mode)
			got := []any{in.State, in.Stage, in.Line, in.NICFirmware, in.PowerCycle, in.Percent}
			want := []any{tc.state, tc.stage, tc.line, tc.fw, tc.powerCycle, -1}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
			if !strings.Contains(in.Cause, tc.cause) || (tc.state == InstallFailed) != (in.Fix != "") {
				t.Errorf("cause %q fix %q, want cause with %q and a fix when failed", in.Cause, in.Fix, tc.cause)
			}
		})
	}
}

// Each line moves the install on: the state after every line of the
// Ubuntu install with a NIC firmware burn. "Rebooting..." is not the end
// (bfb-install exits there, §19.4): the boot firmware's lines keep it
// rebooting, "Linux up" is the new OS on its way, "DPU is ready" the end.
func TestClassifyInstallSteps(t *testing.T) {
	lines := ParseLog(sample(t, "bfb-ubuntu-nicfw.log"))
	var states []InstallState
	for i := range lines {
		states = append(states, ClassifyInstall(lines[:i+1], ModeDPU).State)
	}
	want := []InstallState{InstallInProgress, InstallInProgress, InstallInProgress, InstallInProgress, InstallInProgress,
		InstallInProgress, InstallInProgress, InstallInProgress, InstallInProgress, InstallInProgress,
		InstallRebooting, InstallRebooting, InstallRebooting, InstallRebooting, InstallInProgress, InstallReady}
	if !reflect.DeepEqual(states, want) {
		t.Errorf("states %v\nwant   %v", states, want)
	}
	if in := ClassifyInstall(lines[:3], ModeDPU); in.Stage != "Installing OS image" {
		t.Errorf("stage %q", in.Stage)
	}
}

// The console's progress line gives the percent (bfb-build update_progress,
// ilog: "[HH:MM:SS] BFB-Installer: Installing <step> <passed|failed>, total
// N% complete"); the misc log never carries it.
func TestClassifyInstallPercent(t *testing.T) {
	in := ClassifyInstall(ParseLog("[10:02:03] BFB-Installer: Installing DPU OS passed, total 78% complete\n"), ModeDPU)
	if in.State != InstallInProgress || in.Percent != 78 || in.Stage != "Installing DPU OS" {
		t.Errorf("%+v", in)
	}
}

func TestClassifyInstallNotes(t *testing.T) {
	in := ClassifyInstall(ParseLog(" INFO[MISC]: Invalid bf.cfg\n ERR[MISC]: NIC firmware update failed\n INFO[MISC]: Installation finished\n"), ModeDPU)
	if in.State != InstallInProgress || len(in.Notes) != 2 || !strings.Contains(in.Notes[0], "bash -n") || !strings.Contains(in.Notes[1], "not burned") {
		t.Errorf("%+v", in)
	}
	// CRITICAL ERROR is matched in any case, as bfb-install's grep -Ei.
	in = ClassifyInstall(ParseLog(" INFO[MISC]: Installing OS image\n ERR[UEFI]: critical error\n"), ModeDPU)
	if in.State != InstallFailed || !strings.Contains(in.Cause, "UNCONFIRMED") {
		t.Errorf("%+v", in)
	}
}

func TestStalled(t *testing.T) {
	for _, tc := range []struct {
		in   Install
		want string
	}{
		{Install{State: InstallWaiting}, "BOOT_TIMEOUT"},
		{Install{State: InstallInProgress, Stage: "Updating NIC firmware..."}, "\"Updating NIC firmware...\""},
		{Install{State: InstallRebooting}, "never logged \"DPU is ready\""},
		{Install{State: InstallReady}, ""},
	} {
		cause, fix := tc.in.Stalled()
		if !strings.Contains(cause, tc.want) || (cause == "") != (fix == "") {
			t.Errorf("%s: %q / %q, want %q", tc.in.State, cause, fix, tc.want)
		}
	}
}

// Diagnose reads rshim's journal lines too (§19.1, §19.8).
func TestDiagnoseJournal(t *testing.T) {
	journal := "rshim[90323]: Probing pcie-0000:a3:00.2(vfio)\n" +
		"rshim[90323]: another backend already attached\n" +
		"rshim[90323]: rshim0 entering drop mode\n" +
		"rshim[90323]: Need to enable IOMMU/VFIO for kernel lock-down\n"
	f := Diagnose(ParseLog(journal))
	if len(f) != 2 || !strings.Contains(f[0].Fix, "disable rshim on the BMC") || !strings.Contains(f[1].Fix, "vfio-pci") || f[0].Source == "" {
		t.Errorf("%+v", f)
	}
	f = Diagnose(ParseLog(sample(t, "bfb-powercycle.log")))
	if len(f) != 1 || !f[0].Pending {
		t.Errorf("%+v", f)
	}
}

func FuzzClassifyInstall(f *testing.F) {
	for _, n := range []string{"bfb-ubuntu-nicfw.log", "bfb-fail.log", "bfb-powercycle.log", "bfb-install-timeout.txt", "bfb-nic-mode.log", "log-crash.txt"} {
		f.Add(sample(f, n), false)
	}
	f.Add("BFB-Installer: Installing X passed, total 100% complete", true)
	f.Fuzz(func(t *testing.T, s string, nic bool) {
		mode := ModeDPU
		if nic {
			mode = ModeNIC
		}
		lines := ParseLog(s)
		in := ClassifyInstall(lines, mode)
		switch in.State {
		case InstallFailed:
			if in.Cause == "" || in.Fix == "" || in.Line == "" {
				t.Fatalf("failed without line, cause or fix: %+v", in)
			}
		case InstallReady, InstallNICMode:
			if in.Line == "" {
				t.Fatalf("%s without its line: %+v", in.State, in)
			}
		case InstallWaiting, InstallInProgress, InstallRebooting:
			if c, fix := in.Stalled(); c == "" || fix == "" {
				t.Fatalf("%s has no stall cause", in.State)
			}
		default:
			t.Fatalf("state %q", in.State)
		}
		if in.Percent < -1 || in.Percent > 999 {
			t.Fatalf("percent %d", in.Percent)
		}
		for _, l := range lines {
			if strings.Contains(l.Text, "\n") {
				t.Fatalf("line with a newline: %q", l.Text)
			}
		}
	})
}
