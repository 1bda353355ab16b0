package ovs

import (
	"fmt"

	"rig/smartnic"
)

// NVIDIA's OVS-DOCA (the Open vSwitch that DOCA installs on BlueField Arm
// images and DOCA hosts) adds a port named by its kernel netdev alone:
// `ovs-vsctl add-port br p0 -- set Interface p0 type=dpdk`, no
// options:dpdk-devargs (NVIDIA DPF DPUFlavor
// NVIDIA/doca-platform:…/dpuflavor-hbn-ovnk.yaml; ovn-kubernetes
// docs/features/hardware-offload/ovs-doca.md). It derives the devargs from
// the netdev's sysfs: netdev_doca_generate_devargs() in OVS-DOCA's
// lib/netdev-doca.c (the upstreaming series, elibritstein/OVS) reads
// /sys/class/net/NAME, its PCI function and phys_port_name: pN is the
// uplink, pfN the host PF, pfNvfM/pfNsfM a VF/SF representor (a cN
// controller prefix is skipped); anything else is "unrecognized
// phys_port_name" and the port fails with "NAME: could not set
// configuration (No such device)" after "NAME: Could not generate DPDK
// devargs". That only happens with other_config:doca-init=true
// (lib/ovs-doca.c ovs_doca_init, which also initialises DPDK as if
// dpdk-init were true). Upstream Open vSwitch 3.1 rejects such a port:
// "'NAME' is missing 'options:dpdk-devargs'. The old 'dpdk<port_id>'
// names are not supported" (lib/netdev-dpdk.c), recorded in
// testdata/state-upstream-byname.json.

// Resolution says how OvS finds a DPDK port's device (Interface.Resolution).
const (
	// ResolutionDevargs: options:dpdk-devargs names the device.
	ResolutionDevargs = "devargs"
	// ResolutionName: no devargs; OVS-DOCA (doca_initialized=true)
	// resolves the interface name as a kernel netdev.
	ResolutionName = "netdev-name"
	// ResolutionNone: no devargs and this OvS resolves no names (upstream
	// OvS, or OVS-DOCA with doca_initialized=false): the port fails.
	ResolutionNone = "none"
)

// resolution is Interface.Resolution for i in this OvS.
func (s *State) resolution(i Interface) string {
	switch {
	case !i.IsDPDKPort():
		return ""
	case i.Devargs() != "":
		return ResolutionDevargs
	case s.DOCA && s.DOCAInitialized:
		return ResolutionName
	}
	return ResolutionNone
}

// DOCANameUsable reports whether this OvS resolves DPDK ports by netdev
// name, and if not, why (for messages).
func (s *State) DOCANameUsable() (bool, string) {
	switch {
	case !s.DOCA:
		return false, "this Open vSwitch is upstream's, not NVIDIA's OVS-DOCA (its database has no doca_initialized column), and upstream OvS needs options:dpdk-devargs for every type=dpdk port"
	case !s.DOCAInitialized:
		return false, "this is OVS-DOCA, but doca_initialized is false: it resolves ports by netdev name only with other_config:doca-init=true (read at start)"
	}
	return true, ""
}

// DOCAName is what OVS-DOCA makes of a port named by its netdev.
type DOCAName struct {
	Function smartnic.NetdevFunction
	Port     smartnic.PhysPort
}

// String says what the name resolves to: "uplink p0 of 0000:03:00.0".
func (n DOCAName) String() string {
	f := n.Function
	switch n.Port.Kind {
	case smartnic.PortUplink:
		return fmt.Sprintf("uplink (phys_port_name %s) of %s", f.PhysPortName, f.BDF)
	case smartnic.PortHostPF:
		return fmt.Sprintf("host-PF representor (phys_port_name %s) on %s", f.PhysPortName, f.BDF)
	case smartnic.PortVFRep:
		return fmt.Sprintf("VF %d representor (phys_port_name %s) on %s", n.Port.Index, f.PhysPortName, f.BDF)
	case smartnic.PortSFRep:
		return fmt.Sprintf("SF %d representor (phys_port_name %s) on %s", n.Port.Index, f.PhysPortName, f.BDF)
	}
	return f.String()
}

// ResolveDOCAName reads what OVS-DOCA reads for a port named by its
// netdev (netdev_doca_generate_devargs): the netdev must exist, sit on an
// mlx5 PCI function and carry a phys_port_name of an uplink or a
// representor. A name it cannot resolve is a *NetdevError that says why
// and what to write instead.
func ResolveDOCAName(h Host, name string) (DOCAName, error) {
	f, err := smartnic.ReadNetdevFunction(h, name)
	if err != nil {
		return DOCAName{}, &smartnic.NetdevError{Netdev: name, Found: "nothing", Why: err.Error(),
			FixText: "OVS-DOCA resolves a port's name as a kernel netdev: name the port after a netdev `ip link` shows (p0, pf0hpf, pf0vf0, en3f0pf0sf0), or give it devargs"}
	}
	fail := func(why, fix string) (DOCAName, error) {
		return DOCAName{}, &smartnic.NetdevError{Netdev: name, Found: f.String(), Why: why, FixText: fix}
	}
	devargsFix := "give the port devargs (e.g. devargs: \"0000:03:00.0\") or netdev: NAME of an mlx5 uplink or representor"
	switch {
	case f.Device == "":
		return fail("OVS-DOCA cannot resolve it: it has no PCI function", devargsFix)
	case f.BDF == "":
		return fail("OVS-DOCA cannot resolve it: its device is not a PCI function (an SF's own netdev sits on an auxiliary device)",
			"name the SF's representor (en3f0pf0sf0) instead, or give devargs")
	case f.Driver != smartnic.MLX5Driver:
		return fail("OVS-DOCA drives NVIDIA mlx5 functions only, and this one is not bound to "+smartnic.MLX5Driver, devargsFix)
	}
	pp := smartnic.ParsePhysPortName(f.PhysPortName)
	switch pp.Kind {
	case smartnic.PortUplink, smartnic.PortHostPF, smartnic.PortVFRep, smartnic.PortSFRep:
		return DOCAName{Function: f, Port: pp}, nil
	case smartnic.PortNone:
		return fail("OVS-DOCA cannot resolve it: it has no phys_port_name (the eswitch is not in switchdev mode, or it is a VF's own netdev)",
			"put the eswitch in switchdev mode (devlink dev eswitch set pci/"+f.BDF+" mode switchdev), name a representor, or give devargs")
	}
	return fail(fmt.Sprintf("OVS-DOCA cannot resolve it: phys_port_name %q is not pN, pfN, pfNvfM or pfNsfM (\"unrecognized phys_port_name\")", f.PhysPortName), devargsFix)
}
