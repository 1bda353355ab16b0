package playbooks

import (
	"fmt"

	"rig/internal/pci"
)

// SRIOVSpec is the `sriov` section: VFs per PF and the eSwitch mode (what
// sriov-network-operator sets on a ConnectX/BlueField host).
//
//	sriov:
//	  pfs:
//	    - pf: 0000:3b:00.0        # PCI address or the PF's netdev (enp59s0f0np0)
//	      numvfs: 4               # sriov_numvfs; changed through 0, as the kernel requires
//	      eswitch: switchdev      # optional: switchdev | legacy (devlink, over netlink)
type SRIOVSpec struct {
	PFs []SRIOVPF `yaml:"pfs"`
}

// SRIOVPF is one physical function's SR-IOV settings.
type SRIOVPF struct {
	PF      string `yaml:"pf"`
	NumVFs  *int   `yaml:"numvfs"`
	Eswitch string `yaml:"eswitch"`
}

// Validate checks the section before anything is written.
func (s *SRIOVSpec) Validate() []FieldError {
	var errs []FieldError
	if len(s.PFs) == 0 {
		return []FieldError{{"pfs", "empty: list the PFs (PCI address or netdev) and their numvfs / eswitch"}}
	}
	seen := map[string]int{}
	for i, p := range s.PFs {
		f := fmt.Sprintf("pfs[%d]", i)
		key := p.PF
		if c, ok := pci.Canonical(p.PF); ok {
			key = c
		} else if msg := badIfName(p.PF); msg != "" {
			errs = append(errs, FieldError{f + ".pf", fmt.Sprintf("%q is neither a PCI address (0000:3b:00.0) nor a netdev name: %s", p.PF, msg)})
		}
		if j, dup := seen[key]; dup {
			errs = append(errs, FieldError{f + ".pf", fmt.Sprintf("same PF as pfs[%d]", j)})
		}
		seen[key] = i
		if p.NumVFs != nil && (*p.NumVFs < 0 || *p.NumVFs > 4096) {
			errs = append(errs, FieldError{f + ".numvfs", fmt.Sprintf("want 0..4096 (and at most the PF's sriov_totalvfs), got %d", *p.NumVFs)})
		}
		switch p.Eswitch {
		case "", "switchdev", "legacy":
		default:
			errs = append(errs, FieldError{f + ".eswitch", fmt.Sprintf("%q: want switchdev or legacy", p.Eswitch)})
		}
		if p.NumVFs == nil && p.Eswitch == "" {
			errs = append(errs, FieldError{f, "nothing to set: give numvfs, eswitch or both"})
		}
	}
	return errs
}
