package pcidev

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"strings"

	"rig/internal/pci"
	"rig/provision"
)

// Down implements Downer.
func (s *bindStep) Down(provision.DownOptions) provision.Step { return &bindDown{s: s} }

type bindDown struct{ s *bindStep }

func (d *bindDown) Name() string { return "bind" }

// Check plans giving each function the playbook names back to the driver
// it had before rig bound it (from the state file), then forgetting it.
func (d *bindDown) Check(ctx context.Context) (provision.Plan, error) {
	s := d.s
	st, err := provision.LoadState(s.state)
	if err != nil {
		return provision.Plan{}, &provision.Problem{Object: "bind", Err: err}
	}
	ls, self, err := provision.Layers(s.state)
	if err != nil {
		return provision.Plan{}, &provision.Problem{Object: "bind", Err: err}
	}
	var plan provision.Plan
	for _, dev := range s.devices {
		bdf, netdev := "", dev
		if c, ok := pci.Canonical(dev); ok {
			bdf, netdev = c, ""
		}
		rec, ok := st.BoundRecord(bdf, netdev)
		if !ok {
			plan.Notes = append(plan.Notes, fmt.Sprintf("bind %s: not bound by rig (nothing in %s); left as is", dev, s.state.String()))
			continue
		}
		c := provision.RecordCheck{State: s.state}
		d.vet(st, bdf, netdev, &c)
		if err := c.Err(); err != nil {
			return provision.Plan{}, err
		}
		fn := pciFn{bdf: rec.BDF, netdev: rec.Netdev}
		if bindHand.Plan(s.state, ls, self, rec, &plan, func(next string) provision.Change {
			return provision.Change{Object: fn.object(), Action: "left as is: playbook " + next + " bound it after this one; its record now restores " + orNone(rec.Original)}
		}) {
			plan.Add(d.forget(rec), provision.Change{Object: "rig state", Action: "forget the bind of " + fn.bdf, From: s.state.String()})
			continue
		}
		// an earlier playbook of rig's bound it to rec.Original: give it
		// back as that one left it, with its driver_override
		override := "\n"
		if rec.Original != "" && bindHand.Holder(ls, self, func(b provision.BoundDevice) bool { return b.BDF == rec.BDF && b.Driver == rec.Original }) != "" {
			override = rec.Original
		}
		if err := d.planRestore(fn, rec, override, &plan); err != nil {
			return provision.Plan{}, err
		}
	}
	return plan, nil
}

func (d *bindDown) planRestore(fn pciFn, rec provision.BoundDevice, override string, plan *provision.Plan) error {
	s := d.s
	base := "/sys/bus/pci/devices/" + fn.bdf
	cur := ""
	if link, err := s.h.Readlink(base + "/driver"); err == nil {
		cur = path.Base(link)
	}
	forget := d.forget(rec)
	if cur == rec.Original {
		plan.Add(forget, provision.Change{Object: "rig state", Action: "forget the bind of " + fn.bdf, From: s.state.String()})
		return nil
	}
	if cur != rec.Driver {
		return &provision.Problem{Object: fn.object(), Err: fmt.Errorf("now on %s, neither rig's %s nor its original %s; nothing was written", orNone(cur), rec.Driver, orNone(rec.Original)),
			FixText: "someone rebound it after rig; bind it by hand (dpdk-devbind.py) or remove its entry from " + s.state.String()}
	}
	writes := []struct{ file, data string }{{base + "/driver_override", override}, {base + "/driver/unbind", fn.bdf}}
	if rec.Original != "" {
		writes = append(writes, struct{ file, data string }{"/sys/bus/pci/drivers/" + rec.Original + "/bind", fn.bdf})
	}
	plan.Add(func(ctx context.Context) error {
		for _, w := range writes {
			if err := s.write(w.file, []byte(w.data)); err != nil {
				return &provision.Problem{Object: fn.object(), Err: fmt.Errorf("write %q to %s: %w", w.data, w.file, err),
					FixText: "see dmesg; stop the DPDK application using it first"}
			}
		}
		return forget(ctx)
	}, provision.Change{Object: fn.object(), Action: "bind (back to before rig)", From: cur, To: orNone(rec.Original)})
	return nil
}

// forget drops rec from this playbook's records.
func (d *bindDown) forget(rec provision.BoundDevice) func(context.Context) error {
	return func(context.Context) error {
		return provision.UpdateState(d.s.state, func(st *provision.RigState) {
			var keep []provision.BoundDevice
			for _, b := range st.Bound {
				if b.BDF != rec.BDF {
					keep = append(keep, b)
				}
			}
			st.Bound = keep
		})
	}
}

// bindHand: a function two playbooks bound (provision.Handover); the later
// one's record takes over the driver the host had before the earlier one
// (and the netdev it had then).
var bindHand = provision.Handover[provision.BoundDevice]{
	Of:   func(st *provision.RigState) []provision.BoundDevice { return st.Bound },
	Same: func(a, b provision.BoundDevice) bool { return a.BDF == b.BDF },
	Merge: func(later *provision.BoundDevice, mine provision.BoundDevice) {
		later.Original = mine.Original
		if mine.Netdev != "" {
			later.Netdev = mine.Netdev
		}
	},
}

// planReliance records, in this playbook's records, a function it wants on
// s.driver that another playbook of rig's bound there before it (so this
// up leaves it): with Original the driver it has now, so this playbook's
// down leaves it, and the other's down hands its record over instead of
// taking the function from this one (provision.Layers). Only rig's state
// file is written.
func (s *bindStep) planReliance(ls []provision.PlaybookRecords, self int, own provision.RigState, fn pciFn, plan *provision.Plan) {
	if _, ok := own.BoundRecord(fn.bdf, ""); ok {
		return
	}
	var netdev string
	pb := bindHand.Holder(ls, self, func(b provision.BoundDevice) bool {
		if b.BDF == fn.bdf && b.Driver == s.driver {
			netdev = b.Netdev
			return true
		}
		return false
	})
	if pb == "" {
		return
	}
	if fn.netdev != "" {
		netdev = fn.netdev
	}
	rec := provision.BoundDevice{BDF: fn.bdf, Netdev: netdev, Original: s.driver, Driver: s.driver}
	plan.Add(func(context.Context) error {
		return provision.UpdateState(s.state, func(st *provision.RigState) { st.RecordBind(rec) })
	}, provision.Change{Object: "rig state", Action: fmt.Sprintf("record that %s relies on %s (bound to %s by playbook %s)", s.state.PlaybookName(), fn.object(), s.driver, pb)})
}

// VetRecords implements RecordVetter: the records of the playbook's
// devices (the only ones down acts on).
func (d *bindDown) VetRecords(context.Context) error {
	s := d.s
	st, err := provision.LoadState(s.state)
	if err != nil {
		return &provision.Problem{Object: "bind", Err: err}
	}
	c := provision.RecordCheck{State: s.state}
	for _, dev := range s.devices {
		bdf, netdev := "", dev
		if b, ok := pci.Canonical(dev); ok {
			bdf, netdev = b, ""
		}
		d.vet(st, bdf, netdev, &c)
	}
	return c.Err()
}

// vet refuses the records of one playbook device (by address bdf, or by
// netdev) that the bind step could not have written: an address not in
// canonical form, a driver other than the playbook's, an original driver
// that is not a driver's name (it becomes a path under
// /sys/bus/pci/drivers), a netdev name no kernel gives, or, for a device
// named by a netdev that is on a PCI function now, another function's
// address.
func (d *bindDown) vet(st provision.RigState, bdf, netdev string, c *provision.RecordCheck) {
	s := d.s
	var now string // the netdev's function now ("" when it has none: bound away)
	if netdev != "" {
		if link, err := netdevDevice(s.h, netdev); err == nil {
			now = pciOf(link)
		}
	}
	for i, r := range st.Bound {
		if !((bdf != "" && r.BDF == bdf) || (netdev != "" && r.Netdev == netdev)) {
			continue
		}
		field := fmt.Sprintf("bound[%d]", i)
		if !provision.WellFormedBDF(r.BDF) {
			c.Refuse(field+".bdf", "%q is not a PCI address as rig records it (0000:03:00.0)", r.BDF)
		} else if now != "" && r.BDF != now {
			c.Refuse(field+".bdf", "%s, but the playbook's %s is on %s now", r.BDF, netdev, now)
		}
		if r.Driver != s.driver {
			c.Refuse(field+".driver", "%q: this playbook's bind section binds to %s", r.Driver, s.driver)
		}
		if r.Original != "" && !driverNameRE.MatchString(r.Original) {
			c.Refuse(field+".originalDriver", "%q is not a driver's name (lower-case letters, digits, '_' and '-', as under /sys/bus/pci/drivers)", r.Original)
		}
		if r.Netdev != "" && (strings.ContainsAny(r.Netdev, "/: ") || provision.BadText(r.Netdev, 15) != "" || r.Netdev == "." || r.Netdev == "..") {
			c.Refuse(field+".netdev", "%q is not a network interface name (at most 15 characters, no '/', ':', space or control character)", r.Netdev)
		}
	}
}

// driverNameRE is a kernel driver's name as rig records it (a directory
// of /sys/bus/pci/drivers: virtio-pci, vfio-pci, mlx5_core).
var driverNameRE = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)
