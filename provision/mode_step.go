package provision

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"rig/internal/host"
	"rig/playbooks"
	"rig/provision/mlxconfig"
)

// modeStep puts each BlueField into the wanted operation mode (DPU, NIC or
// separated host) with mstflint's mstconfig (or MFT's mlxconfig):
//   - Check queries `<tool> -e -d BDF q <the five INTERNAL_CPU_* params>`,
//     decides the current and next-boot mode and plans only the parameters
//     whose Next Boot value differs from the wanted one;
//   - its plan writes exactly those with one op per device, one
//     `<tool> -y -d BDF set P=V ...` (never the same values twice);
//   - when Next Boot already holds the wanted values but the running
//     firmware does not, nothing is written and the plan is pending a power
//     cycle (a host reboot does not reload NIC firmware in DPU mode);
//   - a restricted (zero-trust) host gets a Problem with the tool's text,
//     and no write;
//   - a wanted parameter the tool printed no readable Next Boot value for
//     (missing row, N/A) stops the plan with the names: no write from
//     values that were not read; without a Current column only Next Boot
//     is checked, and the plan says so;
//   - a failing query or set is classified by its -E- lines
//     (mlxconfig.ClassifyFailure: NV access lost after a warm reboot,
//     open failure, unsupported device, ...) into a Problem with cause and
//     fix (mode_tool.go);
//   - a host whose only cards are ConnectX (no DPU mode) refuses the mode
//     section at plan time (mode_targets.go).
type modeStep struct {
	h       *host.Host
	want    mlxconfig.DPUMode
	devices []string // explicit BDFs; empty = auto
	tool    string   // resolved config tool (mstconfig or mlxconfig)
	// fixture is --root when it names a fixture and the firmware tools are
	// the real ones (no --fw-sim): a write would change this machine's
	// firmware, so the apply refuses it.
	fixture string
}

// NewModeStep builds the mode step for a playbook's `mode` section.
func NewModeStep(env *Env, spec *playbooks.ModeSpec) (Step, error) {
	h := env.Host
	w, err := spec.ModeWant()
	if err != nil {
		return nil, fmt.Errorf("mode: want: %w", err)
	}
	m, err := mlxconfig.ParseDPUMode(w)
	if err != nil {
		return nil, fmt.Errorf("mode: %w", err)
	}
	s := &modeStep{h: h, want: m}
	if !env.FirmwareSim {
		s.fixture = env.FixtureRoot
	}
	if !spec.AutoDevices() {
		for _, d := range spec.Devices {
			s.devices = append(s.devices, mlxconfig.NormalizeBDF(d))
		}
	}
	return s, nil
}

func (s *modeStep) Name() string { return "mode" }

const powerCycleNote = "a host reboot does not reload NIC firmware in DPU mode: power cycle the server (cold, ~30 s off) or run mstfwreset"

// planDevice decides the changes or the pending state of one device.
// Nothing is planned from a value the tool did not print: a wanted
// parameter without a readable Next Boot value stops the plan.
func (s *modeStep) planDevice(ctx context.Context, dm *deviceMode, plan *Plan) error {
	want, err := mlxconfig.Wanted(dm.dev.Generation, s.want)
	if err != nil {
		return fmt.Errorf("mode: %s: %w", dm.dev.BDF, err)
	}
	if unread := mlxconfig.Unread(want, dm.state.NextVal); len(unread) > 0 {
		return incompleteQueryProblem(dm, unread)
	}
	diff := mlxconfig.Diff(want, dm.state.NextVal)
	if len(diff) > 0 {
		return s.planWrite(ctx, dm, want, diff, plan)
	}
	st := dm.state
	switch {
	case !st.CurrentRead:
		plan.Notes = append(plan.Notes, fmt.Sprintf("%s: the tool printed no Current column (%s); only the next-boot mode (%s) could be checked, not the running one", dm.dev.BDF, noCurrentWhy(dm.query), st.Next))
	case len(mlxconfig.Unread(want, st.CurrentVal)) > 0:
		plan.Notes = append(plan.Notes, fmt.Sprintf("%s: the running value of %s could not be read; whether a power cycle is pending is not known", dm.dev.BDF, strings.Join(mlxconfig.Unread(want, st.CurrentVal), ", ")))
	case len(mlxconfig.Diff(want, st.CurrentVal)) > 0:
		addPending(plan, fmt.Sprintf("power cycle required: %s next boot holds %s mode but the running firmware is in %s mode (%s); %s",
			dm.dev.BDF, s.want, st.Current, mlxconfig.Describe(st.CurrentVal), powerCycleNote))
		return nil
	}
	plan.Notes = append(plan.Notes, fmt.Sprintf("%s (%s) is in %s mode", dm.dev.BDF, dm.dev.Generation, s.want))
	if len(st.ReadOnly) > 0 {
		plan.Notes = append(plan.Notes, fmt.Sprintf("%s: this host is restricted (mode parameters are RO); a mode change would have to be made from the Arm", dm.dev.BDF))
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

// incompleteQueryProblem refuses to plan when the tool printed no
// readable Next Boot value for a parameter the wanted mode sets: the
// parameters are named, nothing is written.
func incompleteQueryProblem(dm *deviceMode, unread []string) *Problem {
	var why []string
	for _, name := range unread {
		if p, ok := dm.query.Param(name); ok {
			why = append(why, fmt.Sprintf("%s (Next Boot %q)", name, p.Next.Text))
		} else {
			why = append(why, name+" (no row)")
		}
	}
	return &Problem{Object: "mode " + dm.dev.BDF,
		Err: fmt.Errorf("`%s %s` printed no readable Next Boot value for %s; nothing is planned from values that were not read",
			dm.tool, strings.Join(queryArgs(dm.dev.BDF), " "), strings.Join(why, ", ")),
		CauseText: "the tool's output is incomplete: a truncated table, or firmware too old to report these parameters",
		FixText: fmt.Sprintf("run `%s %s` by hand and look for the rows; update the BlueField firmware (and mstflint/MFT) if they are missing",
			dm.tool, strings.Join(queryArgs(dm.dev.BDF), " "))}
}

// planWrite plans the one set command that writes diff (NAME=VALUE) to
// Next Boot, after refusing parameters this host may not write.
func (s *modeStep) planWrite(ctx context.Context, dm *deviceMode, want map[string]int64, diff []string, plan *Plan) error {
	obj, st := "mode "+dm.dev.BDF, dm.state
	for _, ro := range st.ReadOnly {
		if _, needed := want[ro]; needed {
			// quote what the tools print: the RO row footer of mstconfig
			// (mlxcfg_ui.cpp) and the level line of mstprivhost q
			ev := fmt.Sprintf("`%s %s` marks %s RO: \"The 'RO' shows parameters which are for read only and cannot be changed\"",
				s.tool, strings.Join(queryArgs(dm.dev.BDF), " "), ro)
			if ph, perr := privHost(ctx, s.h, dm.dev.BDF); perr == nil && ph.Restricted() {
				ev += fmt.Sprintf("; `mstprivhost -d %s q`: \"%-30s: %s\"", dm.dev.BDF, "level", ph.Level)
			}
			return restrictedProblem(dm.dev.BDF, s.tool, errors.New(ev))
		}
	}
	var changes []Change
	for _, a := range diff {
		name, _, _ := strings.Cut(a, "=")
		changes = append(changes, Change{Object: obj, Action: "set " + name + " (next boot)", From: mlxconfig.FormatValue(name, st.NextVal[name]), To: mlxconfig.FormatValue(name, want[name])})
	}
	bdf := dm.dev.BDF
	plan.add(func(ctx context.Context) error { return s.write(ctx, bdf, diff) }, changes...)
	if s.fixture != "" {
		plan.Ops[len(plan.Ops)-1].Refused = refuseLiveWrite(obj, s.fixture, "would run "+s.tool+" set on this machine's firmware", "or give --fw-sim FILE to write the firmware simulator")
		plan.Notes = append(plan.Notes, fmt.Sprintf("%s: under --root %s the %s set would write this machine's firmware; apply refuses it (give --fw-sim FILE for the simulator)", obj, s.fixture, s.tool))
	}
	plan.Notes = append(plan.Notes, fmt.Sprintf("%s (%s): running %s mode, next boot %s mode; want %s", dm.dev.BDF, dm.dev.Generation, st.Current, st.Next, s.want))
	addPending(plan, fmt.Sprintf("power cycle required after writing %s (%s mode takes effect at the next power cycle; %s)", dm.dev.BDF, s.want, powerCycleNote))
	return nil
}

func addPending(plan *Plan, msg string) {
	if plan.Pending == "" {
		plan.Pending = msg
	} else {
		plan.Pending += "; " + msg
	}
}

func (s *modeStep) Check(ctx context.Context) (Plan, error) {
	devs, skipped, err := modeTargets(ctx, s.h, s.devices, s.want)
	if err != nil {
		return Plan{}, err
	}
	plan := Plan{Notes: skipped}
	for _, d := range devs {
		dm, err := queryMode(ctx, s.h, &s.tool, d)
		if err != nil {
			return Plan{}, err
		}
		if err := s.planDevice(ctx, dm, &plan); err != nil {
			return Plan{}, err
		}
	}
	return plan, nil
}

// write sets the parameters (P=V) of one device in one command.
func (s *modeStep) write(ctx context.Context, bdf string, params []string) error {
	args := append([]string{"-y", "-d", bdf, "set"}, params...)
	out, err := runTool(ctx, s.h, &s.tool, args...)
	if err != nil {
		if strings.Contains(toolOutput(out, err), "doesn't support") {
			return restrictedProblem(bdf, s.tool, err)
		}
		return toolFailure("mode: "+bdf, "set firmware config", s.tool, bdf, out, err)
	}
	if !strings.Contains(string(out), "Done!") {
		return fmt.Errorf("mode: %s: %s set did not report success: %s", bdf, s.tool, strings.TrimSpace(string(out)))
	}
	return nil
}
