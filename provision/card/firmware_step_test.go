package card

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"rig/playbooks"
	"rig/provision"
	"rig/provision/steptest"
)

func firmwareStepFor(t *testing.T, r *modeRig, devs ...playbooks.FirmwareDevice) provision.Step {
	t.Helper()
	spec := &playbooks.FirmwareSpec{Devices: devs}
	if errs := spec.Validate(); len(errs) > 0 {
		t.Fatal(errs)
	}
	s, err := NewFirmwareStep(r.env(), spec)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestFirmwareApplyPowerCycleApply: values in either form mlxconfig takes
// (False / 0, IB / 1, a number) are compared with Next Boot; the first
// apply writes one set per card and is pending a power cycle; again before
// the power cycle: nothing written, still pending; after it: ok, nothing
// written. "*" covers both cards; the ConnectX's own entry overrides it.
func TestFirmwareApplyPowerCycleApply(t *testing.T) {
	r := newModeRig(t, map[string]string{"0000:03:00.0": "a2d6:dpu", "0000:5e:00.0": "101d:dpu"})
	devs := []playbooks.FirmwareDevice{
		{Device: "*", Parameters: map[string]string{"NUM_OF_VFS": "16", "SRIOV_EN": "True"}},
		{Device: "0000:03:00.0", Parameters: map[string]string{"LINK_TYPE_P1": "IB", "LINK_TYPE_P2": "2"}},
		{Device: "5e:00.0", Parameters: map[string]string{"NUM_OF_VFS": "4"}},
	}
	res := steptest.RunStep(t, firmwareStepFor(t, r, devs...))
	if res.Status != provision.StatusPendingReboot || len(res.Changes) != 3 || !strings.Contains(res.Pending, "power cycle required: 0000:03:00.0 next boot holds the wanted values") {
		t.Fatalf("first apply: %s pending %q err %s", res.Status, res.Pending, res.Error)
	}
	want := []string{
		"mstconfig -y -d 0000:03:00.0 set LINK_TYPE_P1=IB NUM_OF_VFS=16",
		"mstconfig -y -d 0000:5e:00.0 set NUM_OF_VFS=4",
	}
	if got := r.writes(); !reflect.DeepEqual(got, want) {
		t.Fatalf("writes\n%q\nwant\n%q", got, want)
	}
	r.reset()
	if res := steptest.RunStep(t, firmwareStepFor(t, r, devs...)); res.Status != provision.StatusPendingReboot || len(r.writes()) != 0 || !strings.Contains(res.Pending, "running firmware has LINK_TYPE_P1 (running ETH(2))") {
		t.Fatalf("before the power cycle: %s %q writes %q", res.Status, res.Pending, r.writes())
	}
	if _, err := r.sim.PowerCycle(); err != nil {
		t.Fatal(err)
	}
	r.reset()
	res = steptest.RunStep(t, firmwareStepFor(t, r, devs...))
	if res.Status != provision.StatusOK || len(r.writes()) != 0 {
		t.Fatalf("after the power cycle: %s %v writes %q %s", res.Status, res.Changes, r.writes(), res.Error)
	}
}

// TestFirmwareUnknownParameterWritesNothing: a parameter the card does not
// have (LINK_TYPE on an Ethernet-only ConnectX-6 Dx) is an error at check,
// before the other card's set.
func TestFirmwareUnknownParameterWritesNothing(t *testing.T) {
	r := newModeRig(t, map[string]string{"0000:03:00.0": "a2d6:dpu", "0000:5e:00.0": "101d:dpu"})
	res := steptest.RunStep(t, firmwareStepFor(t, r, playbooks.FirmwareDevice{Device: "*", Parameters: map[string]string{"LINK_TYPE_P1": "ETH", "NUM_OF_VFS": "2"}}))
	if res.Status != provision.StatusFailed || !strings.Contains(res.Error, "0000:5e:00.0") || len(r.writes()) != 0 {
		t.Fatalf("%s %q writes %q", res.Status, res.Error, r.writes())
	}
	r2 := newModeRig(t, map[string]string{"0000:03:00.0": "a2d6:dpu"})
	res = steptest.RunStep(t, firmwareStepFor(t, r2, playbooks.FirmwareDevice{Device: "0000:04:00.0", Parameters: map[string]string{"SRIOV_EN": "1"}}))
	if res.Status != provision.StatusFailed || !strings.Contains(res.Error, `no Mellanox NIC function matches "0000:04:00.0"`) {
		t.Fatalf("%s %q", res.Status, res.Error)
	}
}

func TestFirmwareSection(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"name: t\nfirmware:\n  devices: []\n", "firmware.devices: empty"},
		{"name: t\nfirmware:\n  devices:\n    - {device: eth0, parameters: {SRIOV_EN: 1}}\n", `t.yaml:4: firmware.devices[0].device: "eth0": want`},
		{"name: t\nfirmware:\n  devices:\n    - device: \"*\"\n      parameters: {sriov_en: 1}\n", "firmware.devices[0].parameters.sriov_en: not a firmware parameter name"},
		{"name: t\nfirmware:\n  devices:\n    - device: \"*\"\n      parameters: {SRIOV_EN: \"1; reboot\"}\n", `firmware.devices[0].parameters.SRIOV_EN: value "1; reboot"`},
		{"name: t\nfirmware:\n  devices:\n    - {device: \"03:00.0\", parameters: {SRIOV_EN: 1}}\n    - {device: \"0000:03:00.0\", parameters: {NUM_OF_VFS: 1}}\n", "firmware.devices[1].device: same device as devices[0]"},
	} {
		_, err := playbooks.Parse("t.yaml", []byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want %q", c.yaml, err, c.want)
		}
	}
	pb, err := playbooks.Parse("t.yaml", []byte("name: t\nfirmware:\n  devices:\n    - device: /dev/mst/mt41686_pciconf0\n      parameters: {SRIOV_EN: True, NUM_OF_VFS: 8, LINK_TYPE_P1: ETH}\n"))
	if err != nil || pb.Firmware.Devices[0].Parameters["SRIOV_EN"] != "True" {
		t.Fatalf("%v %+v", err, pb)
	}
}

// TestFirmwareDown: without --firmware the parameters stay; with it they go
// back to their Next Boot values before rig (pending a power cycle); after
// the power cycle the record is forgotten; then nothing is left to do.
func TestFirmwareDown(t *testing.T) {
	r := newModeRig(t, map[string]string{"0000:03:00.0": "a2d6:dpu"})
	dev := playbooks.FirmwareDevice{Device: "*", Parameters: map[string]string{"NUM_OF_VFS": "16", "LINK_TYPE_P1": "IB"}}
	steptest.RunStep(t, firmwareStepFor(t, r, dev))
	if _, err := r.sim.PowerCycle(); err != nil {
		t.Fatal(err)
	}
	r.reset()
	s := firmwareStepFor(t, r, dev).(provision.Downer)
	if res := steptest.RunStep(t, s.Down(provision.DownOptions{})); res.Status != provision.StatusOK || len(r.writes()) != 0 || !strings.Contains(strings.Join(res.Notes, " "), "rig down --firmware restores them") {
		t.Fatalf("down without --firmware: %s %q %q", res.Status, res.Notes, r.writes())
	}
	res := steptest.RunStep(t, s.Down(provision.DownOptions{Firmware: true}))
	if want := []string{"mstconfig -y -d 0000:03:00.0 set LINK_TYPE_P1=2 NUM_OF_VFS=8"}; res.Status != provision.StatusPendingReboot || !reflect.DeepEqual(r.writes(), want) {
		t.Fatalf("down --firmware: %s %q writes %q", res.Status, res.Error, r.writes())
	}
	// the value restored is shown by name, as the tool prints it (it read IB(1) -> 2)
	var shown []string
	for _, c := range res.Changes {
		shown = append(shown, c.String())
	}
	if !slices.Contains(shown, "firmware 0000:03:00.0: set LINK_TYPE_P1 (next boot) IB(1) -> ETH(2)") || !slices.Contains(shown, "firmware 0000:03:00.0: set NUM_OF_VFS (next boot) 16 -> 8") {
		t.Errorf("down --firmware shows %q, want LINK_TYPE_P1 IB(1) -> ETH(2)", shown)
	}
	if _, err := r.sim.PowerCycle(); err != nil {
		t.Fatal(err)
	}
	r.reset()
	if res := steptest.RunStep(t, s.Down(provision.DownOptions{Firmware: true})); res.Status != provision.StatusChanged || len(r.writes()) != 0 || res.Changes[0].Action != "forget the firmware record" {
		t.Fatalf("after the power cycle: %s %v %q", res.Status, res.Changes, r.writes())
	}
	if res := steptest.RunStep(t, s.Down(provision.DownOptions{Firmware: true})); res.Status != provision.StatusOK {
		t.Fatalf("again: %s %v", res.Status, res.Changes)
	}
}

// TestFirmwareReadOnly: a parameter the tool shows RO (a restricted host)
// is refused when it must be written, with the tool's RO footer and
// mstprivhost's level, and nothing is written; when it already holds the
// wanted value the step is satisfied and says it is RO.
func TestFirmwareReadOnly(t *testing.T) {
	r := newModeRig(t, map[string]string{"0000:03:00.0": "a2d6:dpu"})
	if err := r.sim.SetRestricted("", true); err != nil {
		t.Fatal(err)
	}
	res := steptest.RunStep(t, firmwareStepFor(t, r, playbooks.FirmwareDevice{Device: "*", Parameters: map[string]string{"INTERNAL_CPU_OFFLOAD_ENGINE": "DISABLED", "NUM_OF_VFS": "4"}}))
	if res.Status != provision.StatusFailed || !strings.Contains(res.Error, "this host may not change these firmware parameters (zero-trust / restricted host)") ||
		!strings.Contains(res.Error, "marks INTERNAL_CPU_OFFLOAD_ENGINE RO") || !strings.Contains(res.Error, "level                         : RESTRICTED") ||
		!strings.Contains(res.Fix, "mstprivhost -d 0000:03:00.0 p") || len(r.writes()) != 0 {
		t.Fatalf("%s %q fix %q writes %q", res.Status, res.Error, res.Fix, r.writes())
	}
	res = steptest.RunStep(t, firmwareStepFor(t, r, playbooks.FirmwareDevice{Device: "*", Parameters: map[string]string{"INTERNAL_CPU_OFFLOAD_ENGINE": "ENABLED"}}))
	if res.Status != provision.StatusOK || len(r.writes()) != 0 || !strings.Contains(strings.Join(res.Notes, "\n"), "INTERNAL_CPU_OFFLOAD_ENGINE read-only from this host (RO)") {
		t.Fatalf("satisfied: %s %q %q writes %q", res.Status, res.Error, res.Notes, r.writes())
	}
}

// TestModeDownRestoresOnlyTheMode: a mode section and a firmware section
// both record what they change; the mode step's rig down --firmware sets
// back only the INTERNAL_CPU_* parameters (pending a power cycle), then
// forgets only its record; the firmware step's restores NUM_OF_VFS; plain
// rig down keeps the mode and writes nothing.
func TestModeDownRestoresOnlyTheMode(t *testing.T) {
	r := newModeRig(t, map[string]string{"0000:03:00.0": "a2d6:separated"})
	dev := playbooks.FirmwareDevice{Device: "*", Parameters: map[string]string{"NUM_OF_VFS": "16"}}
	mode := modeStepFor(t, r, "dpu")
	steptest.RunStep(t, mode)
	steptest.RunStep(t, firmwareStepFor(t, r, dev))
	if _, err := r.sim.PowerCycle(); err != nil {
		t.Fatal(err)
	}
	r.reset()
	md := mode.(provision.Downer)
	if res := steptest.RunStep(t, md.Down(provision.DownOptions{})); res.Status != provision.StatusOK || len(r.writes()) != 0 || !strings.Contains(strings.Join(res.Notes, " "), "the DPU mode is left as it is") {
		t.Fatalf("down without --firmware: %s %q %q", res.Status, res.Notes, r.writes())
	}
	res := steptest.RunStep(t, md.Down(provision.DownOptions{Firmware: true}))
	// separated mode's values as the card had them before rig (what
	// the dpu mode changed: all five on a BlueField-2)
	if want := []string{"mstconfig -y -d 0000:03:00.0 set INTERNAL_CPU_ESWITCH_MANAGER=1 INTERNAL_CPU_IB_VPORT0=1 INTERNAL_CPU_MODEL=0 INTERNAL_CPU_OFFLOAD_ENGINE=1 INTERNAL_CPU_PAGE_SUPPLIER=1"}; res.Status != provision.StatusPendingReboot || !reflect.DeepEqual(r.writes(), want) {
		t.Fatalf("mode down --firmware: %s %q writes %q", res.Status, res.Error, r.writes())
	}
	if _, err := r.sim.PowerCycle(); err != nil {
		t.Fatal(err)
	}
	r.reset()
	if res := steptest.RunStep(t, md.Down(provision.DownOptions{Firmware: true})); res.Status != provision.StatusChanged || len(r.writes()) != 0 || res.Changes[0].Action != "forget the mode record" {
		t.Fatalf("mode down after the power cycle: %s %v %q", res.Status, res.Changes, r.writes())
	}
	if res := steptest.RunStep(t, modeStepFor(t, r, "separated")); res.Status != provision.StatusOK || len(r.writes()) != 0 {
		t.Fatalf("the card is not back in separated mode: %s %v", res.Status, res.Changes)
	}
	fd := firmwareStepFor(t, r, dev).(provision.Downer)
	res = steptest.RunStep(t, fd.Down(provision.DownOptions{Firmware: true}))
	if want := []string{"mstconfig -y -d 0000:03:00.0 set NUM_OF_VFS=8"}; res.Status != provision.StatusPendingReboot || !reflect.DeepEqual(r.writes(), want) {
		t.Fatalf("firmware down --firmware after the mode's: %s %q writes %q", res.Status, res.Error, r.writes())
	}
}
