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
