package card

// A BlueField in DPU mode is three machines (hardware-formats.md §20): the
// x86 host, whose PF netdevs are the far ends of the Arm's host-PF
// representors (pf0hpf ↔ PF0) and whose tmfifo_net0 is the far end of the
// Arm's; the Arm (the kinds above); and the peer across the cable, the far
// end of the uplinks p0/p1, which the Arm reaches over its management
// port oob_net0. Machines is that, as data, for a lab of a DPU kind.

// Join is one veth between the Arm and another machine: the Arm's netdev
// and the name of its far end there.
type Join struct {
	Arm, Far string
}

// Machines are the host and peer of a DPU kind.
type Machines struct {
	// Host is the x86 host's side of the card, as its sysfs shows it
	// (fixture Host.Fixture, where there is one): the PFs, the RShim
	// function, the host's tmfifo_net0.
	Host Card
	// HostJoins: Arm netdev → host netdev (pf0hpf → PF0's netdev,
	// tmfifo_net0 → the host's tmfifo_net0).
	HostJoins []Join
	// PeerJoins: Arm netdev → peer netdev (p0 → p0, p1 → p1, oob_net0 →
	// the peer's management port PeerMgmt).
	PeerJoins []Join
}

// PeerMgmt is the peer's netdev at the far end of the Arm's oob_net0.
const PeerMgmt = "mgmt0"

// MachinesOf returns the host and peer of a DPU kind; false for a kind
// that is no DPU (cx6dx-host: the card is in the host itself).
func MachinesOf(kind string) (Machines, bool) {
	var h Card
	switch kind {
	case "bf2-dpu":
		h = bf2Host()
	case "bf3-dpu":
		h = bf3Host()
	default:
		return Machines{}, false
	}
	return Machines{Host: h,
		HostJoins: []Join{{"pf0hpf", h.Netdevs[0].Name}, {"pf1hpf", h.Netdevs[1].Name}, {"tmfifo_net0", "tmfifo_net0"}},
		PeerJoins: []Join{{"p0", "p0"}, {"p1", "p1"}, {"oob_net0", PeerMgmt}},
	}, true
}

// HostKinds are the host cards, for their golden test.
func HostKinds() []Card { return []Card{bf2Host(), bf3Host()} }

// Linked is the card with every admin-up port that has no link given one
// (carrier, the card's first port's speed, its RDMA port ACTIVE/LinkUp at
// the first port's rate): in a lab every host PF is joined to its
// representor, so it has link (the bf2-host fixture's PF1 has none: the
// rdma step's cable case).
func (c Card) Linked() Card {
	out := c
	out.Netdevs = append([]Netdev(nil), c.Netdevs...)
	out.IB = append([]IB(nil), c.IB...)
	for i, n := range out.Netdevs {
		if !n.AdminUp() || n.Carrier != "0" {
			continue
		}
		out.Netdevs[i].Carrier, out.Netdevs[i].Oper, out.Netdevs[i].Speed = "1", "up", c.Netdevs[0].Speed
		for j, ib := range out.IB {
			if ib.Netdev == n.Name {
				out.IB[j].State, out.IB[j].Phys, out.IB[j].Rate = StateActive, PhysLinkUp, c.IB[0].Rate
			}
		}
	}
	return out
}

const (
	bf2H0 = "pci0000:e0/0000:e0:03.1/0000:e1:00.0"
	bf2H1 = "pci0000:e0/0000:e0:03.1/0000:e1:00.1"
	bf2H2 = "pci0000:e0/0000:e0:03.1/0000:e1:00.2"
	bf3H0 = "pci0000:a0/0000:a0:01.1/0000:a1:00.0"
	bf3H1 = "pci0000:a0/0000:a0:01.1/0000:a1:00.1"
	bf3H2 = "pci0000:a0/0000:a0:01.1/0000:a1:00.2"
)

// hostFn is a host-side function of a BlueField: NUMA and link of its
// slot, 8 VFs per PF (PF1's after PF0's).
func hostFn(path, bdf, dev, numa, speed, class string) Fn {
	f := Fn{Path: path, BDF: bdf, Device: dev, Revision: "0x01", NUMA: numa, CurSpeed: speed, CurWidth: "16",
		MaxSpeed: speed, MaxWidth: "16", Class: class}
	switch bdf[len(bdf)-1] {
	case '0':
		f.NumVFs, f.TotalVFs, f.VFOffset, f.VFStride, f.VFDevice = "0", "8", "2", "1", "101e"
	case '1':
		f.NumVFs, f.TotalVFs, f.VFOffset, f.VFStride, f.VFDevice = "0", "8", "9", "1", "101e"
	default: // the RShim: class 0801, driven from user space (§19.1)
		f.NoDriver = true
	}
	return f
}

// bf2Host: the x86 host of a BlueField-2 in DPU mode (fixture bf2-host,
// mkhosts.sh): PFs 0000:e1:00.0/.1 (NUMA 1) in legacy eSwitch mode, named
// from phys_port_name (enp225s0f0np0), the RShim function 0000:e1:00.2
// (c2d3, no kernel driver), the host's tmfifo_net0 (02:02:02:02:02:02,
// §19.7's older convention). Port 1 is admin-up without link (the rdma
// step's cable case); a lab uses Linked().
func bf2Host() Card {
	const sw = "d01d5e0003a1420c"
	const sp = "16.0 GT/s PCIe"
	pf1 := up(bf2H1, "enp225s0f1np1", 5, "0c:42:a1:5e:1d:cf", "-1", "p1", sw, "legacy")
	pf1.Oper, pf1.Carrier = "down", "0"
	tm := up("virtual", "tmfifo_net0", 6, "02:02:02:02:02:02", "10", "", "", "")
	tm.Oper = "unknown"
	return Card{Kind: "bf2-host", Fixture: "bf2-host",
		Summary: "the x86 host of a BlueField-2 in DPU mode: PFs enp225s0f0np0/enp225s0f1np1 (0000:e1:00.0/.1), RShim 0000:e1:00.2, tmfifo_net0",
		Fns: []Fn{hostFn(bf2H0, "0000:e1:00.0", "0xa2d6", "1", sp, "0x020000"), hostFn(bf2H1, "0000:e1:00.1", "0xa2d6", "1", sp, "0x020000"),
			hostFn(bf2H2, "0000:e1:00.2", "0xc2d3", "1", sp, "0x080100")},
		Netdevs: []Netdev{up(bf2H0, "enp225s0f0np0", 4, "0c:42:a1:5e:1d:ce", "25000", "p0", sw, "legacy"), pf1, tm},
		IB: []IB{
			active(bf2H0, "mlx5_0", "0c42:a103:005e:1dce", "enp225s0f0np0", "25 Gb/sec (1X EDR)"),
			{Parent: bf2H1, Name: "mlx5_1", GUID: "0c42:a103:005e:1dcf", Netdev: "enp225s0f1np1", State: StateDown, Phys: PhysPolling, Rate: "10 Gb/sec (4X SDR)"},
		},
	}
}

// bf3Host: the x86 host of a BlueField-3 in DPU mode (no fixture root;
// the bf2-host shape): PFs 0000:a1:00.0/.1 (a2dc, NUMA 0, 32 GT/s x16),
// the RShim function 0000:a1:00.2 (c2d4, §19.1), the host's tmfifo_net0
// with the MAC rshim gives it (00:1a:ca:ff:ff:02, §19.7). A newer
// kernel, as bf3-dpu's: the PF netdevs have phys_port_name p0/p1 but no
// phys_switch_id (the host PF is no eSwitch manager in DPU mode, §20.1).
func bf3Host() Card {
	const sp = "32.0 GT/s PCIe"
	tm := up("virtual", "tmfifo_net0", 6, "00:1a:ca:ff:ff:02", "10", "", "", "")
	tm.Oper = "unknown"
	return Card{Kind: "bf3-host",
		Summary: "the x86 host of a BlueField-3 in DPU mode: PFs enp161s0f0np0/enp161s0f1np1 (0000:a1:00.0/.1), RShim 0000:a1:00.2, tmfifo_net0",
		Fns: []Fn{hostFn(bf3H0, "0000:a1:00.0", "0xa2dc", "0", sp, "0x020000"), hostFn(bf3H1, "0000:a1:00.1", "0xa2dc", "0", sp, "0x020000"),
			hostFn(bf3H2, "0000:a1:00.2", "0xc2d4", "0", sp, "0x080100")},
		Netdevs: []Netdev{
			up(bf3H0, "enp161s0f0np0", 4, "f0:fb:7f:e2:e2:78", "200000", "p0", "", "legacy"),
			up(bf3H1, "enp161s0f1np1", 5, "f0:fb:7f:e2:e2:79", "200000", "p1", "", "legacy"),
			tm,
		},
		IB: []IB{
			active(bf3H0, "mlx5_0", "f0fb:7f03:00e2:e278", "enp161s0f0np0", "200 Gb/sec (4X HDR)"),
			active(bf3H1, "mlx5_1", "f0fb:7f03:00e2:e279", "enp161s0f1np1", "200 Gb/sec (4X HDR)"),
		},
	}
}
