package card

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"rig/internal/host"
	"rig/mlxconfig"
	"rig/provision"
)

// The firmware (NV) configuration planner: the one code path from a
// device's wanted parameters to its plan, behind the firmware step and the
// mode step (a named preset over it: the BlueField mode as INTERNAL_CPU_*
// values). For each device:
//   - one query of the parameters asked for, `<tool> -e -d BDF q NAMES`
//     (the firmware step asks for exactly the wanted ones; the mode preset
//     for all five mode parameters, so it can name the running mode);
//   - a wanted parameter without a readable Next Boot value (no row, N/A,
//     a value name without its number) stops the plan naming them: nothing
//     is planned from values that were not read;
//   - the parameters whose Next Boot differs are written by one
//     `<tool> -y -d BDF set P=V ...` per device; one of them shown RO is a
//     restricted (zero-trust) host, refused with the tool's words and
//     mstprivhost's level, before any write;
//   - Next Boot right and Current wrong is a pending power cycle (exit 3);
//     without a Current column, or with a Current value that could not be
//     read, only Next Boot is checked and the preset says so;
//   - a failing query or set becomes a Problem with cause and fix through
//     mlxconfig.ClassifyRun, with the host's facts about the device (its PCI
//     function and driver, a /dev/mst node, rig's uid, kernel lockdown)
//     where the root is the machine the tool works on; an unclassified -E-
//     line is the cause as printed; "doesn't support" from a restricted
//     host is explained as the restriction;
//   - under a fixture --root without --fw-sim the set is planned, shown and
//     refused at apply.
// A preset resolves its devices and wanted values, and words the outcome
// (fwWords); the planner decides.

// fwWant is one parameter a preset wants on a device.
type fwWant struct {
	Name string
	Set  string // the value as `set` takes it: ECPF, True, 16
	Show string // the value as the plan shows it: ECPF(0), or the playbook's text
}

// fwDevice is one device handed to the planner.
type fwDevice struct {
	BDF   string
	Query []string // the parameters to query, in order; every wanted one is among them
	Want  []fwWant // in set order
}

// fwRead is one device's query and what the planner read from it.
type fwRead struct {
	Dev   fwDevice
	Tool  string
	Args  []string // the query's arguments
	Query *mlxconfig.Query
	Write []fwWant          // Next Boot differs: the set writes these
	From  []mlxconfig.Value // the Next Boot value of each of Write
	// Pending lists "NAME (running TEXT)": Next Boot holds the wanted
	// value, the running firmware does not.
	Pending []string
	// NoCurrent: the tool printed no Current column, so only Next Boot was
	// checked. CurrentUnread names wanted parameters whose running value
	// could not be read (N/A): whether a power cycle is pending is unknown.
	NoCurrent     bool
	CurrentUnread []string
	ReadOnly      []string // wanted parameters the tool shows RO
}

// fwWords is how a preset words the planner's decision on one device.
type fwWords interface {
	written(r *fwRead, plan *provision.Plan) error // a set was planned
	pending(r *fwRead, plan *provision.Plan) error // nothing to write; a power cycle is pending
	settled(r *fwRead, plan *provision.Plan) error // nothing to write, nothing known pending
}

// fwPreset is what a step puts around the planner beyond its words.
type fwPreset struct {
	section    string                  // "mode", "firmware": the step, in errors about the tool itself
	changeObj  func(bdf string) string // plan changes, refusals, incomplete queries: "mode 0000:03:00.0"
	problemObj func(bdf string) string // tool failures and a restricted host: "mode: 0000:03:00.0"
	// record keeps each written parameter's Next Boot value from before
	// rig in the state file, for rig down --firmware.
	record bool
	// firmwareName is what to update when rows are missing ("BlueField firmware").
	firmwareName string
	// restricted words a restricted host: what it may not change, the
	// cause's second half and the fix's first half (the planner adds
	// mstprivhost's part of each).
	restrictWhat, restrictCause string
	restrictFix                 func(tool, bdf string) string
}

// fwPlanner plans and writes firmware parameters for one step.
type fwPlanner struct {
	h      *host.Host
	tool   string // resolved config tool (mstconfig or mlxconfig)
	preset fwPreset
	// fixture is --root when it names a fixture and the firmware tools are
	// the real ones (no --fw-sim): a write would change this machine's
	// firmware, so the apply refuses it.
	fixture string
	state   provision.StateStore // rig's state file (Next Boot values before rig)
	// facts: the host root is the machine the firmware tool works on
	// (the live host, or the simulator's tree), so a failure is explained
	// with what the root shows about the device; euid is the tool's uid
	// (-1: it does not matter, the simulator answers any user).
	facts bool
	euid  int
}

func newFwPlanner(env *provision.Env, preset fwPreset) *fwPlanner {
	p := &fwPlanner{h: env.Host, preset: preset, state: env.State(), facts: true, euid: -1}
	if !env.FirmwareSim {
		p.fixture = env.FixtureRoot
		p.facts = env.FixtureRoot == ""
		p.euid = env.EUID()
	}
	return p
}

// failure explains a failing run of the tool on bdf (toolFailure), with
// the host's facts about the device where the root shows the machine the
// tool ran on.
func (p *fwPlanner) failure(obj, what, bdf string, args []string, out []byte, err error) error {
	var facts *mlxconfig.HostFacts
	if p.facts {
		f := mlxconfig.ReadHostFacts(p.h, bdf, p.euid)
		facts = &f
	}
	return toolFailure(obj, what, p.tool, bdf, args, facts, out, err)
}

// outputProblem: the tool succeeded but printed what rig cannot read.
func (p *fwPlanner) outputProblem(obj string, args []string, err error) *provision.Problem {
	cmd := p.tool + " " + strings.Join(args, " ")
	return &provision.Problem{Object: obj, Err: fmt.Errorf("`%s` output: %w", cmd, err),
		CauseText: fmt.Sprintf("%s exited 0 but printed what rig does not read as its output: a format this mstflint/MFT version changed, or output cut short", p.tool),
		FixText:   fmt.Sprintf("run `%s` by hand and compare it with the formats rig reads (hardware-formats.md §1.4); `%s -v` names the version", cmd, p.tool)}
}

// plan queries one device, decides and plans its set (or its pending
// power cycle), and lets w word it.
func (p *fwPlanner) plan(ctx context.Context, dev fwDevice, w fwWords, plan *provision.Plan) error {
	r, err := p.read(ctx, dev)
	if err != nil {
		return err
	}
	if err := p.planReliance(r, plan); err != nil {
		return err
	}
	switch {
	case len(r.Write) > 0:
		if err := p.refuseReadOnly(ctx, r); err != nil {
			return err
		}
		p.addSet(r, plan)
		return w.written(r, plan)
	case len(r.Pending) > 0 && len(r.CurrentUnread) == 0:
		return w.pending(r, plan)
	}
	return w.settled(r, plan)
}

// read queries dev and compares each wanted value with Next Boot and
// Current.
func (p *fwPlanner) read(ctx context.Context, dev fwDevice) (*fwRead, error) {
	q, args, err := p.query(ctx, dev.BDF, dev.Query)
	if err != nil {
		return nil, err
	}
	r := &fwRead{Dev: dev, Tool: p.tool, Args: args, Query: q, NoCurrent: !q.HasCurrent}
	var unread []string
	for _, w := range dev.Want {
		pr, ok := q.Param(w.Name)
		if !ok {
			unread = append(unread, w.Name+" (no row)")
			continue
		}
		if !readable(w.Name, pr.Next) {
			if pr.Unreadable || pr.Modified {
				unread = append(unread, fmt.Sprintf("%s (%s)", w.Name, pr.UnreadWhy(pr.Next)))
			} else {
				unread = append(unread, fmt.Sprintf("%s (Next Boot %q)", w.Name, pr.Next.Text))
			}
			continue
		}
		if pr.ReadOnly {
			r.ReadOnly = append(r.ReadOnly, w.Name)
		}
		switch {
		case !mlxconfig.ValueMatches(w.Name, w.Set, pr.Next):
			r.Write = append(r.Write, w)
			r.From = append(r.From, pr.Next)
		case r.NoCurrent:
		case !readable(w.Name, pr.Current):
			r.CurrentUnread = append(r.CurrentUnread, w.Name)
		case !mlxconfig.ValueMatches(w.Name, w.Set, pr.Current):
			r.Pending = append(r.Pending, fmt.Sprintf("%s (running %s)", w.Name, pr.Current.Text))
		}
	}
	if len(unread) > 0 {
		return nil, p.unreadProblem(dev.BDF, args, unread)
	}
	return r, nil
}

// readable: the column is there, the value is not N/A, and a parameter
// whose value names rig knows printed its number (NAME(n)).
func readable(name string, v mlxconfig.Value) bool {
	return v.Present && !v.NA && (v.HasNum || !mlxconfig.HasValueNames(name))
}

// query runs `<tool> -e -d BDF q NAMES` and parses it; a failure is
// explained (a restricted host, else mlxconfig.ClassifyRun).
func (p *fwPlanner) query(ctx context.Context, bdf string, names []string) (*mlxconfig.Query, []string, error) {
	args := append([]string{"-e", "-d", bdf, "q"}, names...)
	out, err := runTool(ctx, p.h, p.preset.section, &p.tool, args...)
	obj := p.preset.problemObj(bdf)
	if err != nil {
		if _, ok := provision.AsProblem(err); ok {
			return nil, nil, err
		}
		if strings.Contains(toolOutput(out, err), "doesn't support") {
			if ph, perr := privHost(ctx, p.h, bdf); perr == nil && ph.Restricted() {
				return nil, nil, p.restrictedProblem(bdf, err)
			}
		}
		return nil, nil, p.failure(obj, "query firmware config", bdf, args, out, err)
	}
	q, err := mlxconfig.ParseQuery(string(out))
	if err != nil {
		return nil, nil, p.outputProblem(obj, args, err)
	}
	return q, args, nil
}

// unreadProblem refuses to plan when the tool printed no readable Next
// Boot value for wanted parameters (why: "NAME (no row)", ...).
func (p *fwPlanner) unreadProblem(bdf string, args, why []string) *provision.Problem {
	cmd := p.tool + " " + strings.Join(args, " ")
	return &provision.Problem{Object: p.preset.changeObj(bdf),
		Err:       fmt.Errorf("`%s` printed no readable Next Boot value for %s; nothing is planned from values that were not read", cmd, strings.Join(why, ", ")),
		CauseText: "the tool's output is incomplete: a truncated table, or firmware too old to report these parameters",
		FixText:   fmt.Sprintf("run `%s` by hand and look for the rows; update the %s (and mstflint/MFT) if they are missing", cmd, p.preset.firmwareName)}
}

// refuseReadOnly refuses a set of parameters the tool shows RO, quoting
// what the tools print: the RO row footer of mstconfig (mlxcfg_ui.cpp)
// and the level line of mstprivhost q.
func (p *fwPlanner) refuseReadOnly(ctx context.Context, r *fwRead) error {
	var ro []string
	for _, w := range r.Write {
		for _, name := range r.ReadOnly {
			if name == w.Name {
				ro = append(ro, name)
			}
		}
	}
	if len(ro) == 0 {
		return nil
	}
	bdf := r.Dev.BDF
	ev := fmt.Sprintf("`%s %s` marks %s RO: \"The 'RO' shows parameters which are for read only and cannot be changed\"",
		r.Tool, strings.Join(r.Args, " "), strings.Join(ro, ", "))
	if ph, perr := privHost(ctx, p.h, bdf); perr == nil && ph.Restricted() {
		ev += fmt.Sprintf("; `mstprivhost -d %s q`: \"%-30s: %s\"", bdf, "level", ph.Level)
	}
	return p.restrictedProblem(bdf, errors.New(ev))
}

func (p *fwPlanner) restrictedProblem(bdf string, err error) *provision.Problem {
	return &provision.Problem{Object: p.preset.problemObj(bdf),
		Err:       fmt.Errorf("this host may not change %s (zero-trust / restricted host): %w", p.preset.restrictWhat, err),
		CauseText: "the Arm side restricted this host (`mstprivhost r`); " + p.preset.restrictCause,
		FixText:   fmt.Sprintf("%s, or lift the restriction on the Arm with `mstprivhost -d %s p`", p.preset.restrictFix(p.tool, bdf), bdf)}
}

// addSet plans the one set of r's device: its changes, the state record
// (when the preset keeps one) and the refusal under a fixture root.
func (p *fwPlanner) addSet(r *fwRead, plan *provision.Plan) {
	bdf, obj := r.Dev.BDF, p.preset.changeObj(r.Dev.BDF)
	set := make([]string, len(r.Write))
	before := map[string]string{}
	var changes []provision.Change
	for i, w := range r.Write {
		set[i] = w.Name + "=" + w.Set
		before[w.Name] = setForm(r.From[i])
		changes = append(changes, provision.Change{Object: obj, Action: "set " + w.Name + " (next boot)", From: r.From[i].Text, To: w.Show})
	}
	record := p.preset.record
	plan.Add(func(ctx context.Context) error {
		if record {
			if err := provision.UpdateState(p.state, func(st *provision.RigState) { recordFirmware(st, bdf, before) }); err != nil {
				return &provision.Problem{Object: obj, Err: fmt.Errorf("%w; nothing was written", err)}
			}
		}
		return p.write(ctx, bdf, set)
	}, changes...)
	if p.fixture != "" {
		plan.Ops[len(plan.Ops)-1].Refused = provision.RefuseLiveWrite(obj, p.fixture, "would run "+p.tool+" set on this machine's firmware", "or give --fw-sim FILE to write the firmware simulator")
		plan.Notes = append(plan.Notes, fmt.Sprintf("%s: under --root %s the %s set would write this machine's firmware; apply refuses it (give --fw-sim FILE for the simulator)", obj, p.fixture, p.tool))
	}
}

// write sets the parameters (P=V) of one device in one command. The query
// of the same parameters succeeded, so a set that says the device
// "doesn't support" one is a host not allowed to write it (a restricted
// host whose tool hides the TLV).
func (p *fwPlanner) write(ctx context.Context, bdf string, params []string) error {
	args := append([]string{"-y", "-d", bdf, "set"}, params...)
	out, err := runTool(ctx, p.h, p.preset.section, &p.tool, args...)
	obj := p.preset.problemObj(bdf)
	if err != nil {
		if strings.Contains(toolOutput(out, err), "doesn't support") {
			return p.restrictedProblem(bdf, err)
		}
		return p.failure(obj, "set firmware config", bdf, args, out, err)
	}
	if !strings.Contains(string(out), "Done!") {
		cmd := p.tool + " " + strings.Join(args, " ")
		return &provision.Problem{Object: obj, Err: fmt.Errorf("`%s` exited 0 but did not report success (no \"Applying... Done!\"): %s", cmd, strings.TrimSpace(string(out))),
			CauseText: fmt.Sprintf("%s did not say it wrote the configuration: the write may not have happened (an older or newer tool wording, or output cut short)", p.tool),
			FixText:   fmt.Sprintf("check Next Boot with `%s -e -d %s q`, and rerun `%s` by hand if the values are not there", p.tool, bdf, cmd)}
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

const powerCycleNote = "a host reboot does not reload NIC firmware in DPU mode: power cycle the server (cold, ~30 s off) or run mstfwreset"
