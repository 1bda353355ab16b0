package provision

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"

	"rig/internal/host"
	"rig/internal/pci"
	"rig/playbooks"
	"rig/provision/mlxconfig"
	"rig/provision/smartnic"
)

// firmwareStep sets any firmware (NV) configuration parameter per device
// with mstconfig/mlxconfig, as DPUFlavor's nvconfig does: a query of
// exactly the wanted parameters (Default/Current/Next Boot), one `set`
// per device of the parameters whose Next Boot differs, and a pending
// power cycle where Next Boot holds the wanted value and Current does not.
// A parameter the device does not have, one it shows read-only or one
// without a readable Next Boot value stops the plan before any write.
type firmwareStep struct {
	h       *host.Host
	devices []playbooks.FirmwareDevice
	tool    string
	fixture string // --root without --fw-sim: a set would write this machine's firmware
}

// NewFirmwareStep builds the firmware step; the spec was validated.
func NewFirmwareStep(env *Env, spec *playbooks.FirmwareSpec) (Step, error) {
	s := &firmwareStep{h: env.Host, devices: spec.Devices}
	if !env.FirmwareSim {
		s.fixture = env.FixtureRoot
	}
	return s, nil
}

func (s *firmwareStep) Name() string { return "firmware" }

// Check implements Step: read-only (queries only).
func (s *firmwareStep) Check(ctx context.Context) (Plan, error) {
	want, err := s.targets(ctx)
	if err != nil {
		return Plan{}, err
	}
	bdfs := make([]string, 0, len(want))
	for b := range want {
		bdfs = append(bdfs, b)
	}
	sort.Strings(bdfs)
	var plan Plan
	for _, b := range bdfs {
		if err := s.planDevice(ctx, b, want[b], &plan); err != nil {
			return Plan{}, err
		}
	}
	return plan, nil
}

// targets resolves each playbook device to the cards it names (function 0
// stands for a card) and merges their parameters: a device named by
// address or mst name overrides "*" for the same parameter.
func (s *firmwareStep) targets(ctx context.Context) (map[string]map[string]string, error) {
	inv, err := smartnic.ScanContext(ctx, s.h)
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
		return nil, &Problem{Object: "firmware " + dev, Err: fmt.Errorf("no Mellanox NIC function matches %q (found: %s)", dev, orNoneList(names)),
			FixText: "name a device from `rig mst status` (its PCI address or mst name), or \"*\" for every card"}
	}
	return out, nil
}

func orNoneList(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

// planDevice queries the wanted parameters of one card and plans its set.
func (s *firmwareStep) planDevice(ctx context.Context, bdf string, want map[string]string, plan *Plan) error {
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	obj := "firmware " + bdf
	args := append([]string{"-e", "-d", bdf, "q"}, names...)
	out, err := runTool(ctx, s.h, &s.tool, args...)
	if err != nil {
		if _, ok := AsProblem(err); ok {
			return err
		}
		return toolFailure(obj, "query firmware config", s.tool, bdf, out, err)
	}
	q, err := mlxconfig.ParseQuery(string(out))
	if err != nil {
		return fmt.Errorf("%s: %s output: %w", obj, s.tool, err)
	}
	var set, pending, bad []string
	var changes []Change
	before := map[string]string{}
	for _, n := range names {
		p, ok := q.Param(n)
		switch {
		case !ok:
			bad = append(bad, n+" (the device has no such parameter)")
		case p.ReadOnly:
			bad = append(bad, n+" (read-only from this host: RO)")
		case !p.Next.Present || p.Next.NA:
			bad = append(bad, fmt.Sprintf("%s (Next Boot %q)", n, p.Next.Text))
		case !mlxconfig.ValueMatches(n, want[n], p.Next):
			set = append(set, n+"="+want[n])
			before[n] = setForm(p.Next)
			changes = append(changes, Change{Object: obj, Action: "set " + n + " (next boot)", From: p.Next.Text, To: want[n]})
		case p.Current.Present && !mlxconfig.ValueMatches(n, want[n], p.Current):
			pending = append(pending, fmt.Sprintf("%s (running %s)", n, p.Current.Text))
		}
	}
	if len(bad) > 0 {
		return &Problem{Object: obj, Err: fmt.Errorf("`%s %s`: %s; nothing was written", s.tool, strings.Join(args, " "), strings.Join(bad, ", ")),
			FixText: "check the names with `" + s.tool + " -d " + bdf + " q` (parameters differ per card and firmware version) and drop or fix them in the playbook"}
	}
	if len(set) > 0 {
		plan.add(func(ctx context.Context) error {
			if err := updateState(s.h, func(st *rigState) { st.recordFirmware(bdf, before) }); err != nil {
				return &Problem{Object: obj, Err: fmt.Errorf("%w; nothing was written", err)}
			}
			return s.write(ctx, bdf, set)
		}, changes...)
		if s.fixture != "" {
			plan.Ops[len(plan.Ops)-1].Refused = refuseLiveWrite(obj, s.fixture, "would run "+s.tool+" set on this machine's firmware", "or give --fw-sim FILE to write the firmware simulator")
		}
		addPending(plan, fmt.Sprintf("power cycle required after writing %s (firmware parameters take effect at the next power cycle; %s)", bdf, powerCycleNote))
		return nil
	}
	if len(pending) > 0 {
		addPending(plan, fmt.Sprintf("power cycle required: %s next boot holds the wanted values but the running firmware has %s; %s", bdf, strings.Join(pending, ", "), powerCycleNote))
		return nil
	}
	note := fmt.Sprintf("%s: %s applied", bdf, strings.Join(names, ", "))
	if len(q.Params) > 0 && !q.Params[0].Current.Present {
		note += " in Next Boot (the tool printed no Current column: the running values were not checked)"
	}
	plan.Notes = append(plan.Notes, note)
	return nil
}

// write sets the parameters (P=V) of one device in one command.
func (s *firmwareStep) write(ctx context.Context, bdf string, params []string) error {
	args := append([]string{"-y", "-d", bdf, "set"}, params...)
	out, err := runTool(ctx, s.h, &s.tool, args...)
	if err != nil {
		return toolFailure("firmware "+bdf, "set firmware config", s.tool, bdf, out, err)
	}
	if !strings.Contains(string(out), "Done!") {
		return fmt.Errorf("firmware %s: %s set did not report success: %s", bdf, s.tool, strings.TrimSpace(string(out)))
	}
	return nil
}

// setForm is a printed value as `set` takes it back: the number of
// NAME(n), else the text.
func setForm(v mlxconfig.Value) string {
	if v.HasNum {
		return fmt.Sprint(v.Num)
	}
	return v.Text
}

// recordFirmware keeps each parameter's Next Boot value from before rig's
// first set.
func (st *rigState) recordFirmware(bdf string, before map[string]string) {
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

// Down implements Downer: with --firmware, the parameters rig set go back
// to their Next Boot values before rig (live after a power cycle);
// without it they are left as they are.
func (s *firmwareStep) Down(opts DownOptions) Step {
	if !opts.Firmware {
		return keptStep{name: "firmware", why: "firmware: parameters left as they are (rig down --firmware restores them; they take effect at the next power cycle)"}
	}
	return &firmwareDown{s: s}
}

type firmwareDown struct{ s *firmwareStep }

func (d *firmwareDown) Name() string { return "firmware" }

// Check plans the restore as an ordinary firmware plan whose wanted values
// are the recorded ones (pending a power cycle like any set); once the old
// values run, it forgets the record.
func (d *firmwareDown) Check(ctx context.Context) (Plan, error) {
	s := d.s
	st, err := loadState(s.h)
	if err != nil {
		return Plan{}, &Problem{Object: "firmware", Err: err}
	}
	var plan Plan
	if len(st.Firmware) == 0 {
		plan.Notes = append(plan.Notes, "firmware: nothing recorded in "+stateFilePath()+" (rig set nothing, or it was restored)")
		return plan, nil
	}
	bdfs := make([]string, 0, len(st.Firmware))
	for b := range st.Firmware {
		bdfs = append(bdfs, b)
	}
	sort.Strings(bdfs)
	for _, b := range bdfs {
		if err := s.planDevice(ctx, b, st.Firmware[b], &plan); err != nil {
			return Plan{}, err
		}
	}
	if len(plan.Ops) > 0 || plan.Pending != "" {
		// the record stays until the old values run (after the power
		// cycle): a later rig down --firmware then forgets it
		return plan, nil
	}
	plan.add(func(context.Context) error {
		return updateState(s.h, func(st *rigState) { st.Firmware = nil })
	}, Change{Object: "rig state", Action: "forget the firmware record", From: stateFilePath()})
	return plan, nil
}
