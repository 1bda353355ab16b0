package provision

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"rig/internal/host"
	"rig/playbooks"
	"rig/provision/mlxconfig"
	"rig/provision/smartnic"
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
//     and no write.
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

// modeTarget is one BlueField the step works on: a BlueField NIC function
// of the smartnic inventory and the generation that picks its parameters.
type modeTarget struct {
	BDF        string
	Generation mlxconfig.Generation
}

// targets resolves the devices the step works on; skipped names the
// BlueFields auto discovery left out (unknown mode parameters).
func (s *modeStep) targets(ctx context.Context) (devs []modeTarget, skipped []string, err error) {
	return modeTargets(ctx, s.h, s.devices)
}

// modeTargets finds the BlueFields in the smartnic inventory of the host
// root: with no bdfs, function 0 of each BlueField device of a generation
// whose mode parameters rig knows; else exactly the named functions, each
// of which must be such a BlueField.
func modeTargets(ctx context.Context, h *host.Host, bdfs []string) ([]modeTarget, []string, error) {
	inv, err := smartnic.ScanContext(ctx, h)
	if errors.Is(err, fs.ErrNotExist) {
		inv, err = &smartnic.Inventory{}, nil // no PCI bus under the root: nothing found
	}
	if err != nil {
		return nil, nil, fmt.Errorf("mode: %w", err)
	}
	if len(bdfs) == 0 {
		var out []modeTarget
		var skipped []string
		for _, f := range inv.BlueFieldDevices() {
			gen, ok := mlxconfig.GenerationForModel(f.Generation)
			if !ok {
				skipped = append(skipped, fmt.Sprintf("%s (%s): rig knows the mode parameters of BlueField-2 and BlueField-3 only; left alone", f.BDF, f.Model))
				continue
			}
			out = append(out, modeTarget{BDF: f.BDF, Generation: gen})
		}
		if len(out) == 0 {
			found := ""
			if len(skipped) > 0 {
				found = "; found only " + strings.Join(skipped, ", ")
			}
			return nil, nil, &Problem{Object: "mode", Err: fmt.Errorf("no BlueField found under %s (no PCI function 0 with vendor 0x15b3 and device 0xa2d6/0xa2dc)%s", h.Path("/sys/bus/pci/devices"), found),
				CauseText: "the card is absent, not enumerated on PCI, or this is not the host it is plugged into",
				FixText:   "check `lspci -d 15b3:`; name the device by PCI address in the playbook's mode.devices"}
		}
		return out, skipped, nil
	}
	var out []modeTarget
	for _, bdf := range bdfs {
		f, ok := inv.Function(bdf)
		if !ok && !h.Exists("/sys/bus/pci/devices/"+bdf) {
			return nil, nil, &Problem{Object: "mode: " + bdf, Err: errors.New("PCI device not present"),
				CauseText: "wrong PCI address in mode.devices, or the card is not enumerated",
				FixText:   "check `lspci -d 15b3:` and fix mode.devices (or use auto)"}
		}
		var gen mlxconfig.Generation
		what := "not a Mellanox function"
		if ok {
			what = fmt.Sprintf("%s, device id %s", f.Model, f.DeviceID)
			if f.Kind == smartnic.FunctionNIC {
				gen, _ = mlxconfig.GenerationForModel(f.Model)
			}
		}
		if gen == "" {
			return nil, nil, &Problem{Object: "mode: " + bdf, Err: fmt.Errorf("not a BlueField-2/-3 PF (%s)", what),
				CauseText: "DPU mode exists only on BlueField-2 (15b3:a2d6) and BlueField-3 (15b3:a2dc)",
				FixText:   "remove the device from mode.devices"}
		}
		out = append(out, modeTarget{BDF: f.BDF, Generation: gen})
	}
	return out, nil, nil
}

// runTool runs the firmware config tool, trying mstconfig (mstflint) first
// and mlxconfig (MFT) when mstconfig is not installed.
func runTool(ctx context.Context, h *host.Host, tool *string, args ...string) ([]byte, error) {
	if *tool != "" {
		return h.Run(ctx, *tool, args...)
	}
	var lastErr error
	for _, t := range []string{"mstconfig", "mlxconfig"} {
		out, err := h.Run(ctx, t, args...)
		var te *host.ToolError
		if errors.As(err, &te) && te.NotFound() {
			lastErr = err
			continue
		}
		*tool = t
		return out, err
	}
	return nil, &Problem{Object: "mode", Err: fmt.Errorf("neither mstconfig nor mlxconfig is installed: %w", lastErr),
		CauseText: "no firmware configuration tool on this host",
		FixText:   "install Debian package mstflint (apt-get install mstflint), or NVIDIA MFT for mlxconfig"}
}

// deviceMode is one device's decided state.
type deviceMode struct {
	dev   modeTarget
	query *mlxconfig.Query
	state mlxconfig.ModeState
}

func queryArgs(bdf string) []string {
	return append([]string{"-e", "-d", bdf, "q"}, mlxconfig.ModeParams...)
}

// queryMode runs the query and decides the device's mode; zero-trust hosts
// whose tool hides the parameters are explained through the privhost tool.
func queryMode(ctx context.Context, h *host.Host, tool *string, dev modeTarget) (*deviceMode, error) {
	out, err := runTool(ctx, h, tool, queryArgs(dev.BDF)...)
	obj := "mode: " + dev.BDF
	if err != nil {
		if _, ok := AsProblem(err); ok {
			return nil, err
		}
		if strings.Contains(string(out), "doesn't support") {
			if ph, perr := privHost(ctx, h, dev.BDF); perr == nil && ph.Restricted() {
				return nil, restrictedProblem(dev.BDF, *tool, err)
			}
		}
		return nil, fmt.Errorf("%s: query firmware config: %w", obj, err)
	}
	q, err := mlxconfig.ParseQuery(string(out))
	if err != nil {
		return nil, fmt.Errorf("%s: %s output: %w", obj, *tool, err)
	}
	st, err := mlxconfig.Decide(dev.Generation, q)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", obj, err)
	}
	return &deviceMode{dev: dev, query: q, state: st}, nil
}

// privHost queries zero-trust with mstprivhost (mstflint) or mlxprivhost (MFT).
func privHost(ctx context.Context, h *host.Host, bdf string) (mlxconfig.PrivHost, error) {
	var lastErr error
	for _, t := range []string{"mstprivhost", "mlxprivhost"} {
		out, err := h.Run(ctx, t, "-d", bdf, "q")
		if err != nil {
			lastErr = err
			continue
		}
		return mlxconfig.ParsePrivHost(string(out))
	}
	return mlxconfig.PrivHost{}, lastErr
}

func restrictedProblem(bdf, tool string, err error) *Problem {
	return &Problem{Object: "mode: " + bdf,
		Err:       fmt.Errorf("this host may not change the BlueField mode (zero-trust / restricted host): %w", err),
		CauseText: "the Arm side restricted this host (`mstprivhost r`); nv_internal_cpu_conf is read-only (RO) from here",
		FixText:   fmt.Sprintf("change the mode from the BlueField's Arm OS (`rig mode set` there, or `%s -y -d %s set ...`), or lift the restriction on the Arm with `mstprivhost -d %s p`", tool, bdf, bdf)}
}

const powerCycleNote = "a host reboot does not reload NIC firmware in DPU mode: power cycle the server (cold, ~30 s off) or run mstfwreset"

// plan decides the changes or the pending state of one device.
func (s *modeStep) planDevice(ctx context.Context, dm *deviceMode, plan *Plan) error {
	want, err := mlxconfig.Wanted(dm.dev.Generation, s.want)
	if err != nil {
		return fmt.Errorf("mode: %s: %w", dm.dev.BDF, err)
	}
	obj := "mode " + dm.dev.BDF
	st := dm.state
	diff := mlxconfig.Diff(want, st.NextVal)
	if len(diff) > 0 {
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
			from := "N/A"
			if v, ok := st.NextVal[name]; ok {
				from = mlxconfig.FormatValue(name, v)
			}
			changes = append(changes, Change{Object: obj, Action: "set " + name + " (next boot)", From: from, To: mlxconfig.FormatValue(name, want[name])})
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
	if len(mlxconfig.Diff(want, st.CurrentVal)) > 0 {
		addPending(plan, fmt.Sprintf("power cycle required: %s next boot holds %s mode but the running firmware is in %s mode (%s); %s",
			dm.dev.BDF, s.want, st.Current, mlxconfig.Describe(st.CurrentVal), powerCycleNote))
		return nil
	}
	if !dm.query.HasCurrent {
		plan.Notes = append(plan.Notes, fmt.Sprintf("%s: the tool shows no Current column; only the next-boot mode (%s) could be checked", dm.dev.BDF, st.Next))
	}
	plan.Notes = append(plan.Notes, fmt.Sprintf("%s (%s) is in %s mode", dm.dev.BDF, dm.dev.Generation, s.want))
	if len(st.ReadOnly) > 0 {
		plan.Notes = append(plan.Notes, fmt.Sprintf("%s: this host is restricted (mode parameters are RO); a mode change would have to be made from the Arm", dm.dev.BDF))
	}
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
	devs, skipped, err := s.targets(ctx)
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
		if strings.Contains(string(out), "doesn't support") {
			return restrictedProblem(bdf, s.tool, err)
		}
		return fmt.Errorf("mode: %s: set firmware config: %w", bdf, err)
	}
	if !strings.Contains(string(out), "Done!") {
		return fmt.Errorf("mode: %s: %s set did not report success: %s", bdf, s.tool, strings.TrimSpace(string(out)))
	}
	return nil
}

// ModeReport is one device's mode as `rig mode show` prints it.
type ModeReport struct {
	BDF        string               `json:"bdf"`
	DeviceType string               `json:"deviceType"`
	Generation mlxconfig.Generation `json:"generation"`
	Current    mlxconfig.DPUMode    `json:"current"`
	Next       mlxconfig.DPUMode    `json:"next"`
	Pending    bool                 `json:"pendingPowerCycle"`
	ReadOnly   bool                 `json:"readOnly"`
	Params     []mlxconfig.Param    `json:"params"`
}

// ShowModes reads the mode of each BlueField (bdfs empty = auto discovery).
func ShowModes(ctx context.Context, h *host.Host, bdfs []string) ([]ModeReport, error) {
	norm := make([]string, len(bdfs))
	for i, b := range bdfs {
		norm[i] = mlxconfig.NormalizeBDF(b)
	}
	devs, _, err := modeTargets(ctx, h, norm)
	if err != nil {
		return nil, err
	}
	var tool string
	var out []ModeReport
	for _, d := range devs {
		dm, err := queryMode(ctx, h, &tool, d)
		if err != nil {
			return nil, err
		}
		r := ModeReport{BDF: d.BDF, DeviceType: dm.query.DeviceType, Generation: d.Generation,
			Current: dm.state.Current, Next: dm.state.Next, Pending: dm.state.Pending, ReadOnly: len(dm.state.ReadOnly) > 0}
		for _, name := range mlxconfig.ModeParams {
			if p, ok := dm.query.Param(name); ok {
				r.Params = append(r.Params, p)
			}
		}
		out = append(out, r)
	}
	return out, nil
}
