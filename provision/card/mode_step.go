package card

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"rig/mlxconfig"
	"rig/playbooks"
	"rig/provision"
)

// modeStep puts each BlueField into the wanted operation mode (DPU, NIC or
// separated host). It is a named preset over the firmware planner
// (fwconfig.go), the code path of the firmware step: it resolves its
// targets (BlueField-2/-3 cards, mode_targets.go: a host whose only cards
// are ConnectX refuses the mode section at plan time), turns the mode into
// each card's INTERNAL_CPU_* values for its generation (mlxconfig.Wanted)
// and hands them to the planner, which queries, diffs against Next Boot
// and Current, plans one `<tool> -y -d BDF set P=V ...` per device,
// decides a pending power cycle, refuses a restricted host and explains
// tool failures. What stays here is the wording in modes: "next boot holds
// dpu mode but the running firmware is in separated mode", the power-cycle
// and restricted-host notes. The query asks for all five mode parameters
// (not only the wanted ones) so the notes can name the running and
// next-boot mode.
//
// A playbook whose firmware section sets one of the mode's parameters
// leaves it to this step: a different value is refused when the playbook
// is read (playbooks.validateModeFirmware), the same value is written
// once, here (firmware_mode.go).
type modeStep struct {
	fw      *fwPlanner
	want    mlxconfig.DPUMode
	devices []string // explicit BDFs; empty = auto
}

// modePreset is the mode step's naming over the firmware planner.
func modePreset() fwPreset {
	return fwPreset{
		section:       "mode",
		changeObj:     func(bdf string) string { return "mode " + bdf },
		problemObj:    func(bdf string) string { return "mode: " + bdf },
		record:        true,
		firmwareName:  "BlueField firmware",
		restrictWhat:  "the BlueField mode",
		restrictCause: "nv_internal_cpu_conf is read-only (RO) from here",
		restrictFix: func(tool, bdf string) string {
			return fmt.Sprintf("change the mode from the BlueField's Arm OS (`rig mode set` there, or `%s -y -d %s set ...`)", tool, bdf)
		},
	}
}

// NewModeStep builds the mode step for a playbook's `mode` section.
func NewModeStep(env *provision.Env, spec *playbooks.ModeSpec) (provision.Step, error) {
	w, err := spec.ModeWant()
	if err != nil {
		return nil, fmt.Errorf("mode: want: %w", err)
	}
	m, err := mlxconfig.ParseDPUMode(w)
	if err != nil {
		return nil, fmt.Errorf("mode: %w", err)
	}
	s := &modeStep{fw: newFwPlanner(env, modePreset()), want: m}
	if !spec.AutoDevices() {
		for _, d := range spec.Devices {
			s.devices = append(s.devices, mlxconfig.NormalizeBDF(d))
		}
	}
	return s, nil
}

func (s *modeStep) Name() string { return "mode" }

// Check implements Step: read-only (queries only).
func (s *modeStep) Check(ctx context.Context) (provision.Plan, error) {
	devs, skipped, err := modeTargets(ctx, s.fw.h, s.devices, s.want)
	if err != nil {
		return provision.Plan{}, err
	}
	plan := provision.Plan{Notes: skipped}
	for _, d := range devs {
		dev, err := modeDevice(d, s.want)
		if err != nil {
			return provision.Plan{}, err
		}
		if err := s.fw.plan(ctx, dev, modeWords{want: s.want, dev: d}, &plan); err != nil {
			return provision.Plan{}, err
		}
	}
	return plan, nil
}

// modeDevice is the preset proper: mode m on target d as the firmware
// parameters the planner sets, in mlxconfig.ModeParams order.
func modeDevice(d modeTarget, m mlxconfig.DPUMode) (fwDevice, error) {
	want, err := mlxconfig.Wanted(d.Generation, m)
	if err != nil {
		return fwDevice{}, fmt.Errorf("mode: %s: %w", d.BDF, err)
	}
	dev := fwDevice{BDF: d.BDF, Query: mlxconfig.ModeParams}
	for _, name := range mlxconfig.ModeParams {
		if v, ok := want[name]; ok {
			dev.Want = append(dev.Want, fwWant{Name: name, Set: mlxconfig.EnumName(name, v), Show: mlxconfig.FormatValue(name, v)})
		}
	}
	return dev, nil
}

// modeWords words the planner's decision on one BlueField in modes.
type modeWords struct {
	want mlxconfig.DPUMode
	dev  modeTarget
}

// state is the device's running and next-boot mode from the query.
func (w modeWords) state(r *fwRead) (mlxconfig.ModeState, error) {
	st, err := mlxconfig.Decide(w.dev.Generation, r.Query)
	if err != nil {
		return st, fmt.Errorf("mode: %s: %w", w.dev.BDF, err)
	}
	return st, nil
}

func (w modeWords) written(r *fwRead, plan *provision.Plan) error {
	st, err := w.state(r)
	if err != nil {
		return err
	}
	plan.Notes = append(plan.Notes, fmt.Sprintf("%s (%s): running %s mode, next boot %s mode; want %s", w.dev.BDF, w.dev.Generation, st.Current, st.Next, w.want))
	plan.AddPending(provision.ResetHostPowerCycle, fmt.Sprintf("power cycle required after writing %s (%s mode takes effect at the next power cycle; %s)", w.dev.BDF, w.want, powerCycleNote))
	return nil
}

func (w modeWords) pending(r *fwRead, plan *provision.Plan) error {
	st, err := w.state(r)
	if err != nil {
		return err
	}
	plan.AddPending(provision.ResetHostPowerCycle, fmt.Sprintf("power cycle required: %s next boot holds %s mode but the running firmware is in %s mode (%s); %s",
		w.dev.BDF, w.want, st.Current, mlxconfig.Describe(st.CurrentVal), powerCycleNote))
	return nil
}

func (w modeWords) settled(r *fwRead, plan *provision.Plan) error {
	st, err := w.state(r)
	if err != nil {
		return err
	}
	bdf := w.dev.BDF
	switch {
	case r.NoCurrent:
		plan.Notes = append(plan.Notes, fmt.Sprintf("%s: the tool printed no Current column (%s); only the next-boot mode (%s) could be checked, not the running one", bdf, noCurrentWhy(r.Query), st.Next))
	case len(r.CurrentUnread) > 0:
		plan.Notes = append(plan.Notes, fmt.Sprintf("%s: the running value of %s could not be read; whether a power cycle is pending is not known", bdf, strings.Join(r.CurrentUnread, ", ")))
	}
	plan.Notes = append(plan.Notes, fmt.Sprintf("%s (%s) is in %s mode", bdf, w.dev.Generation, w.want))
	if len(r.ReadOnly) > 0 {
		plan.Notes = append(plan.Notes, fmt.Sprintf("%s: this host is restricted (mode parameters are RO); a mode change would have to be made from the Arm", bdf))
	}
	return nil
}

// noCurrentWhy says why a query has no Current column.
func noCurrentWhy(q *mlxconfig.Query) string {
	if len(q.Info) > 0 {
		return fmt.Sprintf("%q", q.Info[0])
	}
	return "the firmware does not report current values"
}

// Down implements Downer: with --firmware, the mode's parameters go back
// to their Next Boot values from before rig (the mode then runs after a
// power cycle); without it the mode is left as it is.
func (s *modeStep) Down(opts provision.DownOptions) provision.Step {
	if !opts.Firmware {
		return provision.Kept("mode", "mode: the DPU mode is left as it is (rig down --firmware sets the mode from before rig back; it runs after a power cycle)")
	}
	return &fwRestore{name: "mode", fw: s.fw, owns: func(n string) bool { return slices.Contains(mlxconfig.ModeParams, n) }}
}
