package pcidev

import (
	"fmt"
	"path"
	"strings"
	"time"

	"rig/provision"
)

// sriovPoll is how often verify looks again while it waits.
const sriovPoll = 100 * time.Millisecond

// verify is what a converged PF must show: its VF functions (virtfnN
// links), a netdev for each VF a network driver drives, and, in switchdev
// mode, one representor netdev per VF on the PF (phys_port_name pfMvfN,
// optionally controller-prefixed). The driver registers the netdevs and
// udev renames them after the sriov_numvfs write returns, so it waits for
// them, up to settle, and then names what is missing.
func (s *sriovStep) verify(st pfState, plan *provision.Plan) error {
	var waited time.Duration
	for {
		missing, reps := s.sriovMissing(st)
		if len(missing) == 0 {
			plan.Notes = append(plan.Notes, s.sriovNote(st, reps))
			return nil
		}
		if waited >= s.settle {
			return s.missingProblem(st, missing, reps, waited)
		}
		s.sleep(sriovPoll)
		waited += sriovPoll
	}
}

func (s *sriovStep) sriovNote(st pfState, reps []string) string {
	note := fmt.Sprintf("%s: %d of %d VFs", st.object(), st.numvf, st.total)
	if st.mode != "" {
		note += ", eswitch " + st.mode
		if st.via != "" {
			note += " (" + st.via + ")"
		}
	}
	if st.mode == "switchdev" && st.numvf > 0 {
		note += ", representors " + strings.Join(reps, " ")
	}
	return note
}

// sriovMissing lists what the PF's VFs lack now, and its representors.
func (s *sriovStep) sriovMissing(st pfState) (missing, reps []string) {
	base := "/sys/bus/pci/devices/" + st.bdf
	for i := 0; i < st.numvf; i++ {
		target, err := s.h.Readlink(fmt.Sprintf("%s/virtfn%d", base, i))
		if err != nil {
			missing = append(missing, fmt.Sprintf("virtfn%d (the VF function)", i))
			continue
		}
		vf := path.Base(target)
		if !netDriver(s.driverOf(vf)) {
			continue
		}
		if ents, err := s.h.ReadDir("/sys/bus/pci/devices/" + vf + "/net"); err != nil || len(ents) == 0 {
			missing = append(missing, fmt.Sprintf("the netdev of VF %s (virtfn%d)", vf, i))
		}
	}
	if st.mode == "switchdev" && st.numvf > 0 {
		reps = s.vfReps(st.bdf)
		if len(reps) < st.numvf {
			missing = append(missing, fmt.Sprintf("%d of %d VF representors (switchdev with %d VFs but %d VF representors: %s)",
				st.numvf-len(reps), st.numvf, st.numvf, len(reps), strings.Join(reps, " ")))
		}
	}
	return missing, reps
}

// driverOf is a PCI function's driver ("" = none bound).
func (s *sriovStep) driverOf(bdf string) string {
	t, err := s.h.Readlink("/sys/bus/pci/devices/" + bdf + "/driver")
	if err != nil {
		return ""
	}
	return path.Base(t)
}

// netDriver: a driver that makes a netdev (not none, not a user-space
// driver's stub).
func netDriver(d string) bool {
	switch d {
	case "", "vfio-pci", "uio_pci_generic", "igb_uio", "pci-stub":
		return false
	}
	return true
}

func (s *sriovStep) missingProblem(st pfState, missing, reps []string, waited time.Duration) error {
	p := &provision.Problem{Object: st.object(), Err: fmt.Errorf("sriov_numvfs is %d but after %s these are missing: %s", st.numvf, waited, strings.Join(missing, "; ")),
		CauseText: "the PF driver failed to make them (dmesg says why), or udev is still renaming them",
		FixText:   "see dmesg and `ip link`; set numvfs 0 and back (`rig up` again does it after `rig down`)"}
	if st.mode == "switchdev" && len(reps) < st.numvf {
		p.CauseText = "the representors are made when the VFs are created in switchdev mode; VFs made before the mode change have none"
		p.FixText = "set numvfs 0 and back (rig does this when it changes the mode itself)"
	}
	return p
}

// vfReps lists the PF's VF representor netdevs.
func (s *sriovStep) vfReps(bdf string) []string {
	ents, _ := s.h.ReadDir("/sys/bus/pci/devices/" + bdf + "/net")
	var out []string
	for _, e := range ents {
		ppn, _ := s.h.ReadString("/sys/bus/pci/devices/" + bdf + "/net/" + e.Name() + "/phys_port_name")
		if vfRepPortName.MatchString(ppn) {
			out = append(out, e.Name())
		}
	}
	return out
}
