package card

import (
	"context"
	"fmt"

	"rig/mlxconfig"
	"rig/provision"
)

// ModeReport is one card's mode as `rig mode show` prints it. A ConnectX
// has no mode: Applicable is false and Current/Next are "n/a". Without a
// Current column in the tool's output Current is "not-read" (CurrentRead
// false), never a copy of Next Boot; Unread says what could not be read.
type ModeReport struct {
	BDF         string               `json:"bdf"`
	Model       string               `json:"model"`
	DeviceType  string               `json:"deviceType"`
	Generation  mlxconfig.Generation `json:"generation,omitempty"`
	Applicable  bool                 `json:"applicable"`
	Current     mlxconfig.DPUMode    `json:"current"`
	Next        mlxconfig.DPUMode    `json:"next"`
	CurrentRead bool                 `json:"currentRead"`
	Pending     bool                 `json:"pendingPowerCycle"`
	ReadOnly    bool                 `json:"readOnly"`
	Params      []mlxconfig.Param    `json:"params"`
	Unread      []string             `json:"unread,omitempty"`
	Note        string               `json:"note,omitempty"`
}

// ShowModes reads the mode of each card (bdfs empty = auto discovery):
// BlueField-2/-3 through the firmware tool; a ConnectX is reported as not
// applicable and a BlueField whose parameters rig does not know as not
// read, both without running a tool. env is the host seam and what the
// steps know of it (a fixture root, the simulator, rig's uid), so a tool
// failure is explained as the mode step explains it.
func ShowModes(ctx context.Context, env *provision.Env, bdfs []string) ([]ModeReport, error) {
	h := env.Host
	norm := make([]string, len(bdfs))
	for i, b := range bdfs {
		norm[i] = mlxconfig.NormalizeBDF(b)
	}
	sc, err := scanModes(ctx, h, norm)
	if err != nil {
		return nil, err
	}
	fw := newFwPlanner(env, modePreset())
	var out []ModeReport
	for _, d := range sc.targets {
		dm, err := queryMode(ctx, fw, d)
		if err != nil {
			return nil, err
		}
		out = append(out, queriedReport(dm))
	}
	for _, d := range sc.unknown {
		out = append(out, ModeReport{BDF: d.BDF, Model: d.Model, DeviceType: d.MSTType, Applicable: true, Params: []mlxconfig.Param{},
			Current: mlxconfig.ModeNotRead, Next: mlxconfig.ModeNotRead,
			Note: "rig knows the mode parameters of BlueField-2 and BlueField-3 only; not queried"})
	}
	for _, d := range sc.connectX {
		out = append(out, ModeReport{BDF: d.BDF, Model: d.Model, DeviceType: d.MSTType, Params: []mlxconfig.Param{},
			Current: mlxconfig.ModeNotApplicable, Next: mlxconfig.ModeNotApplicable,
			Note: "not applicable: a ConnectX has no DPU mode (only BlueField-2/-3 have one)"})
	}
	return out, nil
}

// deviceMode is one device's decided state.
type deviceMode struct {
	dev   modeTarget
	query *mlxconfig.Query
	state mlxconfig.ModeState
	tool  string // the tool that answered
}

// queryMode runs the firmware planner's query of the five mode parameters
// (its failures explained the same way as the mode step's) and decides
// the device's mode.
func queryMode(ctx context.Context, fw *fwPlanner, dev modeTarget) (*deviceMode, error) {
	q, _, err := fw.query(ctx, dev.BDF, mlxconfig.ModeParams)
	if err != nil {
		return nil, err
	}
	st, err := mlxconfig.Decide(dev.Generation, q)
	if err != nil {
		return nil, fmt.Errorf("mode: %s: %w", dev.BDF, err)
	}
	return &deviceMode{dev: dev, query: q, state: st, tool: fw.tool}, nil
}

// queriedReport is the report of a queried BlueField: what was read, and
// what was not.
func queriedReport(dm *deviceMode) ModeReport {
	st := dm.state
	r := ModeReport{BDF: dm.dev.BDF, Model: dm.dev.Model, DeviceType: dm.query.DeviceType, Generation: dm.dev.Generation,
		Applicable: st.Applicable, Current: st.Current, Next: st.Next, CurrentRead: st.CurrentRead,
		Pending: st.Pending, ReadOnly: len(st.ReadOnly) > 0, Params: []mlxconfig.Param{}}
	for _, name := range mlxconfig.ModeParams {
		if p, ok := dm.query.Param(name); ok {
			r.Params = append(r.Params, p)
		}
	}
	if !st.Applicable {
		r.Note = fmt.Sprintf("%s printed none of the INTERNAL_CPU_* rows for this BlueField", dm.tool)
	}
	if !st.CurrentRead {
		r.Unread = append(r.Unread, fmt.Sprintf("current mode: %s printed no Current column (%s)", dm.tool, noCurrentWhy(dm.query)))
	}
	for _, name := range st.NextUnread {
		r.Unread = append(r.Unread, name+" next boot: "+unreadWhy(dm.query, name, mlxconfig.ColNext))
	}
	for _, name := range st.CurrentUnread {
		r.Unread = append(r.Unread, name+" current: "+unreadWhy(dm.query, name, mlxconfig.ColCurrent))
	}
	return r
}

// unreadWhy says why a mode parameter's value was not read.
func unreadWhy(q *mlxconfig.Query, name string, col mlxconfig.Column) string {
	p, ok := q.Param(name)
	if !ok {
		return "no row in the output"
	}
	v := p.Next
	if col == mlxconfig.ColCurrent {
		v = p.Current
	}
	return p.UnreadWhy(v)
}
