package card

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"rig/mlxconfig"
	"rig/provision"
)

// fwRestore is rig down --firmware for a step over the firmware planner
// (the firmware step, the mode step): the parameters it owns that rig's
// state file records go back to their Next Boot values from before rig's
// first set, planned as an ordinary firmware plan (one set per device,
// pending a power cycle like any set). Once the old values run, the
// records of those parameters are forgotten. Records of parameters the
// step does not own (set by another playbook's step) stay.
type fwRestore struct {
	name string
	fw   *fwPlanner
	owns func(param string) bool
}

func (d *fwRestore) Name() string { return d.name }

// owned is the state file's records of d's parameters, by device.
func (d *fwRestore) owned(st provision.RigState) map[string]map[string]string {
	out := map[string]map[string]string{}
	for bdf, params := range st.Firmware {
		for n, v := range params {
			if d.owns(n) {
				if out[bdf] == nil {
					out[bdf] = map[string]string{}
				}
				out[bdf][n] = v
			}
		}
	}
	return out
}

// Check implements Step: read-only (the state file and queries).
func (d *fwRestore) Check(ctx context.Context) (provision.Plan, error) {
	st, err := provision.LoadState(d.fw.state)
	if err != nil {
		return provision.Plan{}, &provision.Problem{Object: d.name, Err: err}
	}
	rec := d.owned(st)
	if err := d.vet(rec); err != nil {
		return provision.Plan{}, err
	}
	var plan provision.Plan
	if err := d.handLater(rec, &plan); err != nil {
		return provision.Plan{}, err
	}
	if len(rec) == 0 && len(plan.Ops) > 0 {
		return plan, nil
	}
	if len(rec) == 0 {
		plan.Notes = append(plan.Notes, d.name+": no rig record in "+d.fw.state.String()+" (rig set nothing, or down restored it)")
		return plan, nil
	}
	handed := len(plan.Ops)
	for _, b := range slices.Sorted(maps.Keys(rec)) {
		if err := d.fw.plan(ctx, restoreDevice(b, rec[b]), firmwareWords{}, &plan); err != nil {
			return provision.Plan{}, err
		}
	}
	if len(plan.Ops) > handed || plan.Pending != "" {
		// the records stay until the old values run (after the power
		// cycle): a later rig down --firmware then forgets them
		return plan, nil
	}
	var names []string
	for _, b := range slices.Sorted(maps.Keys(rec)) {
		names = append(names, b+" "+strings.Join(slices.Sorted(maps.Keys(rec[b])), ","))
	}
	plan.Add(func(context.Context) error {
		return provision.UpdateState(d.fw.state, func(st *provision.RigState) { d.forget(st) })
	}, provision.Change{Object: "rig state", Action: "forget the " + d.name + " record", From: d.fw.state.String(), To: strings.Join(names, "; ")})
	return plan, nil
}

// restoreDevice is the device whose recorded values down sets back; each
// is shown by name where the tool has one (a recorded 2 of LINK_TYPE_P1
// shows as ETH(2), as the tool prints it).
func restoreDevice(bdf string, rec map[string]string) fwDevice {
	dev := firmwareDevice(bdf, rec)
	for i, w := range dev.Want {
		if v, err := strconv.ParseInt(w.Set, 10, 64); err == nil {
			dev.Want[i].Show = mlxconfig.FormatValue(w.Name, v)
		}
	}
	return dev
}

// forget drops d's parameters from the records; a device left with none
// goes, and so does the section.
func (d *fwRestore) forget(st *provision.RigState) {
	for bdf, params := range st.Firmware {
		for n := range params {
			if d.owns(n) {
				delete(params, n)
			}
		}
		if len(params) == 0 {
			delete(st.Firmware, bdf)
		}
	}
	if len(st.Firmware) == 0 {
		st.Firmware = nil
	}
}

// VetRecords implements RecordVetter.
func (d *fwRestore) VetRecords(context.Context) error {
	st, err := provision.LoadState(d.fw.state)
	if err != nil {
		return &provision.Problem{Object: d.name, Err: err}
	}
	return d.vet(d.owned(st))
}

// fwValueRE is a Next Boot value as rig records it (setForm): the number
// of NAME(n), a number, or the printed NAME(n) or hex value of a parameter
// rig has no names for.
var fwValueRE = regexp.MustCompile(`^(-?[0-9]{1,20}|0x[0-9a-fA-F]{1,16}|[A-Za-z0-9_]{1,64}\(-?[0-9]{1,20}\))$`)

// vet refuses the records of d's parameters (those the playbook's section
// sets: owned) that the firmware planner could not have written: a device
// address not in canonical form (it becomes the tool's -d argument), a
// value not of the form the tool prints.
func (d *fwRestore) vet(rec map[string]map[string]string) error {
	c := provision.RecordCheck{State: d.fw.state}
	for _, b := range slices.Sorted(maps.Keys(rec)) {
		if !provision.WellFormedBDF(b) {
			c.Refuse(fmt.Sprintf("firmware[%q]", b), "not a PCI address as rig records it (0000:03:00.0)")
			continue
		}
		for _, n := range slices.Sorted(maps.Keys(rec[b])) {
			if v := rec[b][n]; !fwValueRE.MatchString(v) {
				c.Refuse(fmt.Sprintf("firmware[%q][%q]", b, n), "%q is not a value as the firmware tool prints it (a number, or NAME(n))", v)
			}
		}
	}
	return c.Err()
}
