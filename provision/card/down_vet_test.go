package card

import (
	"testing"

	"rig/internal/testutil"
	"rig/playbooks"
	"rig/provision"
	"rig/provision/steptest"
)

// TestFirmwareDownRefusesRecords: with --firmware, a recorded value that
// is not of the form the tool prints, or a device key that is not a PCI
// address, is refused before any query or set.
func TestFirmwareDownRefusesRecords(t *testing.T) {
	r := newModeRig(t, map[string]string{"0000:03:00.0": "a2d6:dpu"})
	dev := playbooks.FirmwareDevice{Device: "*", Parameters: map[string]string{"NUM_OF_VFS": "16"}}
	s := firmwareStepFor(t, r, dev).(provision.Downer).Down(provision.DownOptions{Firmware: true})
	sf := s.(*fwRestore).fw.state.Path
	testutil.PlantState(t, sf, `{"version": 1, "firmware": {"0000:03:00.0": {"NUM_OF_VFS": "8 SRIOV_EN=0"}, "-d": {"NUM_OF_VFS": "8"}}}`)
	steptest.WantRefused(t, steptest.RunStep(t, s), sf, `firmware["0000:03:00.0"]["NUM_OF_VFS"]: "8 SRIOV_EN=0" is not a value as the firmware tool prints it`, `firmware["-d"]: not a PCI address`)
	if len(r.rec.Lines()) != 0 {
		t.Fatalf("ran %q", r.rec.Lines())
	}
}
