// Package card describes the cards a virtual lab (rig lab up KIND) plays,
// as data: PCI functions, netdevs, RDMA devices and firmware, one table
// entry per kind. Write renders a card as a sysfs tree shaped exactly like
// the fixture host roots of testdata/hosts (made by mkhosts.sh; a test
// keeps the two equal), or, for a lab, the same tree without the netdev
// attributes that the lab's real veths provide live.
package card

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Fn is one PCI function (mkhosts.sh pcifn + sriov).
type Fn struct {
	Path     string // below /sys/devices, e.g. pci0000:00/0000:00:00.0/0000:01:00.0/0000:02:00.0/0000:03:00.0
	BDF      string
	Device   string // 0xa2d6
	Revision string // 0x01
	NUMA     string
	CurSpeed string
	CurWidth string
	MaxSpeed string
	MaxWidth string
	Class    string
	NumVFs   string // "" = no SR-IOV attributes
	TotalVFs string
	// VFOffset, VFStride, VFDevice: sriov_offset, sriov_stride and
	// sriov_vf_device ("101e", %x), from which the lab's kernel places the
	// VFs a write to sriov_numvfs makes (VFFn).
	VFOffset, VFStride, VFDevice string
	// NoDriver: no kernel driver is bound (no driver link): the RShim
	// function, which rshim drives from user space (§19.1).
	NoDriver bool
}

// VF links a VF function to its PF (mkhosts.sh vf).
type VF struct {
	PFPath string
	BDF    string
	Index  int
}

// Netdev is one network interface (mkhosts.sh netdev). In a lab each is a
// real veth named Name whose peer, in the wire namespace, has the same name.
type Netdev struct {
	Parent  string // device dir below /sys/devices that owns net/Name
	Name    string
	Ifindex int
	MAC     string
	Oper    string // operstate in the fixture (the lab's is live)
	Flags   string // 0x1003 up, 0x1002 admin down
	Carrier string
	Speed   string // "" = attribute unreadable (representors, admin-down ports)
	PPN     string // phys_port_name, "" = none
	SWID    string // phys_switch_id, "" = none
	Mode    string // compat/devlink/mode, "" = none
	// Master names the bond this netdev is a slave of ("" = none);
	// PermMAC is then its own MAC (bonding_slave/perm_hwaddr), MAC the
	// bond's.
	Master  string
	PermMAC string
	// Bond makes this netdev a bonding master (mkhosts.sh bond); its
	// slaves are the card's netdevs whose Master names it, in card order.
	Bond *Bond
}

// Bond is what a bonding master shows under bonding/ (bond_sysfs.c).
type Bond struct {
	Mode     string // "802.3ad 4"
	Miimon   string // "100"
	XmitHash string // "layer3+4 1"
	LACPRate string // "slow 0"
}

// SF is a scalable function's auxiliary device (mkhosts.sh sfdev): Path
// below /sys/devices ends in mlx5_core.sf.<id>, under its PCI function.
type SF struct {
	Path  string
	SFNum string
}

// AdminUp reports the fixture's IFF_UP (bit 0 of flags: a bond's slave
// is 0x1803, its master 0x1403).
func (n Netdev) AdminUp() bool {
	v, err := strconv.ParseUint(strings.TrimPrefix(n.Flags, "0x"), 16, 32)
	return err == nil && v&1 != 0
}

// OnPCI reports a netdev of a PCI function (it has a device link).
func (n Netdev) OnPCI() bool { return strings.HasPrefix(n.Parent, "pci") }

// IB is one RDMA device with port 1 (mkhosts.sh ibdev). Parent is the
// device it hangs off, below /sys/devices: a PCI function, or an SF's
// auxiliary device.
type IB struct {
	Parent string
	Name   string
	GUID   string
	Netdev string
	State  string // "4: ACTIVE"
	Phys   string // "5: LinkUp"
	Rate   string
}

// FwDevice is one function the firmware tools answer for.
type FwDevice struct {
	BDF      string
	DeviceID string // a2d6
}

// Card is one kind of machine a lab plays.
type Card struct {
	Kind    string // bf2-dpu
	Fixture string // the testdata/hosts root it matches: bf2-dpu-arm
	Summary string
	Fns     []Fn
	VFs     []VF
	SFs     []SF
	Netdevs []Netdev
	IB      []IB
	// Firmware: the NIC functions mstconfig/mlxconfig know, and the mode
	// the card starts in (dpu, nic, separated; ignored for ConnectX).
	Firmware []FwDevice
	FwMode   string
}

// Netdev flags as the fixtures write them.
const (
	FlagsUp     = "0x1003" // IFF_UP|IFF_BROADCAST|IFF_MULTICAST
	FlagsDown   = "0x1002"
	FlagsSlave  = "0x1803" // up, IFF_SLAVE: a bond's slave
	FlagsMaster = "0x1403" // up, IFF_MASTER: a bond
)

// Port states (hardware-formats.md §4) a lab writes when a cable is
// pulled and put back.
const (
	StateActive = "4: ACTIVE"
	StateDown   = "1: DOWN"
	PhysLinkUp  = "5: LinkUp"
	PhysPolling = "2: Polling"
)

// Lookup returns the card of a kind.
func Lookup(kind string) (Card, bool) {
	for _, c := range Kinds() {
		if c.Kind == kind {
			return c, true
		}
	}
	return Card{}, false
}

// KindNames lists the kinds, in table order.
func KindNames() []string {
	var out []string
	for _, c := range Kinds() {
		out = append(out, c.Kind)
	}
	return out
}

// NetdevByName finds a netdev of the card.
func (c Card) NetdevByName(name string) (Netdev, bool) {
	for _, n := range c.Netdevs {
		if n.Name == name {
			return n, true
		}
	}
	return Netdev{}, false
}

// PortOf finds the RDMA device whose port 1 carries netdev name.
func (c Card) PortOf(name string) (IB, bool) {
	for _, ib := range c.IB {
		if ib.Netdev == name {
			return ib, true
		}
	}
	return IB{}, false
}

// LiveAttr reports a netdev attribute the lab's veth provides itself
// (Write leaves these out of a lab tree).
func LiveAttr(name string) bool {
	switch name {
	case "ifindex", "address", "operstate", "flags", "carrier", "mtu", "type":
		return true
	}
	return false
}

// NetdevDir is where Write puts a netdev's directory, below root.
func (c Card) NetdevDir(root string, n Netdev) string {
	return filepath.Join(root, "sys/devices", n.Parent, "net", n.Name)
}

// PortDir is an RDMA device's port 1 directory below root.
func (c Card) PortDir(root string, ib IB) string {
	return filepath.Join(root, "sys/devices", ib.Parent, "infiniband", ib.Name, "ports/1")
}

// tree writes files and links under one root.
type tree struct {
	root string
	err  error
}

// put writes one sysfs attribute (kernel attributes end in "\n").
func (t *tree) put(p, content string) {
	t.write(p, content+"\n")
}

func (t *tree) write(p, content string) {
	if t.err != nil {
		return
	}
	full := filepath.Join(t.root, p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.err = err
		return
	}
	t.err = os.WriteFile(full, []byte(content), 0o644)
}

// lnk makes a relative symlink, as sysfs has.
func (t *tree) lnk(target, p string) {
	if t.err != nil {
		return
	}
	full := filepath.Join(t.root, p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.err = err
		return
	}
	_ = os.Remove(full)
	t.err = os.Symlink(target, full)
}

// Write renders the card under root (root/sys/...). lab=false gives the
// fixture tree (testdata/hosts/<Fixture>); lab=true leaves out what a lab
// takes live from its veths: the live attributes (LiveAttr) of every netdev, /sys/class/net
// and lo, and points each netdev's device link from
// /sys/devices/virtual/net/<name>, where the kernel keeps the veth.
func (c Card) Write(root string, lab bool) error {
	t := &tree{root: root}
	for _, f := range c.Fns {
		t.pcifn(f)
	}
	for _, v := range c.VFs {
		parent, pfbdf := filepath.Dir(v.PFPath), filepath.Base(v.PFPath)
		t.lnk("../"+v.BDF, fmt.Sprintf("sys/devices/%s/virtfn%d", v.PFPath, v.Index))
		t.lnk("../"+pfbdf, "sys/devices/"+parent+"/"+v.BDF+"/physfn")
	}
	for _, sf := range c.SFs {
		t.sfdev(sf)
	}
	for _, n := range c.Netdevs {
		t.netdev(n, lab)
		if n.Bond != nil {
			t.bond(c, n, lab)
		}
	}
	for _, ib := range c.IB {
		t.ibdev(ib)
	}
	if !lab {
		t.netdev(Netdev{Parent: "virtual", Name: "lo", Ifindex: 1, MAC: "00:00:00:00:00:00", Oper: "unknown", Flags: "0x9", Carrier: "1"}, false)
	}
	if t.err != nil {
		return fmt.Errorf("card %s: write %s: %w", c.Kind, root, t.err)
	}
	return nil
}

func (t *tree) pcifn(f Fn) {
	d := "sys/devices/" + f.Path
	for _, kv := range [][2]string{{"vendor", "0x15b3"}, {"device", f.Device}, {"subsystem_vendor", "0x15b3"},
		{"revision", f.Revision}, {"class", f.Class}, {"numa_node", f.NUMA},
		{"current_link_speed", f.CurSpeed}, {"current_link_width", f.CurWidth},
		{"max_link_speed", f.MaxSpeed}, {"max_link_width", f.MaxWidth}} {
		t.put(d+"/"+kv[0], kv[1])
	}
	t.write("sys/bus/pci/drivers/mlx5_core/bind", "")
	t.write("sys/bus/pci/drivers/mlx5_core/unbind", "")
	if !f.NoDriver {
		up := strings.Repeat("../", strings.Count(f.Path, "/")+2)
		t.lnk(up+"bus/pci/drivers/mlx5_core", d+"/driver")
	}
	t.lnk("../../../devices/"+f.Path, "sys/bus/pci/devices/"+f.BDF)
	if f.TotalVFs != "" {
		t.put(d+"/sriov_numvfs", f.NumVFs)
		t.put(d+"/sriov_totalvfs", f.TotalVFs)
		t.put(d+"/sriov_offset", f.VFOffset)
		t.put(d+"/sriov_stride", f.VFStride)
		t.put(d+"/sriov_vf_device", f.VFDevice)
	}
}

func (t *tree) netdev(n Netdev, lab bool) {
	d := "sys/devices/" + n.Parent + "/net/" + n.Name
	if !lab {
		for _, kv := range [][2]string{{"ifindex", fmt.Sprint(n.Ifindex)}, {"address", n.MAC}, {"operstate", n.Oper},
			{"flags", n.Flags}, {"carrier", n.Carrier}, {"mtu", "1500"}, {"type", "1"}} {
			t.put(d+"/"+kv[0], kv[1])
		}
	}
	for _, kv := range [][2]string{{"speed", n.Speed}, {"phys_port_name", n.PPN}, {"phys_switch_id", n.SWID}, {"compat/devlink/mode", n.Mode}} {
		if kv[1] != "" {
			t.put(d+"/"+kv[0], kv[1])
		}
	}
	if n.OnPCI() {
		if lab {
			t.lnk("../../../"+n.Parent, d+"/device")
		} else {
			t.lnk("../../../"+filepath.Base(n.Parent), d+"/device")
		}
	}
	if !lab {
		t.lnk("../../devices/"+n.Parent+"/net/"+n.Name, "sys/class/net/"+n.Name)
	}
}

func (t *tree) ibdev(ib IB) {
	d := "sys/devices/" + ib.Parent + "/infiniband/" + ib.Name
	t.put(d+"/node_guid", ib.GUID)
	t.put(d+"/node_type", "1: CA")
	t.put(d+"/ports/1/state", ib.State)
	t.put(d+"/ports/1/phys_state", ib.Phys)
	t.put(d+"/ports/1/link_layer", "Ethernet")
	t.put(d+"/ports/1/rate", ib.Rate)
	t.put(d+"/ports/1/gid_attrs/ndevs/0", ib.Netdev)
	t.put(d+"/ports/1/gid_attrs/ndevs/1", ib.Netdev)
	t.lnk("../../../"+filepath.Base(ib.Parent), d+"/device")
	t.lnk("../../devices/"+ib.Parent+"/infiniband/"+ib.Name, "sys/class/infiniband/"+ib.Name)
}
