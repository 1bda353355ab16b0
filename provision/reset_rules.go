package provision

// ChangeKind is a kind of change whose taking effect needs a reset
// (hardware-formats.md §20.3, "Which reset makes which change take
// effect"). Steps name the change; RuleFor says the reset.
type ChangeKind string

const (
	// ChangeNVConfig: a firmware configuration parameter set with
	// mlxconfig/mstconfig on a BlueField (SRIOV_EN, NUM_OF_VFS, LINK_TYPE, …).
	ChangeNVConfig ChangeKind = "nvconfig"
	// ChangeNumPF: NUM_OF_PF, or zero-trust --disable_rshim (§1.3, §1.5).
	ChangeNumPF ChangeKind = "num-of-pf"
	// ChangeMode: DPU <-> NIC mode (BlueField-2's 4-5 parameters, BlueField-3's
	// INTERNAL_CPU_OFFLOAD_ENGINE; §1.2-1.3).
	ChangeMode ChangeKind = "dpu-nic-mode"
	// ChangeNICFirmware: a burned NIC firmware image (flint burn, or a BFB's
	// NIC firmware step) that is stored but not running (§20.2).
	ChangeNICFirmware ChangeKind = "nic-firmware"
	// ChangeBFB: a BFB install (the Arm's OS, ATF, UEFI).
	ChangeBFB ChangeKind = "bfb-install"
	// ChangeArmOS: a change to the Arm OS alone.
	ChangeArmOS ChangeKind = "arm-os"
	// ChangeKernelCmdline: the host kernel's command line (hugepages,
	// iommu, isolcpus; §14).
	ChangeKernelCmdline ChangeKind = "kernel-cmdline"
	// ChangeSRIOVNumVFs: the host PF's sriov_numvfs (§12).
	ChangeSRIOVNumVFs ChangeKind = "sriov-numvfs"
)

// ResetWay is one way to make a change take effect: resets done in order,
// and the condition under which the way works ("" when it always does).
type ResetWay struct {
	Resets []Reset
	When   string
}

// ResetRule is a change's ways, in the order of §20.3. Ways[0] is the one
// to ask for; the last always works (for firmware changes a power cycle,
// §1.3: "the only universally sufficient action").
type ResetRule struct {
	Change ChangeKind
	Ways   []ResetWay
	Source string // hardware-formats.md section
}

// slrWay is NVIDIA's system-level reset: a graceful Arm shutdown from the
// host, then a warm reboot of the host (§1.3, §20.3).
func slrWay() ResetWay {
	return ResetWay{
		Resets: []Reset{ResetFWArm, ResetHostReboot},
		When:   "system-level reset: shut the Arm down (mlxfwreset -d <dev> -l 1 -t 4 r; not in zero-trust), see INFO[BL31]: System Off in /dev/rshim<N>/misc, then warm-reboot the host (mlxfwreset -l 4 r once, or reboot)",
	}
}

// RuleFor is change c's rule, false for a change not in the table.
func RuleFor(c ChangeKind) (ResetRule, bool) {
	powerCycle, slr := ResetWay{Resets: []Reset{ResetHostPowerCycle}}, slrWay()
	switch c {
	case ChangeNVConfig:
		return ResetRule{c, []ResetWay{powerCycle, slr}, "§20.3, §1.3"}, true
	case ChangeNumPF:
		return ResetRule{c, []ResetWay{powerCycle}, "§20.3, §1.3, §1.5"}, true
	case ChangeMode:
		return ResetRule{c, []ResetWay{powerCycle, slr}, "§20.3, §1.2-1.3"}, true
	case ChangeNICFirmware:
		return ResetRule{c, []ResetWay{
			{Resets: []Reset{ResetFWDriverRestart}, When: "mlxfwreset -d <dev> q on the Arm shows \"3: Driver restart and PCI reset -Supported\" and \"1: Driver is the owner -Supported\" (then mlxfwreset -y -l 3 --sync 1 r), or from the host devlink dev reload pci/<bdf> action fw_activate (refused with SFs allocated or in LAG mode); operators report level 3 refused on BlueFields (\"Synchronization by driver is not supported\"), and that it is refused in DPU mode on some BlueField-2 firmware is UNCONFIRMED"},
			{Resets: []Reset{ResetFWLivePatch}, When: "the firmware can live-patch to the stored image (devlink dev reload pci/<bdf> action fw_activate limit no_reset; else \"FW upgrade to the stored FW can't be done by FW live patching\")"},
			slr,
			powerCycle,
		}, "§20.3, §20.2"}, true
	case ChangeBFB:
		return ResetRule{c, []ResetWay{
			{Resets: []Reset{ResetNone}, When: "the Arm reboots itself (Rebooting...); unless the BFB burned NIC firmware: then it resets it at level 3 (NIC_FW_RESET=yes), which resets the host PFs too, or logs \"Host power cycle is required\""},
			powerCycle,
		}, "§20.3, §19.5"}, true
	case ChangeArmOS:
		return ResetRule{c, []ResetWay{{Resets: []Reset{ResetDPUArmReboot}}}, "§20.3, §19.3"}, true
	case ChangeKernelCmdline:
		return ResetRule{c, []ResetWay{{Resets: []Reset{ResetHostReboot}}}, "§20.3, §14"}, true
	case ChangeSRIOVNumVFs:
		return ResetRule{c, []ResetWay{{Resets: []Reset{ResetNone}, When: "write 0 first when VFs exist (EBUSY otherwise); the VF representors appear on the Arm"}}, "§20.3, §12"}, true
	}
	return ResetRule{}, false
}

// ChangeKinds lists every change of the table, for tests and documentation.
func ChangeKinds() []ChangeKind {
	return []ChangeKind{ChangeNVConfig, ChangeNumPF, ChangeMode, ChangeNICFirmware, ChangeBFB, ChangeArmOS, ChangeKernelCmdline, ChangeSRIOVNumVFs}
}

// Applied reports whether a reset done makes way w's change take effect:
// every reset of w is covered by one done. After the reset rig asked for,
// a change still pending where Applied is true points at the likely cause
// (a warm reboot done instead of a power cycle, a reset the firmware
// refused); where it is false, the wrong reset was done.
func (w ResetWay) Applied(done []Reset) bool {
	for _, need := range w.Resets {
		ok := false
		for _, d := range done {
			if d.Covers(need) {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}
