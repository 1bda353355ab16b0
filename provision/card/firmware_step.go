package card

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"

	"rig/internal/pci"
	"rig/playbooks"
	"rig/provision"
	"rig/smartnic"
)

// firmwareStep sets any firmware (NV) configuration parameter per device
// with mstconfig/mlxconfig, as DPUFlavor's nvconfig does: it resolves the
// playbook's devices to cards, merges their parameters and hands each
// card's wanted values to the firmware planner (fwconfig.go), the one code
// path it shares with the mode step: a query of exactly the wanted
// parameters (Default/Current/Next Boot), one `set` per device of the
// parameters whose Next Boot differs, and a pending power cycle where Next
// Boot holds the wanted value and Current does not. A parameter the device
// does not have (the tool refuses the query), one without a readable Next
// Boot value, or one to write that the tool shows read-only stops the plan
// before any write. The Next Boot values before rig's first set are kept
// in the state file for rig down --firmware.
//
// A parameter the playbook's mode section sets on the same card is the
// mode step's: given the same value here it is left to that step (written
// once, by it; firmware_mode.go); a different value is refused when the
// playbook is read (exit 2), and again by Check for a step built without
// a playbook file.
type firmwareStep struct {
	fw      *fwPlanner
	devices []playbooks.FirmwareDevice
	mode    *playbooks.ModeSpec // the playbook's mode section, nil without one
}

// firmwarePreset is the firmware step's naming over the planner.
func firmwarePreset() fwPreset {
	obj := func(bdf string) string { return "firmware " + bdf }
	return fwPreset{
		section:       "firmware",
		changeObj:     obj,
		problemObj:    obj,
		record:        true,
		firmwareName:  "card's firmware",
		restrictWhat:  "these firmware parameters",
		restrictCause: "a restricted host may not change the card's firmware configuration",
		restrictFix: func(tool, bdf string) string {
			return fmt.Sprintf("set them from the BlueField's Arm OS (rig up there with this firmware section, or `%s -y -d %s set ...`)", tool, bdf)
		},
	}
}

// NewFirmwareStep builds the firmware step; the spec was validated.
func NewFirmwareStep(env *provision.Env, spec *playbooks.FirmwareSpec) (provision.Step, error) {
	return newFirmwareStep(env, spec, nil), nil
}

func newFirmwareStep(env *provision.Env, spec *playbooks.FirmwareSpec, mode *playbooks.ModeSpec) *firmwareStep {
	return &firmwareStep{fw: newFwPlanner(env, firmwarePreset()), devices: spec.Devices, mode: mode}
}

// BuildFirmware builds the firmware step, which also reads the mode
// section (the parameters it sets are the mode step's).
func BuildFirmware(pb *playbooks.Playbook, env *provision.Env) (provision.Step, error) {
	if pb.Firmware == nil {
		return nil, nil
	}
	return newFirmwareStep(env, pb.Firmware, pb.Mode), nil
}

func (s *firmwareStep) Name() string { return "firmware" }

// Check implements Step: read-only (queries only).
func (s *firmwareStep) Check(ctx context.Context) (provision.Plan, error) {
	want, err := s.targets(ctx)
	if err != nil {
		return provision.Plan{}, err
	}
	owned, err := s.modeOwned(ctx)
	if err != nil {
		return provision.Plan{}, err
	}
	var plan provision.Plan
	for _, b := range slices.Sorted(maps.Keys(want)) {
		params, notes, err := leaveToMode(b, want[b], owned)
		if err != nil {
			return provision.Plan{}, err
		}
		plan.Notes = append(plan.Notes, notes...)
		if len(params) == 0 {
			continue
		}
		if err := s.fw.plan(ctx, firmwareDevice(b, params), firmwareWords{}, &plan); err != nil {
			return provision.Plan{}, err
		}
	}
	return plan, nil
}

// firmwareDevice is one card's wanted parameters for the planner, queried
// and set in name order, each value as the playbook gives it.
func firmwareDevice(bdf string, params map[string]string) fwDevice {
	dev := fwDevice{BDF: bdf, Query: slices.Sorted(maps.Keys(params))}
	for _, n := range dev.Query {
		dev.Want = append(dev.Want, fwWant{Name: n, Set: params[n], Show: params[n]})
	}
	return dev
}

// firmwareWords words the planner's decision in parameters.
type firmwareWords struct{}

func (firmwareWords) written(r *fwRead, plan *provision.Plan) error {
	plan.AddPending(provision.ResetHostPowerCycle, fmt.Sprintf("power cycle required after writing %s (firmware parameters take effect at the next power cycle; %s)", r.Dev.BDF, powerCycleNote))
	return nil
}

func (firmwareWords) pending(r *fwRead, plan *provision.Plan) error {
	plan.AddPending(provision.ResetHostPowerCycle, fmt.Sprintf("power cycle required: %s next boot holds the wanted values but the running firmware has %s; %s", r.Dev.BDF, strings.Join(r.Pending, ", "), powerCycleNote))
	return nil
}

func (firmwareWords) settled(r *fwRead, plan *provision.Plan) error {
	note := fmt.Sprintf("%s: %s applied", r.Dev.BDF, strings.Join(r.Dev.Query, ", "))
	switch {
	case r.NoCurrent:
		note += " in Next Boot (the tool printed no Current column: the running values were not checked)"
	case len(r.CurrentUnread) > 0:
		note += fmt.Sprintf(" in Next Boot (the running value of %s could not be read: whether a power cycle is pending is not known)", strings.Join(r.CurrentUnread, ", "))
	}
	if len(r.ReadOnly) > 0 {
		note += fmt.Sprintf("; %s read-only from this host (RO), so nothing could have been written", strings.Join(r.ReadOnly, ", "))
	}
	plan.Notes = append(plan.Notes, note)
	return nil
}

// targets resolves each playbook device to the cards it names (function 0
// stands for a card) and merges their parameters: a device named by
// address or mst name overrides "*" for the same parameter.
func (s *firmwareStep) targets(ctx context.Context) (map[string]map[string]string, error) {
	inv, err := smartnic.ScanContext(ctx, s.fw.h)
	if errors.Is(err, fs.ErrNotExist) {
		inv, err = &smartnic.Inventory{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("firmware: %w", err)
	}
	out := map[string]map[string]string{}
	merge := func(bdf string, params map[string]string, override bool) {
		if out[bdf] == nil {
			out[bdf] = map[string]string{}
		}
		for k, v := range params {
			if _, set := out[bdf][k]; override || !set {
				out[bdf][k] = v
			}
		}
	}
	for _, d := range s.devices {
		bdfs, err := resolveFirmwareDevice(inv, d.Device)
		if err != nil {
			return nil, err
		}
		for _, b := range bdfs {
			merge(b, d.Parameters, d.Device != "*")
		}
	}
	return out, nil
}

// resolveFirmwareDevice: "*" is function 0 of every Mellanox NIC card; a
// PCI address or an mst name must name a NIC function of the inventory.
func resolveFirmwareDevice(inv *smartnic.Inventory, dev string) ([]string, error) {
	var out, names []string
	seen := map[string]bool{}
	bdf, isBDF := pci.Canonical(dev)
	mst := strings.TrimPrefix(dev, "/dev/mst/")
	for _, f := range inv.Functions {
		if f.Kind != smartnic.FunctionNIC {
			continue
		}
		names = append(names, f.BDF+" "+f.MSTName)
		card := f.BDF[:strings.LastIndex(f.BDF, ".")+1]
		switch {
		case dev == "*" && !seen[card]:
			seen[card] = true
			out = append(out, f.BDF)
		case isBDF && f.BDF == bdf, !isBDF && f.MSTName != "" && f.MSTName == mst:
			return []string{f.BDF}, nil
		}
	}
	if len(out) == 0 {
		return nil, &provision.Problem{Object: "firmware " + dev, Err: fmt.Errorf("no Mellanox NIC function matches %q (found: %s)", dev, provision.OrNoneList(names)),
			FixText: "name a device from `rig mst status` (its PCI address or mst name), or \"*\" for every card"}
	}
	return out, nil
}

// recordFirmware keeps each parameter's Next Boot value from before rig's
// first set.
func recordFirmware(st *provision.RigState, bdf string, before map[string]string) {
	if st.Firmware == nil {
		st.Firmware = map[string]map[string]string{}
	}
	if st.Firmware[bdf] == nil {
		st.Firmware[bdf] = map[string]string{}
	}
	for k, v := range before {
		if _, ok := st.Firmware[bdf][k]; !ok {
			st.Firmware[bdf][k] = v
		}
	}
}

// Down implements Downer: with --firmware, the parameters this section
// names go back to their Next Boot values before rig (live after a power
// cycle); without it they are left as they are.
func (s *firmwareStep) Down(opts provision.DownOptions) provision.Step {
	if !opts.Firmware {
		return provision.Kept("firmware", "firmware: parameters left as they are (rig down --firmware restores them; they take effect at the next power cycle)")
	}
	names := map[string]bool{}
	for _, d := range s.devices {
		for n := range d.Parameters {
			names[n] = true
		}
	}
	return &fwRestore{name: "firmware", fw: s.fw, owns: func(n string) bool { return names[n] }}
}
