package lab

import (
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"rig/internal/host"
	"rig/lab/card"
)

// The machines of a lab (rig lab exec --on). A DPU kind's lab with far
// ends on the machines has all three; any other lab only the Arm (the
// card's machine, whatever the kind).
const (
	machineArm  = "arm"
	machineHost = "host"
	machinePeer = "peer"
)

// MachineNames are the names `rig lab exec --on` takes.
func MachineNames() []string { return []string{machineArm, machineHost, machinePeer} }

// FarEnd is where the far end of a card netdev's veth is: the network
// namespace, the netdev's name there and the machine ("wire" for the wire
// netns); MAC is the far end's own when the machine's card gives one.
type FarEnd struct {
	Machine string `json:"machine"`
	NetNS   string `json:"netns"`
	Name    string `json:"name"`
	MAC     string `json:"-"`
}

// farEnd places card netdev dev's far end by rec's layout: with far ends
// on the machines, a host PF's representor and tmfifo_net0 end on the
// host (the host card's netdev), the uplinks and oob_net0 on the peer;
// every other netdev (VF and SF representors, the SFs, a bond) and every
// netdev of a lab with far ends "wire" ends same-named in the wire netns.
func (l Lab) farEnd(kind, dev string, rec record) FarEnd {
	if rec.machines() {
		if m, ok := card.MachinesOf(kind); ok {
			h := m.Host.Linked()
			for _, j := range m.HostJoins {
				if j.Arm == dev {
					n, _ := h.NetdevByName(j.Far)
					return FarEnd{Machine: machineHost, NetNS: l.HostNetNS(), Name: j.Far, MAC: n.MAC}
				}
			}
			for _, j := range m.PeerJoins {
				if j.Arm == dev {
					return FarEnd{Machine: machinePeer, NetNS: l.PeerNetNS(), Name: j.Far}
				}
			}
		}
	}
	return FarEnd{Machine: "wire", NetNS: l.WireNetNS(), Name: dev}
}

// Address is one address the lab gives a machine's netdev.
type Address struct {
	Machine, Netdev, CIDR string
}

// Addresses are the addresses of a lab with far ends on the machines:
// tmfifo_net0 on the host and the Arm (the BlueField convention), the
// management link oob_net0 ↔ the peer's mgmt0.
func Addresses() []Address {
	return []Address{
		{machineHost, "tmfifo_net0", HostTmfifoAddr},
		{machineArm, "tmfifo_net0", ArmTmfifoAddr},
		{machinePeer, card.PeerMgmt, PeerMgmtAddr},
		{machineArm, "oob_net0", ArmOOBAddr},
	}
}

// netNSOf is a machine's network namespace.
func (l Lab) netNSOf(machine string) string {
	switch machine {
	case machineHost:
		return l.HostNetNS()
	case machinePeer:
		return l.PeerNetNS()
	}
	return l.NetNS()
}

// createMachines makes the host's sysfs tree of the card, its mount
// namespace (its init) and its port keeper, and gives the machines their
// addresses; the veths are made already (makeVeths).
func (l Lab) createMachines(c card.Card, binary string) error {
	m, _ := card.MachinesOf(c.Kind)
	for _, d := range []string{filepath.Dir(l.HostMntPath()), l.hostStash()} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("lab %s: %w", l.Name, err)
		}
	}
	if err := m.Host.Linked().Write(l.HostCardRoot(), true); err != nil {
		return err
	}
	for _, a := range Addresses() {
		if err := addAddress(l.netNSOf(a.Machine), a.Netdev, a.CIDR); err != nil {
			return fmt.Errorf("lab %s: %s: %w", l.Name, a.Machine, err)
		}
	}
	if err := l.startInit(binary, machineHost); err != nil {
		return err
	}
	return l.startPortsOn(binary, machineHost)
}

func addAddress(ns, dev, cidr string) error {
	h, err := host.NetlinkHandle(ns)
	if err != nil {
		return err
	}
	defer h.Delete()
	link, err := h.LinkByName(dev)
	if err != nil {
		return fmt.Errorf("netdev %s in %s: %w", dev, ns, err)
	}
	a, err := netlink.ParseAddr(cidr)
	if err != nil {
		return err
	}
	if err := h.AddrAdd(link, a); err != nil {
		return fmt.Errorf("address %s on %s in %s: %w", cidr, dev, ns, err)
	}
	return nil
}

// MachineStatus is one machine of a lab: its namespaces, its netdevs
// (the host's and the peer's; each with the Arm netdev at its other end)
// and the processes alive in it.
type MachineStatus struct {
	Name      string          `json:"name"`
	NetNS     string          `json:"netns"`
	MountNS   string          `json:"mountNs,omitempty"`
	Up        bool            `json:"up"`
	Netdevs   []MachineNetdev `json:"netdevs"`
	Processes []Proc          `json:"processes"`
}

// MachineNetdev is a netdev of the host or the peer.
type MachineNetdev struct {
	Name    string   `json:"name"`
	AdminUp bool     `json:"adminUp"`
	Carrier bool     `json:"carrier"`
	Addrs   []string `json:"addrs"`
	// ArmEnd is the Arm's netdev at the other end of its veth.
	ArmEnd string `json:"armEnd,omitempty"`
}

// machinesStatus is the Arm, host and peer of a lab with far ends on the
// machines (nil otherwise), with procs' processes placed on each.
func (l Lab) machinesStatus(rec record, procs []Proc, problems *[]string) []MachineStatus {
	if !rec.machines() {
		return nil
	}
	m, _ := card.MachinesOf(rec.Kind)
	armEnds := map[string]map[string]string{machineHost: {}, machinePeer: {}}
	for _, j := range m.HostJoins {
		armEnds[machineHost][j.Far] = j.Arm
	}
	for _, j := range m.PeerJoins {
		armEnds[machinePeer][j.Far] = j.Arm
	}
	var out []MachineStatus
	for _, name := range MachineNames() {
		ms := MachineStatus{Name: name, NetNS: l.netNSOf(name), Netdevs: []MachineNetdev{}, Processes: []Proc{}}
		_, err := os.Stat("/run/netns/" + ms.NetNS)
		ms.Up = err == nil
		switch name {
		case machineArm:
			ms.MountNS, ms.Up = l.MntPath(), ms.Up && isMounted(l.MntPath())
		case machineHost:
			ms.MountNS, ms.Up = l.HostMntPath(), ms.Up && isMounted(l.HostMntPath())
		}
		if !ms.Up {
			*problems = append(*problems, fmt.Sprintf("machine %s: its netns %s or its mount namespace is missing", name, ms.NetNS))
		}
		if name != machineArm && ms.Up {
			ms.Netdevs = machineNetdevs(ms.NetNS, armEnds[name], problems)
		}
		where := name
		if name == machineArm {
			where = "lab"
		}
		for _, p := range procs {
			if p.Where == where {
				ms.Processes = append(ms.Processes, p)
			}
		}
		out = append(out, ms)
	}
	return out
}

func machineNetdevs(ns string, armEnds map[string]string, problems *[]string) []MachineNetdev {
	h, err := host.NetlinkHandle(ns)
	if err != nil {
		*problems = append(*problems, err.Error())
		return []MachineNetdev{}
	}
	defer h.Delete()
	links, err := h.LinkList()
	if err != nil {
		*problems = append(*problems, fmt.Sprintf("netns %s: %v", ns, err))
	}
	out := []MachineNetdev{}
	for _, link := range links {
		a := link.Attrs()
		if a.Name == "lo" {
			continue
		}
		nd := MachineNetdev{Name: a.Name, AdminUp: a.Flags&net.FlagUp != 0, Carrier: a.RawFlags&unix.IFF_LOWER_UP != 0,
			ArmEnd: armEnds[a.Name], Addrs: []string{}}
		if addrs, err := h.AddrList(link, netlink.FAMILY_V4); err == nil {
			for _, ad := range addrs {
				nd.Addrs = append(nd.Addrs, ad.IPNet.String())
			}
		}
		out = append(out, nd)
	}
	return out
}
