package provision

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"
)

// pendingStep is satisfied but pending the resets it was given.
type pendingStep struct {
	name   string
	resets []Reset
}

func (s pendingStep) Name() string { return s.name }
func (s pendingStep) Check(context.Context) (Plan, error) {
	var p Plan
	for _, r := range s.resets {
		p.AddPending(r, string(r)+" required: "+s.name)
	}
	return p, nil
}

// Each pending step carries the resets it needs, and the summary every
// reset the run needs, distinct, the one to do first first: a kernel
// step's exit 3 names a reboot of the host, a firmware step's a power
// cycle of the server; the text report says what to do.
func TestPendingResets(t *testing.T) {
	r := &Runner{Steps: []Step{
		pendingStep{"kernel", []Reset{ResetHostReboot}},
		pendingStep{"firmware", []Reset{ResetHostReboot, ResetHostPowerCycle, ResetHostPowerCycle}},
	}}
	rep, err := r.Execute(context.Background(), RunApply, Selection{})
	if err != nil {
		t.Fatal(err)
	}
	if got := rep.Steps[0].Resets; !reflect.DeepEqual(got, []Reset{ResetHostReboot}) {
		t.Errorf("kernel resets %v", got)
	}
	if got := rep.Steps[1].Resets; !reflect.DeepEqual(got, []Reset{ResetHostPowerCycle, ResetHostReboot}) {
		t.Errorf("firmware resets %v", got)
	}
	if got := rep.Summary.Resets; !reflect.DeepEqual(got, []Reset{ResetHostPowerCycle, ResetHostReboot}) || rep.Summary.PendingReboot != 2 {
		t.Errorf("summary resets %v, pending %d", got, rep.Summary.PendingReboot)
	}
	var b bytes.Buffer
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "kernel (pending-reboot):\n  ! pending: host-reboot required: kernel\n  ! reset needed: reboot this host\n") {
		t.Errorf("text:\n%s", b.String())
	}
	if got := ResetActions([]Reset{ResetHostReboot}); got != "reboot this host" {
		t.Errorf("ResetActions = %q", got)
	}
}

// The classes of hardware-formats.md §20.3: each known, with an action
// that says what to do; mstfwreset's levels 0, 1, 3 and 4 only.
func TestResetClasses(t *testing.T) {
	for _, r := range []Reset{ResetNone, ResetDPUArmReboot, ResetFWLivePatch, ResetFWArm, ResetFWDriverRestart, ResetFWWarmReboot, ResetHostReboot, ResetHostPowerCycle} {
		if !r.Known() || r.Action() == string(r) {
			t.Errorf("%s: known %v, action %q", r, r.Known(), r.Action())
		}
	}
	for level, want := range map[int]Reset{0: ResetFWLivePatch, 1: ResetFWArm, 3: ResetFWDriverRestart, 4: ResetFWWarmReboot} {
		r, err := FWReset(level)
		if err != nil || r != want {
			t.Errorf("FWReset(%d) = %s %v, want %s", level, r, err, want)
		}
		if l, ok := r.FWResetLevel(); !ok || l != level {
			t.Errorf("%s level %d %v", r, l, ok)
		}
	}
	for _, level := range []int{-1, 2, 5} {
		if _, err := FWReset(level); err == nil || !strings.Contains(err.Error(), "want 0 (live patch), 1 (Arm only), 3") {
			t.Errorf("FWReset(%d): %v", level, err)
		}
	}
	for _, r := range []Reset{ResetHostReboot, "fw-reset-l2", "fw-reset-l9", ResetNone} {
		if _, ok := r.FWResetLevel(); ok {
			t.Errorf("%s has a firmware reset level", r)
		}
	}
	if Reset("fw-reset-l2").Known() {
		t.Error("level 2 known: cmd_reg_mfrl.py gives it no text")
	}
}

// A change with nothing to reset is not pending; the resets of a run are
// listed the one to do first first, whatever order the steps asked them.
func TestAddResetOrder(t *testing.T) {
	var p Plan
	p.AddPending(ResetNone, "sriov_numvfs written")
	if len(p.Resets) != 0 {
		t.Errorf("none pending: %v", p.Resets)
	}
	var list []Reset
	for _, r := range []Reset{ResetDPUArmReboot, ResetFWLivePatch, ResetHostReboot, ResetFWDriverRestart, ResetHostPowerCycle, ResetFWArm, ResetFWWarmReboot, ResetNone, ResetHostReboot} {
		list = addReset(list, r)
	}
	want := []Reset{ResetHostPowerCycle, ResetFWWarmReboot, ResetHostReboot, ResetFWDriverRestart, ResetFWArm, ResetFWLivePatch, ResetDPUArmReboot}
	if !reflect.DeepEqual(list, want) {
		t.Errorf("order %v\nwant  %v", list, want)
	}
}

// Covers holds only what the reference says: a power cycle does every
// reset's work, mlxfwreset -l 4 a host reboot's; a host reboot does not
// reload NIC firmware.
func TestResetCovers(t *testing.T) {
	for _, tc := range []struct {
		done, need Reset
		want       bool
	}{
		{ResetHostPowerCycle, ResetFWDriverRestart, true},
		{ResetHostPowerCycle, ResetDPUArmReboot, true},
		{ResetHostPowerCycle, ResetHostReboot, true},
		{ResetFWWarmReboot, ResetHostReboot, true},
		{ResetHostReboot, ResetFWWarmReboot, false},
		{ResetHostReboot, ResetHostPowerCycle, false},
		{ResetFWDriverRestart, ResetHostPowerCycle, false},
		{ResetDPUArmReboot, ResetFWArm, false},
		{ResetDPUArmReboot, ResetDPUArmReboot, true},
		{ResetHostReboot, ResetNone, true},
		{ResetHostPowerCycle, "firmware-magic", false},
	} {
		if got := tc.done.Covers(tc.need); got != tc.want {
			t.Errorf("%s covers %s = %v, want %v", tc.done, tc.need, got, tc.want)
		}
	}
}

// The table of §20.3: every change has ways of known classes; firmware
// changes end with the power cycle (always sufficient); the host's own
// changes need what §20.3 says.
func TestRuleFor(t *testing.T) {
	for _, c := range ChangeKinds() {
		r, ok := RuleFor(c)
		if !ok || r.Change != c || len(r.Ways) == 0 || !strings.HasPrefix(r.Source, "§20.3") {
			t.Fatalf("%s: %+v %v", c, r, ok)
		}
		for _, w := range r.Ways {
			for _, x := range w.Resets {
				if !x.Known() {
					t.Errorf("%s: unknown reset %s", c, x)
				}
			}
		}
	}
	first := func(c ChangeKind) []Reset { r, _ := RuleFor(c); return r.Ways[0].Resets }
	last := func(c ChangeKind) []Reset { r, _ := RuleFor(c); return r.Ways[len(r.Ways)-1].Resets }
	for _, tc := range []struct {
		got, want []Reset
	}{
		{first(ChangeNVConfig), []Reset{ResetHostPowerCycle}},
		{first(ChangeNumPF), []Reset{ResetHostPowerCycle}},
		{first(ChangeMode), []Reset{ResetHostPowerCycle}},
		{first(ChangeNICFirmware), []Reset{ResetFWDriverRestart}},
		{last(ChangeNICFirmware), []Reset{ResetHostPowerCycle}},
		{last(ChangeBFB), []Reset{ResetHostPowerCycle}},
		{first(ChangeBFB), []Reset{ResetNone}},
		{first(ChangeArmOS), []Reset{ResetDPUArmReboot}},
		{first(ChangeKernelCmdline), []Reset{ResetHostReboot}},
		{first(ChangeSRIOVNumVFs), []Reset{ResetNone}},
	} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("got %v, want %v", tc.got, tc.want)
		}
	}
	if _, ok := RuleFor("firmware-magic"); ok {
		t.Error("unknown change has a rule")
	}
	r, _ := RuleFor(ChangeNICFirmware)
	if !strings.Contains(r.Ways[0].When, "UNCONFIRMED") || !strings.Contains(r.Ways[0].When, "Synchronization by driver is not supported") {
		t.Errorf("level 3's condition: %q", r.Ways[0].When)
	}
}

// After a reset: a system-level reset is an Arm shutdown then a warm
// reboot of the host, by mlxfwreset -l 4 or by reboot (or a power cycle
// instead); a host reboot alone does not apply it.
func TestResetWayApplied(t *testing.T) {
	r, _ := RuleFor(ChangeNVConfig)
	slr := r.Ways[1]
	for _, tc := range []struct {
		done []Reset
		want bool
	}{
		{[]Reset{ResetFWArm, ResetFWWarmReboot}, true},
		{[]Reset{ResetHostPowerCycle}, true},
		{[]Reset{ResetHostReboot}, false},
		{[]Reset{ResetFWArm, ResetHostReboot}, true},
		{[]Reset{ResetFWWarmReboot}, false},
		{nil, false},
	} {
		if got := slr.Applied(tc.done); got != tc.want {
			t.Errorf("SLR applied by %v = %v, want %v", tc.done, got, tc.want)
		}
	}
	if !r.Ways[0].Applied([]Reset{ResetHostPowerCycle}) || r.Ways[0].Applied([]Reset{ResetHostReboot}) {
		t.Error("power cycle way")
	}
}
