package ovsstep

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"rig/provision"
)

// ovsLayers composes this playbook's OvS undo with the other playbooks'
// on the same instance (provision.Layers): a bridge, port or other_config
// key a later playbook also recorded is left as it is, and that
// playbook's record takes over this one's value before.
type ovsLayers struct {
	ls     []provision.PlaybookRecords
	self   int
	target string
}

func (s *ovsStep) layers() (ovsLayers, error) {
	ls, self, err := provision.Layers(s.state)
	if err != nil {
		return ovsLayers{}, &provision.Problem{Object: "ovs", Err: err}
	}
	return ovsLayers{ls: ls, self: self, target: s.target()}, nil
}

// next is the first later playbook whose record of this instance has
// holds true ("" when none).
func (l ovsLayers) next(holds func(r *provision.OVSRecord) bool) string {
	n, _ := provision.NextLayer(l.ls, l.self, func(st provision.RigState) bool {
		for i := range st.OVS {
			if st.OVS[i].Target == l.target && holds(&st.OVS[i]) {
				return true
			}
		}
		return false
	})
	return n
}

// hand splits rec into what this down undoes (the returned record) and
// what later playbooks keep: for each of those a change saying so, and
// one op that gives each such playbook this one's values before.
func (d *ovsDown) hand(l ovsLayers, rec provision.OVSRecord, plan *provision.Plan) provision.OVSRecord {
	own := provision.OVSRecord{Target: rec.Target, Config: map[string]*string{}}
	handed := map[string]map[string]*string{} // playbook -> key -> value before this one
	var changes []provision.Change
	for _, p := range rec.Ports {
		if n := l.next(func(r *provision.OVSRecord) bool {
			return slices.ContainsFunc(r.Ports, func(q provision.OVSPortRecord) bool { return q.Name == p.Name }) || slices.Contains(r.Bridges, p.Bridge)
		}); n != "" {
			changes = append(changes, provision.Change{Object: "ovs port " + p.Name, Action: "left in " + p.Bridge + ": playbook " + n + " added it too; its record now removes it"})
			continue
		}
		own.Ports = append(own.Ports, p)
	}
	bridges := map[string][]string{} // playbook -> bridges it now owns
	for _, b := range rec.Bridges {
		if n := l.next(func(r *provision.OVSRecord) bool {
			return slices.Contains(r.Bridges, b) || slices.Contains(r.Relied, b)
		}); n != "" {
			bridges[n] = append(bridges[n], b)
			changes = append(changes, provision.Change{Object: "ovs bridge " + b, Action: "left: playbook " + n + " uses it too; its record now deletes it"})
			continue
		}
		own.Bridges = append(own.Bridges, b)
	}
	for _, k := range slices.Sorted(maps.Keys(rec.Config)) {
		n := l.next(func(r *provision.OVSRecord) bool { _, ok := r.Config[k]; return ok })
		if n == "" {
			own.Config[k] = rec.Config[k]
			continue
		}
		if handed[n] == nil {
			handed[n] = map[string]*string{}
		}
		handed[n][k] = rec.Config[k]
		changes = append(changes, provision.Change{Object: "ovs other_config", Action: k + " left as is: playbook " + n + " set it after this one; its record now restores the value before this playbook"})
	}
	if len(changes) == 0 {
		return own
	}
	sf, target := d.s.state, l.target
	plan.Add(func(context.Context) error {
		for _, pb := range slices.Sorted(maps.Keys(handed)) {
			err := provision.UpdateState(sf.For(pb), func(st *provision.RigState) {
				for i := range st.OVS {
					if st.OVS[i].Target == target {
						maps.Copy(st.OVS[i].Config, handed[pb])
					}
				}
			})
			if err != nil {
				return err
			}
		}
		for _, pb := range slices.Sorted(maps.Keys(bridges)) {
			err := provision.UpdateState(sf.For(pb), func(st *provision.RigState) {
				for i := range st.OVS {
					if st.OVS[i].Target != target {
						continue
					}
					r := &st.OVS[i]
					for _, b := range bridges[pb] {
						r.Relied = slices.DeleteFunc(r.Relied, func(x string) bool { return x == b })
						r.Bridges = appendNew(r.Bridges, b)
					}
				}
			})
			if err != nil {
				return err
			}
		}
		return nil
	}, changes...)
	return own
}

// reliedKeys are the other_config keys this playbook wants that already
// hold its value because another playbook of rig's set them (its record
// has the key) and that this playbook's record lacks: they go into this
// playbook's record with the value now as its "before", so the other
// playbook's down leaves them while this one is up (ovsLayers). changing
// lists the keys this up writes anyway (recorded with them).
func (s *ovsStep) reliedKeys(cur map[string]string, keys []string, changing map[string]string) (map[string]*string, []provision.Change, error) {
	ls, self, err := provision.Layers(s.state)
	if err != nil {
		return nil, nil, &provision.Problem{Object: "ovs", Err: err}
	}
	target := s.target()
	has := func(st provision.RigState, k string) bool {
		for _, r := range st.OVS {
			if _, ok := r.Config[k]; ok && r.Target == target {
				return true
			}
		}
		return false
	}
	out := map[string]*string{}
	var changes []provision.Change
	for _, k := range keys {
		v, ok := cur[k]
		if _, writes := changing[k]; writes || !ok || (self >= 0 && has(ls[self].Records, k)) {
			continue
		}
		for i, l := range ls {
			if i != self && has(l.Records, k) {
				v := v
				out[k] = &v
				changes = append(changes, provision.Change{Object: "rig state", Action: fmt.Sprintf("record that %s relies on other_config %s=%s (set by playbook %s)", s.state.PlaybookName(), k, v, l.Playbook)})
				break
			}
		}
	}
	return out, changes, nil
}

// reliedBridge says which other playbook of rig's made bridge name (its
// record has it) when this playbook's record lacks it ("" otherwise): this
// up records it as relied on, so that playbook's down leaves it.
func (s *ovsStep) reliedBridge(name string) (string, error) {
	ls, self, err := provision.Layers(s.state)
	if err != nil {
		return "", &provision.Problem{Object: "ovs", Err: err}
	}
	target := s.target()
	has := func(st provision.RigState) bool {
		for _, r := range st.OVS {
			if r.Target == target && (slices.Contains(r.Bridges, name) || slices.Contains(r.Relied, name)) {
				return true
			}
		}
		return false
	}
	if self >= 0 && has(ls[self].Records) {
		return "", nil
	}
	for i, l := range ls {
		if i != self && has(l.Records) {
			return l.Playbook, nil
		}
	}
	return "", nil
}
