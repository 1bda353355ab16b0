package card_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"rig/playbooks"
	"rig/provision"
	"rig/provision/card"
	"rig/provision/steps"
	"rig/provision/steptest"
)

// modeQuery is the mode step's query argv on bdf: all five mode parameters.
func modeQuery(bdf string) string {
	return "mstconfig -e -d " + bdf + " q INTERNAL_CPU_MODEL INTERNAL_CPU_PAGE_SUPPLIER INTERNAL_CPU_ESWITCH_MANAGER INTERNAL_CPU_IB_VPORT0 INTERNAL_CPU_OFFLOAD_ENGINE"
}

// TestModeAndFirmwareWriteEachParameterOnce: a playbook whose firmware
// section repeats two of the mode's parameters with the mode's own values
// (in the other form mlxconfig takes: a name and a number) plans and
// writes each of them once, in the mode step's set; the firmware step
// queries and sets only its other parameters and says why. Exact argv of
// every tool run; the second apply writes nothing (pending the power
// cycle); after it, both steps are ok and write nothing.
func TestModeAndFirmwareWriteEachParameterOnce(t *testing.T) {
	ctx := context.Background()
	r := card.NewModeRig(t, map[string]string{"0000:03:00.0": "a2d6:separated"})
	pb, err := playbooks.Parse("t.yaml", []byte("name: t\nmode: {want: dpu}\nfirmware:\n  devices:\n    - device: \"*\"\n      parameters: {INTERNAL_CPU_MODEL: EMBEDDED_CPU, INTERNAL_CPU_OFFLOAD_ENGINE: 0, NUM_OF_VFS: 16}\n"))
	if err != nil {
		t.Fatal(err)
	}
	run, err := steps.NewRunnerFor(pb, &steps.Env{Env: provision.Env{Host: r.Host()}})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := run.Execute(ctx, provision.RunPlan, provision.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	var planned []string
	for _, st := range plan.Steps {
		for _, c := range st.Changes {
			planned = append(planned, c.String())
		}
	}
	if n := strings.Count(strings.Join(planned, "\n"), "INTERNAL_CPU_MODEL"); n != 1 || len(planned) != 6 || plan.Steps[1].Changes[0].String() != "firmware 0000:03:00.0: set NUM_OF_VFS (next boot) 8 -> 16" {
		t.Fatalf("plan: INTERNAL_CPU_MODEL %d times in\n%s", n, strings.Join(planned, "\n"))
	}
	r.Reset()
	rep, err := run.Execute(ctx, provision.RunApply, provision.Selection{})
	if err != nil || rep.Steps[0].Status != provision.StatusPendingReboot || rep.Steps[1].Status != provision.StatusPendingReboot {
		t.Fatalf("first apply: %+v %v", rep.Steps, err)
	}
	want := []string{
		modeQuery("0000:03:00.0"),
		"mstconfig -y -d 0000:03:00.0 set INTERNAL_CPU_MODEL=EMBEDDED_CPU INTERNAL_CPU_PAGE_SUPPLIER=ECPF INTERNAL_CPU_ESWITCH_MANAGER=ECPF INTERNAL_CPU_IB_VPORT0=ECPF INTERNAL_CPU_OFFLOAD_ENGINE=ENABLED",
		modeQuery("0000:03:00.0"),
		"mstconfig -e -d 0000:03:00.0 q NUM_OF_VFS",
		"mstconfig -y -d 0000:03:00.0 set NUM_OF_VFS=16",
		"mstconfig -e -d 0000:03:00.0 q NUM_OF_VFS",
	}
	if got := card.CallStrings(r.Calls()); !reflect.DeepEqual(got, want) {
		t.Fatalf("first apply ran\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	notes := strings.Join(rep.Steps[1].Notes, "\n")
	for _, n := range []string{"INTERNAL_CPU_MODEL=EMBEDDED_CPU", "INTERNAL_CPU_OFFLOAD_ENGINE=0"} {
		if !strings.Contains(notes, "0000:03:00.0: "+n+" is set by the mode section (dpu mode) too; the mode step writes it, once") {
			t.Errorf("firmware notes lack %s:\n%s", n, notes)
		}
	}
	r.Reset()
	rep, err = run.Execute(ctx, provision.RunApply, provision.Selection{})
	if err != nil || rep.Steps[0].Status != provision.StatusPendingReboot || rep.Steps[1].Status != provision.StatusPendingReboot || len(r.Writes()) != 0 || len(rep.Steps[0].Changes)+len(rep.Steps[1].Changes) != 0 {
		t.Fatalf("second apply: %+v %v writes %q", rep.Steps, err, r.Writes())
	}
	if _, err := r.PowerCycle(); err != nil {
		t.Fatal(err)
	}
	r.Reset()
	rep, err = run.Execute(ctx, provision.RunApply, provision.Selection{})
	if err != nil || rep.Steps[0].Status != provision.StatusOK || rep.Steps[1].Status != provision.StatusOK || len(r.Writes()) != 0 {
		t.Fatalf("after the power cycle: %+v %v writes %q", rep.Steps, err, r.Writes())
	}
}

// TestFirmwareConflictWithModeWritesNothing: a firmware step built without
// a playbook file (whose validation refuses this first) with a value other
// than the mode's on one of its cards is refused at check, before any
// query or write; on a card the mode section does not cover the parameter
// is the firmware step's.
func TestFirmwareConflictWithModeWritesNothing(t *testing.T) {
	ctx := context.Background()
	r := card.NewModeRig(t, map[string]string{"0000:03:00.0": "a2d6:dpu", "0000:04:00.0": "a2d6:dpu"})
	mode := &playbooks.ModeSpec{Want: "dpu", Devices: []string{"03:00.0"}}
	fw := &playbooks.FirmwareSpec{Devices: []playbooks.FirmwareDevice{{Device: "*", Parameters: map[string]string{"INTERNAL_CPU_MODEL": "SEPARATED_HOST"}}}}
	_, err := card.NewFirmwareStepWithMode(&provision.Env{Host: r.Host()}, fw, mode).Check(ctx)
	p, ok := provision.AsProblem(err)
	if !ok || p.Object != "firmware 0000:03:00.0" || !strings.Contains(err.Error(), "INTERNAL_CPU_MODEL=SEPARATED_HOST conflicts with mode.want: dpu, which sets INTERNAL_CPU_MODEL to EMBEDDED_CPU(1) on this BlueField") ||
		!strings.Contains(p.Fix(), "remove INTERNAL_CPU_MODEL from the firmware section") || len(r.Calls()) != 0 {
		t.Fatalf("%v (fix %q), ran %q", err, p.Fix(), r.Calls())
	}
	fw.Devices[0].Device = "0000:04:00.0"
	res := steptest.RunStep(t, card.NewFirmwareStepWithMode(&provision.Env{Host: r.Host()}, fw, mode))
	if want := []string{"mstconfig -y -d 0000:04:00.0 set INTERNAL_CPU_MODEL=SEPARATED_HOST"}; res.Status != provision.StatusPendingReboot || !reflect.DeepEqual(r.Writes(), want) {
		t.Fatalf("other card: %s %s writes %q", res.Status, res.Error, r.Writes())
	}
}
