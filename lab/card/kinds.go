package card

import "strings"

// The kinds, one entry each, as in testdata/hosts/mkhosts.sh (formats and
// sources: testdata/hosts/README.md). A new kind is one more entry here
// (and, for its golden test, one more fixture root).

const (
	bfP0         = "pci0000:00/0000:00:00.0/0000:01:00.0/0000:02:00.0/0000:03:00.0"
	bfP1         = "pci0000:00/0000:00:00.0/0000:01:00.0/0000:02:00.0/0000:03:00.1"
	cxC0         = "pci0000:3a/0000:3a:00.0/0000:3b:00.0"
	cxC1         = "pci0000:3a/0000:3a:00.0/0000:3b:00.1"
	cxV0         = "pci0000:3a/0000:3a:00.0/0000:3b:00.2"
	cxV1         = "pci0000:3a/0000:3a:00.0/0000:3b:00.3"
	bfSF0        = bfP0 + "/mlx5_core.sf.2" // the SFs' auxiliary devices (§11.2)
	bfSF1        = bfP1 + "/mlx5_core.sf.3"
	tmfifoParent = "platform/MLNXBF01:00/virtio1"
	oobParent    = "platform/MLNXBF17:00"
)

// Kinds is the table of cards, in order.
func Kinds() []Card {
	return []Card{bf2DPU(), bf3DPU(), cx6dxHost()}
}

// bfFn is a BlueField Arm-side PCI function (no NUMA, x16, 127 VFs max;
// PF1's VFs follow PF0's: offset 2 + 127 - 1).
func bfFn(path, bdf, dev, speed string) Fn {
	off := "2"
	if strings.HasSuffix(bdf, ".1") {
		off = "128"
	}
	return Fn{Path: path, BDF: bdf, Device: dev, Revision: "0x01", NUMA: "-1", CurSpeed: speed, CurWidth: "16",
		MaxSpeed: speed, MaxWidth: "16", Class: "0x020000", NumVFs: "0", TotalVFs: "127", VFOffset: off, VFStride: "1", VFDevice: "101e"}
}

// up is an admin-up, running netdev.
func up(parent, name string, ifindex int, mac, speed, ppn, swid, mode string) Netdev {
	return Netdev{Parent: parent, Name: name, Ifindex: ifindex, MAC: mac, Oper: "up", Flags: FlagsUp, Carrier: "1",
		Speed: speed, PPN: ppn, SWID: swid, Mode: mode}
}

func active(parent, name, guid, netdev, rate string) IB {
	return IB{Parent: parent, Name: name, GUID: guid, Netdev: netdev, State: StateActive, Phys: PhysLinkUp, Rate: rate}
}

// bf2DPU: BlueField-2 Arm side in DPU mode (fixture bf2-dpu-arm): an older
// BSP's naming (host-PF representors pf0/pf1), one SF per port whose
// netdevs report phys_port_name p0/p1 like the uplinks, two VF
// representors, p0 and p1 slaves of bond0 (802.3ad). The firmware starts in
// separated-host mode, so `rig up -p bf2-dpu` has a mode to change. In a
// lab bond0 is a veth like every card netdev: its bonding/ attributes and
// the slaves' master links are the card's (the lab runs no bonding driver).
func bf2DPU() Card {
	const sw = "cc1d5e0003a1420c"
	slave := func(n Netdev, perm string) Netdev {
		n.Flags, n.Master, n.PermMAC = FlagsSlave, "bond0", perm
		return n
	}
	bond := up("virtual", "bond0", 14, "0c:42:a1:5e:1d:cc", "50000", "", "", "")
	bond.Flags, bond.Bond = FlagsMaster, &Bond{Mode: "802.3ad 4", Miimon: "100", XmitHash: "layer3+4 1", LACPRate: "slow 0"}
	return Card{Kind: "bf2-dpu", Fixture: "bf2-dpu-arm", FwMode: "separated",
		Summary: "BlueField-2 Arm side: p0, p1 (bond0), pf0hpf, pf1hpf, VF representors pf0vf0/pf0vf1, SFs enp3s0f0s0/enp3s0f1s0 and their representors on 0000:03:00.0/.1, mlx5_0..mlx5_3, tmfifo_net0, oob_net0; firmware in separated-host mode",
		Fns:     []Fn{bfFn(bfP0, "0000:03:00.0", "0xa2d6", "16.0 GT/s PCIe"), bfFn(bfP1, "0000:03:00.1", "0xa2d6", "16.0 GT/s PCIe")},
		SFs:     []SF{{bfSF0, "0"}, {bfSF1, "0"}},
		Netdevs: []Netdev{
			slave(up(bfP0, "p0", 4, "0c:42:a1:5e:1d:cc", "25000", "p0", sw, "switchdev"), "0c:42:a1:5e:1d:cc"),
			up(bfP0, "pf0hpf", 6, "ba:65:0c:43:b6:1f", "", "pf0", sw, ""),
			up(bfP0, "en3f0pf0sf0", 8, "2e:71:8a:4d:05:c3", "", "pf0sf0", sw, ""),
			up(bfP0, "pf0vf0", 12, "6a:3e:91:0c:d2:10", "", "pf0vf0", sw, ""),
			up(bfP0, "pf0vf1", 13, "6a:3e:91:0c:d2:11", "", "pf0vf1", sw, ""),
			slave(up(bfP1, "p1", 5, "0c:42:a1:5e:1d:cc", "25000", "p1", sw, "switchdev"), "0c:42:a1:5e:1d:cd"),
			up(bfP1, "pf1hpf", 7, "5e:0b:ff:1a:57:31", "", "pf1", sw, ""),
			up(bfP1, "en3f1pf1sf0", 9, "ae:0f:6b:92:34:d8", "", "pf1sf0", sw, ""),
			up(bfSF0, "enp3s0f0s0", 10, "02:8f:2a:11:6e:01", "", "p0", "", ""),
			up(bfSF1, "enp3s0f1s0", 11, "02:8f:2a:11:6e:02", "", "p1", "", ""),
			bond,
			up(tmfifoParent, "tmfifo_net0", 3, "00:1a:ca:ff:ff:01", "", "", "", ""),
			up(oobParent, "oob_net0", 2, "0c:42:a1:5e:1d:d0", "1000", "", "", ""),
		},
		IB: []IB{
			active(bfP0, "mlx5_0", "0c42:a103:005e:1dcc", "p0", "25 Gb/sec (1X EDR)"),
			active(bfP1, "mlx5_1", "0c42:a103:005e:1dcd", "p1", "25 Gb/sec (1X EDR)"),
			active(bfSF0, "mlx5_2", "008f:2aff:fe11:6e01", "enp3s0f0s0", "25 Gb/sec (1X EDR)"),
			active(bfSF1, "mlx5_3", "008f:2aff:fe11:6e02", "enp3s0f1s0", "25 Gb/sec (1X EDR)"),
		},
		Firmware: []FwDevice{{"0000:03:00.0", "a2d6"}, {"0000:03:00.1", "a2d6"}},
	}
}

// bf3DPU: BlueField-3 Arm side with SFs and their representors (fixture
// bf3-dpu-arm), a newer kernel's naming: host-PF representors report
// phys_port_name c1pf0/c1pf1 (external controller 1), the SF netdevs none.
// Its firmware starts in separated mode, as bf2-dpu's does, so the bring-up
// story is the same (mode set for next boot: exit 3, power cycle, ok).
func bf3DPU() Card {
	const sw = "76e2e20003fffbf0"
	return Card{Kind: "bf3-dpu", Fixture: "bf3-dpu-arm", FwMode: "separated",
		Summary: "BlueField-3 Arm side: p0, p1, pf0hpf, pf1hpf (phys_port_name c1pf0/c1pf1), SFs enp3s0f0s0/enp3s0f1s0 and their representors en3f0pf0sf0/en3f1pf1sf0, mlx5_0..mlx5_3; firmware in separated mode (rig up -p bf3-dpu sets DPU mode)",
		Fns:     []Fn{bfFn(bfP0, "0000:03:00.0", "0xa2dc", "32.0 GT/s PCIe"), bfFn(bfP1, "0000:03:00.1", "0xa2dc", "32.0 GT/s PCIe")},
		SFs:     []SF{{bfSF0, "0"}, {bfSF1, "0"}},
		Netdevs: []Netdev{
			up(bfP0, "p0", 4, "f0:fb:7f:e2:e2:76", "200000", "p0", sw, "switchdev"),
			up(bfP0, "pf0hpf", 8, "4a:c1:0d:8e:33:01", "", "c1pf0", sw, ""),
			up(bfP0, "en3f0pf0sf0", 10, "1e:3d:55:12:a0:4c", "", "pf0sf0", sw, ""),
			up(bfP1, "p1", 5, "f0:fb:7f:e2:e2:77", "200000", "p1", sw, "switchdev"),
			up(bfP1, "pf1hpf", 9, "8a:72:1b:5c:90:02", "", "c1pf1", sw, ""),
			up(bfP1, "en3f1pf1sf0", 11, "7a:4e:c3:09:d1:6b", "", "pf1sf0", sw, ""),
			up(bfSF0, "enp3s0f0s0", 12, "02:d7:41:9c:3e:01", "", "", "", ""),
			up(bfSF1, "enp3s0f1s0", 13, "02:d7:41:9c:3e:02", "", "", "", ""),
			up(tmfifoParent, "tmfifo_net0", 3, "00:1a:ca:ff:ff:01", "", "", "", ""),
			up(oobParent, "oob_net0", 2, "f0:fb:7f:e2:e2:7e", "1000", "", "", ""),
		},
		IB: []IB{
			active(bfP0, "mlx5_0", "f0fb:7f03:00e2:e276", "p0", "200 Gb/sec (4X HDR)"),
			active(bfP1, "mlx5_1", "f0fb:7f03:00e2:e277", "p1", "200 Gb/sec (4X HDR)"),
			active(bfSF0, "mlx5_2", "00d7:41ff:fe9c:3e01", "enp3s0f0s0", "200 Gb/sec (4X HDR)"),
			active(bfSF1, "mlx5_3", "00d7:41ff:fe9c:3e02", "enp3s0f1s0", "200 Gb/sec (4X HDR)"),
		},
		Firmware: []FwDevice{{"0000:03:00.0", "a2dc"}, {"0000:03:00.1", "a2dc"}},
	}
}

// cx6dxHost: ConnectX-6 Dx host, PCIe trained below max, 2 VFs on port 0,
// port 1 admin-down (fixture cx6dx-host), NVIDIA's driver (the PF netdevs
// have compat/devlink/mode, legacy).
func cx6dxHost() Card {
	const sw = "a6c40f0003a14210"
	pf := func(path, bdf, numvfs, offset string) Fn {
		return Fn{Path: path, BDF: bdf, Device: "0x101d", Revision: "0x00", NUMA: "0", CurSpeed: "8.0 GT/s PCIe", CurWidth: "16",
			MaxSpeed: "16.0 GT/s PCIe", MaxWidth: "16", Class: "0x020000", NumVFs: numvfs, TotalVFs: "8", VFOffset: offset, VFStride: "1", VFDevice: "101e"}
	}
	vf := func(path, bdf string) Fn {
		return Fn{Path: path, BDF: bdf, Device: "0x101e", Revision: "0x00", NUMA: "0", CurSpeed: "Unknown", CurWidth: "255",
			MaxSpeed: "Unknown", MaxWidth: "255", Class: "0x020000"}
	}
	return Card{Kind: "cx6dx-host", Fixture: "cx6dx-host",
		Summary: "ConnectX-6 Dx host: enp59s0f0np0 (2 VFs), enp59s0f1np1 admin-down, mlx5_0..mlx5_3",
		Fns:     []Fn{pf(cxC0, "0000:3b:00.0", "2", "2"), pf(cxC1, "0000:3b:00.1", "0", "9"), vf(cxV0, "0000:3b:00.2"), vf(cxV1, "0000:3b:00.3")},
		VFs:     []VF{{cxC0, "0000:3b:00.2", 0}, {cxC0, "0000:3b:00.3", 1}},
		Netdevs: []Netdev{
			up(cxC0, "enp59s0f0np0", 4, "10:70:fd:a1:c4:a6", "100000", "p0", sw, "legacy"),
			{Parent: cxC1, Name: "enp59s0f1np1", Ifindex: 5, MAC: "10:70:fd:a1:c4:a7", Oper: "down", Flags: FlagsDown, Carrier: "0", PPN: "p1", SWID: sw, Mode: "legacy"},
			up(cxV0, "enp59s0f0v0", 6, "6e:1c:25:90:4b:10", "100000", "", "", ""),
			up(cxV1, "enp59s0f0v1", 7, "6e:1c:25:90:4b:11", "100000", "", "", ""),
		},
		IB: []IB{
			active(cxC0, "mlx5_0", "1070:fd03:00a1:c4a6", "enp59s0f0np0", "100 Gb/sec (4X EDR)"),
			{Parent: cxC1, Name: "mlx5_1", GUID: "1070:fd03:00a1:c4a7", Netdev: "enp59s0f1np1", State: StateDown, Phys: "3: Disabled", Rate: "10 Gb/sec (4X SDR)"},
			active(cxV0, "mlx5_2", "6e1c:2503:0090:4b10", "enp59s0f0v0", "100 Gb/sec (4X EDR)"),
			active(cxV1, "mlx5_3", "6e1c:2503:0090:4b11", "enp59s0f0v1", "100 Gb/sec (4X EDR)"),
		},
		Firmware: []FwDevice{{"0000:3b:00.0", "101d"}, {"0000:3b:00.1", "101d"}},
	}
}
