package smartnic

import (
	"strconv"
	"strings"
)

// Netdev roles: what a netdev is, from where it hangs in sysfs (its
// `device`), then its phys_port_name, then its name (hardware-formats.md
// §3, §4, §11.4).

// detectSide: the Arm OS of a BlueField has host-PF representors
// (phys_port_name pfN, or cCpfN on kernels that prefix the external
// host's controller) or the oob_net0 management port; a host has neither.
func detectSide(inv *Inventory) string {
	for _, n := range inv.Netdevs {
		if n.Name == "oob_net0" {
			return SideDPUArm
		}
	}
	for _, f := range inv.Functions {
		for _, n := range f.Netdevs {
			if isHostPFRepName(bareRepName(n.PhysPortName)) {
				return SideDPUArm
			}
		}
	}
	return SideHost
}

func assignRoles(inv *Inventory) {
	for i := range inv.Functions {
		f := &inv.Functions[i]
		for j := range f.Netdevs {
			f.Netdevs[j].Role = Role(f.Netdevs[j], *f, inv.Side)
		}
		for k := range f.SFs {
			sf := &f.SFs[k]
			for j := range sf.Netdevs {
				sf.Netdevs[j].Role = Role(sf.Netdevs[j], *f, inv.Side)
			}
			sf.Representor = sfRepresentor(*f, sf.SFNum)
		}
	}
	for j := range inv.Netdevs {
		inv.Netdevs[j].Role = Role(inv.Netdevs[j], Function{}, inv.Side)
	}
	for j := range inv.Bonds {
		inv.Bonds[j].Role = RoleBond
	}
}

// Role classifies a netdev of function f (§3, §4, §11.4). A netdev whose
// device is not f itself hangs off an auxiliary device under it: an SF's
// own netdev when that device is one of f's SFs, whatever phys_port_name
// it reports (an SF netdev may say p0, like the uplink). On f itself: pN
// is the uplink (host-pf on a BlueField's host side), pfN the host-PF
// representor, pfNvfM a VF representor, pfNsfM an SF representor, each
// representor form also with a cN controller prefix (c1pf0: the external
// host of a BlueField, on newer kernels); a VF's own netdev; tmfifo_net0;
// oob_net0.
func Role(n Netdev, f Function, side string) string {
	switch {
	case n.Name == "tmfifo_net0":
		return RoleTmfifo
	case n.Name == "oob_net0":
		return RoleOOB
	case f.Kind == FunctionVF:
		return RoleVF
	case n.Device != "" && f.BDF != "" && n.Device != f.BDF:
		if _, ok := f.SF(n.Device); ok {
			return RoleSF
		}
		return RoleOther
	}
	ppn := bareRepName(n.PhysPortName)
	switch {
	case isNumbered(ppn, "p"):
		if f.Family == "BlueField" && side == SideHost {
			return RoleHostPF
		}
		return RoleUplink
	case isHostPFRepName(ppn):
		return RoleHostPFRep
	case hasRepSuffix(ppn, "vf"):
		return RoleVFRep
	case hasRepSuffix(ppn, "sf"):
		return RoleSFRep
	}
	return RoleOther
}

// bareRepName drops a representor's controller prefix: "c1pf0" -> "pf0",
// "c1pf0vf3" -> "pf0vf3" (net/devlink/port.c prints "c%u" before "pf"
// for an external controller); anything else comes back unchanged.
func bareRepName(ppn string) string {
	if strings.HasPrefix(ppn, "c") {
		if i := strings.Index(ppn, "pf"); i > 1 && allDigits(ppn[1:i]) {
			return ppn[i:]
		}
	}
	return ppn
}

// sfRepresentor names the representor of f's SF number sfnum: the netdev
// of f whose phys_port_name is pfNsf<sfnum> (with or without controller);
// "" when the eSwitch shows none.
func sfRepresentor(f Function, sfnum int) string {
	for _, n := range f.Netdevs {
		ppn := bareRepName(n.PhysPortName)
		if hasRepSuffix(ppn, "sf") && ppn[strings.LastIndex(ppn, "sf")+2:] == strconv.Itoa(sfnum) {
			return n.Name
		}
	}
	return ""
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// isNumbered: prefix followed by digits only ("p0").
func isNumbered(s, prefix string) bool {
	return strings.HasPrefix(s, prefix) && allDigits(s[len(prefix):])
}

func isHostPFRepName(ppn string) bool { return isNumbered(ppn, "pf") }

// hasRepSuffix: "pf0vf3" / "pf0sf0".
func hasRepSuffix(ppn, kind string) bool {
	if !strings.HasPrefix(ppn, "pf") {
		return false
	}
	rest := ppn[2:]
	i := strings.Index(rest, kind)
	return i > 0 && allDigits(rest[:i]) && allDigits(rest[i+len(kind):])
}
