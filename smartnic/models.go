package smartnic

import (
	"fmt"
	"strings"
)

// VendorMellanox is the PCI vendor ID of Mellanox/NVIDIA networking.
const VendorMellanox = 0x15b3

// Kinds of PCI function (Model.Kind, Function.Kind).
const (
	FunctionNIC   = "nic"   // a physical function with ports (ConnectX / BlueField)
	FunctionVF    = "vf"    // an SR-IOV virtual function
	FunctionRShim = "rshim" // BlueField RShim PCIe function (host side)
	FunctionOther = "other" // Mellanox function rig does not know
)

// Model describes one device ID (hardware-formats.md §2.4).
type Model struct {
	DeviceID uint16
	Name     string // "BlueField-2"
	Family   string // "BlueField" or "ConnectX"
	MSTType  string // mstflint device type: "BlueField2" (mlxconfig "Device type:")
	Kind     string
}

// models is the device ID table of hardware-formats.md §2.4 (sources:
// sriov-network-operator configmap, mstflint dev_mgt/tools_dev_types.c,
// nic-configuration-operator consts, rshim-user-space). ConnectX-3 and
// -3 Pro (mlx4, not in §2.4): PCI ids 1003/1007 and VF 1004 from the
// PCI id names "MT27500 Family [ConnectX-3]", "MT27520 Family [ConnectX-3
// Pro]", "MT27500/MT27520 Family [ConnectX-3/ConnectX-3 Pro Virtual
// Function]" (DPDK's net_mlx4 device table), mstflint type names
// "ConnectX3" and "ConnectX3Pro" from dev_mgt/tools_dev_types.c (which
// gives ConnectX3Pro sw_dev_id 4103 = 0x1007).
var models = []Model{
	{0x1003, "ConnectX-3", "ConnectX", "ConnectX3", FunctionNIC},
	{0x1004, "ConnectX-3/ConnectX-3 Pro VF", "ConnectX", "", FunctionVF},
	{0x1007, "ConnectX-3 Pro", "ConnectX", "ConnectX3Pro", FunctionNIC},
	{0x1013, "ConnectX-4", "ConnectX", "ConnectX4", FunctionNIC},
	{0x1014, "ConnectX-4 VF", "ConnectX", "", FunctionVF},
	{0x1015, "ConnectX-4 Lx", "ConnectX", "ConnectX4LX", FunctionNIC},
	{0x1016, "ConnectX-4 Lx VF", "ConnectX", "", FunctionVF},
	{0x1017, "ConnectX-5", "ConnectX", "ConnectX5", FunctionNIC},
	{0x1018, "ConnectX-5 VF", "ConnectX", "", FunctionVF},
	{0x1019, "ConnectX-5 Ex", "ConnectX", "ConnectX5", FunctionNIC},
	{0x101a, "ConnectX-5 Ex VF", "ConnectX", "", FunctionVF},
	{0x101b, "ConnectX-6", "ConnectX", "ConnectX6", FunctionNIC},
	{0x101c, "ConnectX-6 VF", "ConnectX", "", FunctionVF},
	{0x101d, "ConnectX-6 Dx", "ConnectX", "ConnectX6DX", FunctionNIC},
	// 101e is the VF ID of CX-6 Dx/Lx, CX-7, CX-8, BlueField-2 and -3.
	{0x101e, "ConnectX Family mlx5Gen VF", "ConnectX", "", FunctionVF},
	{0x101f, "ConnectX-6 Lx", "ConnectX", "ConnectX6LX", FunctionNIC},
	{0x1021, "ConnectX-7", "ConnectX", "ConnectX7", FunctionNIC},
	{0x1023, "ConnectX-8", "ConnectX", "ConnectX8", FunctionNIC},
	{0xa2d2, "BlueField", "BlueField", "BlueField", FunctionNIC},
	{0xa2d6, "BlueField-2", "BlueField", "BlueField2", FunctionNIC},
	{0xa2d9, "BlueField-3 Lx", "BlueField", "", FunctionNIC},
	{0xa2dc, "BlueField-3", "BlueField", "BlueField3", FunctionNIC},
	{0xa2df, "BlueField-4", "BlueField", "BlueField4", FunctionNIC},
	{0xc2d2, "BlueField RShim", "BlueField", "", FunctionRShim},
	{0xc2d3, "BlueField-2 RShim", "BlueField", "", FunctionRShim},
	{0xc2d4, "BlueField-3 RShim", "BlueField", "", FunctionRShim},
	{0xc2d5, "BlueField-3 RShim", "BlueField", "", FunctionRShim},
	{0x0211, "BlueField Livefish (firmware recovery)", "BlueField", "", FunctionOther},
	{0x0214, "BlueField-2 Livefish (firmware recovery)", "BlueField", "", FunctionOther},
	{0x021c, "BlueField-3 Livefish (firmware recovery)", "BlueField", "", FunctionOther},
}

// LookupModel returns the model of a Mellanox device ID.
func LookupModel(id uint16) (Model, bool) {
	for _, m := range models {
		if m.DeviceID == id {
			return m, true
		}
	}
	return Model{DeviceID: id, Name: fmt.Sprintf("unknown Mellanox device %04x", id), Kind: FunctionOther}, false
}

// MSTBase is the mst device name stem: "mt" + the decimal device ID
// (hardware-formats.md §2.3: 0xa2d6 -> mt41686).
func MSTBase(id uint16) string { return fmt.Sprintf("mt%d", id) }

// IsBlueField reports whether the model is a BlueField NIC function.
func (m Model) IsBlueField() bool { return m.Family == "BlueField" && m.Kind == FunctionNIC }

// shortBDF drops the 0000: domain as mst does ("03:00.0").
func shortBDF(bdf string) string { return strings.TrimPrefix(bdf, "0000:") }
