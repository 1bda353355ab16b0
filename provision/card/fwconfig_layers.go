package card

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"rig/provision"
)

// Two playbooks that set one firmware parameter of one card compose
// their undos as the other steps' records do (provision.Layers): each
// playbook records the Next Boot value it found before its first set, so
// the later one holds the value the earlier one left; rig down --firmware
// -p X restores X's value only where no later playbook recorded the same
// parameter, and otherwise hands its value to that playbook's record.

// laterHolder is the first playbook after position self in ls that
// recorded parameter name of card bdf ("" when none).
func laterHolder(ls []provision.PlaybookRecords, self int, bdf, name string) string {
	n, _ := provision.NextLayer(ls, self, func(st provision.RigState) bool {
		_, ok := st.Firmware[bdf][name]
		return ok
	})
	return n
}

// handLater takes out of rec (d's records, by card and parameter) those a
// later playbook also recorded, and plans, in one op that writes only
// rig's state file, handing their values before this playbook to that
// playbook's record and forgetting them here. What is left of rec is what
// this down restores.
func (d *fwRestore) handLater(rec map[string]map[string]string, plan *provision.Plan) error {
	ls, self, err := provision.Layers(d.fw.state)
	if err != nil {
		return &provision.Problem{Object: d.name, Err: err}
	}
	hand := map[string]map[string]map[string]string{} // playbook -> card -> parameter -> value
	var changes []provision.Change
	for _, b := range slices.Sorted(maps.Keys(rec)) {
		for _, n := range slices.Sorted(maps.Keys(rec[b])) {
			next := laterHolder(ls, self, b, n)
			if next == "" {
				continue
			}
			if hand[next] == nil {
				hand[next] = map[string]map[string]string{}
			}
			if hand[next][b] == nil {
				hand[next][b] = map[string]string{}
			}
			v := rec[b][n]
			hand[next][b][n] = v
			delete(rec[b], n)
			changes = append(changes, provision.Change{Object: d.fw.preset.changeObj(b), Action: "left " + n + " as is: playbook " + next + " set it after this one; its record now restores the value before this playbook",
				To: restoreDevice(b, map[string]string{n: v}).Want[0].Show})
		}
		if len(rec[b]) == 0 {
			delete(rec, b)
		}
	}
	if len(changes) == 0 {
		return nil
	}
	sf := d.fw.state
	plan.Add(func(context.Context) error {
		for _, pb := range slices.Sorted(maps.Keys(hand)) {
			if err := provision.UpdateState(sf.For(pb), func(st *provision.RigState) {
				for b, params := range hand[pb] {
					maps.Copy(st.Firmware[b], params)
				}
			}); err != nil {
				return err
			}
		}
		return provision.UpdateState(sf, func(st *provision.RigState) {
			for _, byCard := range hand {
				for b, params := range byCard {
					for n := range params {
						delete(st.Firmware[b], n)
					}
					if len(st.Firmware[b]) == 0 {
						delete(st.Firmware, b)
					}
				}
			}
			if len(st.Firmware) == 0 {
				st.Firmware = nil
			}
		})
	}, changes...)
	return nil
}

// planReliance records, in this playbook's records, the wanted parameters
// of r's card that already hold the wanted Next Boot value and that
// another playbook of rig's set before it (so this up writes none of
// them): their value now as this playbook's value before, so its down
// leaves them and the other's down hands its value over instead of
// taking them from this one. Only rig's state file is written.
func (p *fwPlanner) planReliance(r *fwRead, plan *provision.Plan) error {
	if !p.preset.record {
		return nil
	}
	ls, self, err := provision.Layers(p.state)
	if err != nil {
		return &provision.Problem{Object: p.preset.section, Err: err}
	}
	bdf := r.Dev.BDF
	before := map[string]string{}
	var changes []provision.Change
	for _, w := range r.Dev.Want {
		if slices.ContainsFunc(r.Write, func(x fwWant) bool { return x.Name == w.Name }) {
			continue
		}
		if self >= 0 {
			if _, ok := ls[self].Records.Firmware[bdf][w.Name]; ok {
				continue
			}
		}
		pb := ""
		for i, l := range ls {
			if _, ok := l.Records.Firmware[bdf][w.Name]; ok && i != self {
				pb = l.Playbook
				break
			}
		}
		pr, ok := r.Query.Param(w.Name)
		if pb == "" || !ok {
			continue
		}
		before[w.Name] = setForm(pr.Next)
		changes = append(changes, provision.Change{Object: "rig state", Action: fmt.Sprintf("record that %s relies on %s %s (next boot %s, set by playbook %s)", p.state.PlaybookName(), p.preset.changeObj(bdf), w.Name, pr.Next.Text, pb)})
	}
	if len(changes) == 0 {
		return nil
	}
	plan.Add(func(context.Context) error {
		if err := provision.UpdateState(p.state, func(st *provision.RigState) { recordFirmware(st, bdf, before) }); err != nil {
			return &provision.Problem{Object: p.preset.changeObj(bdf), Err: fmt.Errorf("%w; nothing was written", err)}
		}
		return nil
	}, changes...)
	return nil
}
