package pcidev

import (
	"context"
	"fmt"

	"rig/playbooks"
	"rig/provision"
)

// recordSRIOV keeps a PF's settings from before rig's first change.
func recordSRIOV(st *provision.RigState, r provision.SRIOVRecord) {
	for _, old := range st.SRIOV {
		if old.BDF == r.BDF {
			return
		}
	}
	st.SRIOV = append(st.SRIOV, r)
}

// Down implements Downer.
func (s *sriovStep) Down(provision.DownOptions) provision.Step { return &sriovDown{s: s} }

type sriovDown struct{ s *sriovStep }

func (d *sriovDown) Name() string { return "sriov" }

// Check plans each PF back to its VF count and eSwitch mode from before
// rig (the same ordering rules as up), then forgets the record.
func (d *sriovDown) Check(ctx context.Context) (provision.Plan, error) {
	s := d.s
	rs, err := provision.LoadState(s.state)
	if err != nil {
		return provision.Plan{}, &provision.Problem{Object: "sriov", Err: err}
	}
	ls, self, err := provision.Layers(s.state)
	if err != nil {
		return provision.Plan{}, &provision.Problem{Object: "sriov", Err: err}
	}
	var plan provision.Plan
	for _, pf := range s.pfs {
		cur, err := s.read(playbooks.SRIOVPF{PF: pf.PF})
		if err != nil {
			return provision.Plan{}, err
		}
		var rec *provision.SRIOVRecord
		for i := range rs.SRIOV {
			if rs.SRIOV[i].BDF == cur.bdf {
				rec = &rs.SRIOV[i]
			}
		}
		c := provision.RecordCheck{State: s.state}
		d.vet(rs, cur, &c)
		if err := c.Err(); err != nil {
			return provision.Plan{}, err
		}
		if rec == nil {
			plan.Notes = append(plan.Notes, cur.object()+": no rig record in "+s.state.String()+"; left as is (rig changed nothing here, or down restored it)")
			continue
		}
		bdf := cur.bdf
		forget := func(context.Context) error {
			return provision.UpdateState(s.state, func(rs *provision.RigState) {
				var keep []provision.SRIOVRecord
				for _, r := range rs.SRIOV {
					if r.BDF != bdf {
						keep = append(keep, r)
					}
				}
				rs.SRIOV = keep
			})
		}
		forgetChange := provision.Change{Object: "rig state", Action: "forget the sriov record of " + bdf, From: s.state.String()}
		if sriovHand.Plan(s.state, ls, self, *rec, &plan, func(next string) provision.Change {
			return provision.Change{Object: cur.object(), Action: fmt.Sprintf("left at %d VFs: playbook %s changed it after this one; its record now restores the settings before this playbook", cur.numvf, next),
				To: fmt.Sprint(rec.NumVFs)}
		}) {
			plan.Add(forget, forgetChange)
			continue
		}
		if rec.Eswitch != "" {
			if cur.mode, cur.via, err = s.eswitchMode(cur); err != nil {
				return provision.Plan{}, err
			}
		}
		n := rec.NumVFs
		want := playbooks.SRIOVPF{PF: pf.PF, NumVFs: &n, Eswitch: rec.Eswitch}
		if err := s.planPFOps(cur, want, &plan); err != nil {
			return provision.Plan{}, err
		}
		plan.Add(forget, forgetChange)
	}
	return plan, nil
}

// VetRecords implements RecordVetter: the records of the playbook's PFs
// (the only ones down acts on).
func (d *sriovDown) VetRecords(context.Context) error {
	s := d.s
	rs, err := provision.LoadState(s.state)
	if err != nil {
		return &provision.Problem{Object: "sriov", Err: err}
	}
	c := provision.RecordCheck{State: s.state}
	for _, pf := range s.pfs {
		cur, err := s.read(playbooks.SRIOVPF{PF: pf.PF})
		if err != nil {
			continue // Check says so in its turn
		}
		d.vet(rs, cur, &c)
	}
	return c.Err()
}

// vet refuses the records of PF cur (one the playbook names) that the
// sriov step could not have written: an address not in canonical form, a
// VF count outside 0..sriov_totalvfs, an eSwitch mode other than legacy or
// switchdev.
func (d *sriovDown) vet(rs provision.RigState, cur pfState, c *provision.RecordCheck) {
	for i, r := range rs.SRIOV {
		if r.BDF != cur.bdf {
			continue
		}
		field := fmt.Sprintf("sriov[%d]", i)
		if !provision.WellFormedBDF(r.BDF) {
			c.Refuse(field+".bdf", "%q is not a PCI address as rig records it (0000:03:00.0)", r.BDF)
		}
		if r.NumVFs < 0 || r.NumVFs > cur.total {
			c.Refuse(field+".numvfs", "%d is outside 0..%d (%s's sriov_totalvfs)", r.NumVFs, cur.total, cur.bdf)
		}
		if r.Eswitch != "" && r.Eswitch != "legacy" && r.Eswitch != "switchdev" {
			c.Refuse(field+".eswitch", "%q is not an eSwitch mode (legacy or switchdev)", r.Eswitch)
		}
	}
}
