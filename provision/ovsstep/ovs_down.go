package ovsstep

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"rig/ovs"
	"rig/provision"
)

// target names the OvS instance in rig's state file.
func (s *ovsStep) target() string { return s.c.Target.DB }

// record updates this instance's part of rig's state file (before a write).
func (s *ovsStep) record(change func(r *provision.OVSRecord)) error {
	err := provision.UpdateState(s.state, func(st *provision.RigState) {
		for i := range st.OVS {
			if st.OVS[i].Target == s.target() {
				change(&st.OVS[i])
				return
			}
		}
		r := provision.OVSRecord{Target: s.target()}
		change(&r)
		st.OVS = append(st.OVS, r)
	})
	if err != nil {
		return s.recordFailed(err)
	}
	return nil
}

// recordConfig keeps each key's value from before rig's first change.
func recordConfig(r *provision.OVSRecord, before map[string]*string) {
	if r.Config == nil {
		r.Config = map[string]*string{}
	}
	for k, v := range before {
		if _, ok := r.Config[k]; !ok {
			r.Config[k] = v
		}
	}
}

// recordPort keeps a port rig added, unless rig made its bridge too
// (deleting the bridge deletes it).
func recordPort(r *provision.OVSRecord, bridge, name string) {
	for _, b := range r.Bridges {
		if b == bridge {
			return
		}
	}
	for _, p := range r.Ports {
		if p.Name == name {
			return
		}
	}
	r.Ports = append(r.Ports, provision.OVSPortRecord{Bridge: bridge, Name: name})
}

func appendNew(list []string, x string) []string {
	for _, y := range list {
		if y == x {
			return list
		}
	}
	return append(list, x)
}

// Down implements Downer.
func (s *ovsStep) Down(provision.DownOptions) provision.Step { return &ovsDown{s: s} }

type ovsDown struct{ s *ovsStep }

func (d *ovsDown) Name() string { return "ovs" }

// Check plans, from the record: delete the ports rig added, then the
// bridges rig made, put other_config back (keys rig added removed, changed
// ones set to their old values) and restart ovs-vswitchd when a key went
// back (DPDK reads them only at start), then forget the record.
func (d *ovsDown) Check(ctx context.Context) (provision.Plan, error) {
	s := d.s
	rs, err := provision.LoadState(s.state)
	if err != nil {
		return provision.Plan{}, &provision.Problem{Object: "ovs", Err: err}
	}
	var rec *provision.OVSRecord
	for i := range rs.OVS {
		if rs.OVS[i].Target == s.target() {
			rec = &rs.OVS[i]
		}
	}
	var plan provision.Plan
	if rec == nil {
		plan.Notes = append(plan.Notes, "ovs: no rig record for this instance in "+s.state.String()+" (rig changed nothing here, or down restored it)")
		return plan, nil
	}
	if err := d.vet(rs); err != nil {
		return provision.Plan{}, err
	}
	st, err := s.c.ReadState(ctx)
	if err != nil {
		return provision.Plan{}, s.unreachable(err)
	}
	l, err := s.layers()
	if err != nil {
		return provision.Plan{}, err
	}
	handOp := len(plan.Ops) // the op that hands values to later playbooks writes only rig's state
	own := d.hand(l, *rec, &plan)
	rec = &own
	if len(plan.Ops) == handOp {
		handOp = -1
	}
	for _, p := range rec.Ports {
		p := p
		if br, ok := st.PortBridge(p.Name); ok {
			plan.Add(func(ctx context.Context) error { return s.c.DeletePort(ctx, br, p.Name) },
				provision.Change{Object: "ovs port " + p.Name, Action: "delete port from " + br + " (rig added it)"})
		}
	}
	for _, b := range rec.Bridges {
		b := b
		if _, ok := st.Bridge(b); ok {
			plan.Add(func(ctx context.Context) error { return s.c.DeleteBridge(ctx, b) },
				provision.Change{Object: "ovs bridge " + b, Action: "delete bridge (rig added it)"})
		}
	}
	d.planConfig(st.OtherConfig, rec.Config, &plan)
	target := s.target()
	plan.Add(func(context.Context) error {
		return provision.UpdateState(s.state, func(rs *provision.RigState) {
			var keep []provision.OVSRecord
			for _, r := range rs.OVS {
				if r.Target != target {
					keep = append(keep, r)
				}
			}
			rs.OVS = keep
		})
	}, provision.Change{Object: "rig state", Action: "forget the ovs record", From: s.state.String()})
	for i := range plan.Ops {
		if s.fixture != "" && plan.Ops[i].Changes[0].Object != "rig state" && i != handOp {
			plan.Ops[i].Refused = s.refuseFixture(plan.Ops[i].Changes[0])
		}
	}
	return plan, nil
}

func (d *ovsDown) planConfig(cur map[string]string, before map[string]*string, plan *provision.Plan) {
	s := d.s
	keys := make([]string, 0, len(before))
	for k := range before {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	set := map[string]string{}
	var remove []string
	var changes []provision.Change
	for _, k := range keys {
		now, has := cur[k]
		switch old := before[k]; {
		case old == nil && has:
			remove = append(remove, k)
			changes = append(changes, provision.Change{Object: "ovs other_config", Action: "remove " + k + " (rig set it)", From: now})
		case old != nil && (!has || now != *old):
			set[k] = *old
			changes = append(changes, provision.Change{Object: "ovs other_config", Action: "set " + k + " (back to before rig)", From: now, To: *old})
		}
	}
	if len(changes) == 0 {
		return
	}
	plan.Add(func(ctx context.Context) error {
		if err := s.c.RemoveOtherConfig(ctx, remove...); err != nil {
			return err
		}
		return s.c.SetOtherConfig(ctx, set)
	}, changes...)
	how := "systemctl restart openvswitch-switch"
	if s.c.Target.Private {
		how = "private instance in " + s.c.Target.RunDir
	}
	plan.Add(s.c.RestartVswitchd, provision.Change{Object: "ovs-vswitchd", Action: "restart (" + how + ")", To: "DPDK settings back to before rig (read only at start)"})
	plan.Restarts = append(plan.Restarts, "restart of ovs-vswitchd")
}

// VetRecords implements RecordVetter.
func (d *ovsDown) VetRecords(context.Context) error {
	rs, err := provision.LoadState(d.s.state)
	if err != nil {
		return &provision.Problem{Object: "ovs", Err: err}
	}
	return d.vet(rs)
}

// vet refuses the records of this OvS instance that the ovs step could not
// have written for this playbook: a bridge or a port it does not name (or
// a name no bridge or port can have), an other_config key it does not
// set, a value before rig with a control character or over
// MaxRecordedValue.
func (d *ovsDown) vet(rs provision.RigState) error {
	s := d.s
	c := provision.RecordCheck{State: s.state}
	var bridges []string
	ports := map[string]string{} // port -> its bridge in the playbook
	for _, b := range s.spec.Bridges {
		bridges = append(bridges, b.Name)
		for _, p := range b.Ports {
			ports[p.Name] = b.Name
		}
	}
	keys := s.spec.Config.OtherConfig()
	for i, r := range rs.OVS {
		if r.Target != s.target() {
			continue
		}
		field := fmt.Sprintf("ovs[%d]", i)
		for j, b := range append(append([]string(nil), r.Bridges...), r.Relied...) {
			f := fmt.Sprintf("%s.bridges[%d]", field, j)
			if j >= len(r.Bridges) {
				f = fmt.Sprintf("%s.relied[%d]", field, j-len(r.Bridges))
			}
			if err := ovs.CheckBridgeName(b); err != nil {
				c.Refuse(f, "%v", err)
			} else if !slices.Contains(bridges, b) {
				c.Refuse(f, "%q is not a bridge this playbook's ovs section makes (%s)", b, provision.OrNoneList(bridges))
			}
		}
		for j, p := range r.Ports {
			f := fmt.Sprintf("%s.ports[%d]", field, j)
			switch {
			case ovs.CheckBridgeName(p.Name) != nil:
				c.Refuse(f+".name", "%q is not a port name (empty, a leading '-', '/', whitespace or a control character)", p.Name)
			case ports[p.Name] == "":
				c.Refuse(f+".name", "%q is not a port this playbook's ovs section adds", p.Name)
			case ports[p.Name] != p.Bridge:
				c.Refuse(f+".bridge", "%q: the playbook adds port %s to %s", p.Bridge, p.Name, ports[p.Name])
			}
		}
		for _, k := range slices.Sorted(maps.Keys(r.Config)) {
			f := fmt.Sprintf("%s.config[%q]", field, k)
			if _, ok := keys[k]; !ok {
				c.Refuse(f, "not an other_config key this playbook's ovs section sets (%s)", strings.Join(slices.Sorted(maps.Keys(keys)), ", "))
			} else if v := r.Config[k]; v != nil {
				if why := provision.BadText(*v, provision.MaxRecordedValue); why != "" {
					c.Refuse(f, "the value before rig: %s", why)
				}
			}
		}
	}
	return c.Err()
}
