package provision

import (
	"context"

	"rig/playbooks"
)

// recordSRIOV keeps a PF's settings from before rig's first change.
func (st *rigState) recordSRIOV(r sriovRecord) {
	for _, old := range st.SRIOV {
		if old.BDF == r.BDF {
			return
		}
	}
	st.SRIOV = append(st.SRIOV, r)
}

// Down implements Downer.
func (s *sriovStep) Down(DownOptions) Step { return &sriovDown{s: s} }

type sriovDown struct{ s *sriovStep }

func (d *sriovDown) Name() string { return "sriov" }

// Check plans each PF back to its VF count and eSwitch mode from before
// rig (the same ordering rules as up), then forgets the record.
func (d *sriovDown) Check(ctx context.Context) (Plan, error) {
	s := d.s
	rs, err := loadState(s.state)
	if err != nil {
		return Plan{}, &Problem{Object: "sriov", Err: err}
	}
	var plan Plan
	for _, pf := range s.pfs {
		cur, err := s.read(playbooks.SRIOVPF{PF: pf.PF})
		if err != nil {
			return Plan{}, err
		}
		var rec *sriovRecord
		for i := range rs.SRIOV {
			if rs.SRIOV[i].BDF == cur.bdf {
				rec = &rs.SRIOV[i]
			}
		}
		if rec == nil {
			plan.Notes = append(plan.Notes, cur.object()+": no rig record in "+s.state.String()+"; left as is (rig changed nothing here, or down restored it)")
			continue
		}
		if rec.Eswitch != "" {
			if cur.mode, cur.via, err = s.eswitchMode(cur); err != nil {
				return Plan{}, err
			}
		}
		n := rec.NumVFs
		want := playbooks.SRIOVPF{PF: pf.PF, NumVFs: &n, Eswitch: rec.Eswitch}
		if err := s.planPFOps(cur, want, &plan); err != nil {
			return Plan{}, err
		}
		bdf := cur.bdf
		plan.add(func(context.Context) error {
			return updateState(s.state, func(rs *rigState) {
				var keep []sriovRecord
				for _, r := range rs.SRIOV {
					if r.BDF != bdf {
						keep = append(keep, r)
					}
				}
				rs.SRIOV = keep
			})
		}, Change{Object: "rig state", Action: "forget the sriov record of " + bdf, From: s.state.String()})
	}
	return plan, nil
}
