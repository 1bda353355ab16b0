// Package smartnic finds the Mellanox/NVIDIA PCI functions (vendor 0x15b3)
// of a host root and what hangs off them: netdevs with their BlueField roles,
// RDMA devices and port states, NUMA node, PCIe link, SR-IOV and the devlink
// eSwitch mode. It reads sysfs under the host root (host.Host), so the same
// code runs on a real host and on the fixture roots in testdata/hosts.
package smartnic

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"rig/internal/host"
	"rig/internal/pci"
)

// SchemaVersion names the JSON shape of Inventory.
const SchemaVersion = "rig.inventory/v1"

// Side says which side of a BlueField the inventory was taken on.
const (
	SideHost   = "host"    // x86 (or other) host with ConnectX / BlueField PCI functions
	SideDPUArm = "dpu-arm" // the BlueField's own Arm OS (has host-PF representors or oob_net0)
)

// Netdev roles (from phys_port_name and names; hardware-formats.md §3, §4).
const (
	RoleUplink    = "uplink"      // pN: physical port (ConnectX PF, BlueField Arm uplink)
	RoleHostPF    = "host-pf"     // pN seen on a BlueField's host side
	RoleHostPFRep = "host-pf-rep" // pfNhpf, phys_port_name pfN (Arm side)
	RoleVFRep     = "vf-rep"      // pfNvfM
	RoleSFRep     = "sf-rep"      // pfNsfM (e.g. en3f0pf0sf0)
	RoleSF        = "sf"          // an SF's own netdev (enp3s0f0s0), on its auxiliary device
	RoleVF        = "vf"          // netdev of an SR-IOV VF
	RoleBond      = "bond"        // a bonding master over the card's netdevs (LAG over p0/p1)
	RoleTmfifo    = "tmfifo"      // tmfifo_net0, RShim virtual Ethernet host<->Arm
	RoleOOB       = "oob"         // oob_net0, BlueField 1GbE management port
	RoleOther     = "netdev"      // anything else
)

// Inventory is every Mellanox PCI function of a host root.
type Inventory struct {
	SchemaVersion string     `json:"schemaVersion"`
	Side          string     `json:"side"`
	Functions     []Function `json:"functions"`
	// Netdevs not on a PCI function that matter on BlueField: tmfifo_net0, oob_net0.
	Netdevs []Netdev `json:"netdevs,omitempty"`
	// Bonds are the bonding masters of the functions' netdevs (bond0 over
	// p0/p1), by name.
	Bonds []Bond `json:"bonds,omitempty"`
}

// Function is one PCI function.
type Function struct {
	BDF        string `json:"bdf"`        // 0000:03:00.0
	VendorID   string `json:"vendorId"`   // 15b3
	DeviceID   string `json:"deviceId"`   // a2d6
	Revision   int    `json:"revision"`   // from `revision` (0x01 -> 1)
	Model      string `json:"model"`      // BlueField-2
	Family     string `json:"family"`     // BlueField | ConnectX
	Generation string `json:"generation"` // the NIC model this function belongs to (a VF: its PF's)
	Kind       string `json:"kind"`       // nic | vf | rshim | other
	// MSTType is mstflint's device type (BlueField2), "" when not a NIC function.
	MSTType string `json:"mstType,omitempty"`
	// MSTName is the name `mst start` gives the function: mt41686_pciconf0,
	// mt41686_pciconf0.1 for function 1 (§2.2, §2.3). NIC functions only.
	MSTName     string       `json:"mstName,omitempty"`
	NUMANode    int          `json:"numaNode"`
	Driver      string       `json:"driver,omitempty"`
	Link        *PCIeLink    `json:"pcieLink,omitempty"`
	SRIOV       *SRIOV       `json:"sriov,omitempty"`
	PhysFn      string       `json:"physfn,omitempty"` // VF: its PF's BDF
	EswitchMode string       `json:"eswitchMode,omitempty"`
	Netdevs     []Netdev     `json:"netdevs,omitempty"`
	RDMA        []RDMADevice `json:"rdma,omitempty"`
	// SFs are the function's scalable functions, each with its own netdev
	// and RDMA device (not in Netdevs/RDMA: those are the function's own).
	SFs []SF `json:"sfs,omitempty"`
}

// SF is a scalable function: an auxiliary device (mlx5_core.sf.<id>)
// under its PCI function, bound to mlx5_core.sf, with its own netdev and
// RDMA device beneath it (hardware-formats.md §11.2). The id is the
// auxiliary bus's, not the SF number.
type SF struct {
	Name   string `json:"name"`             // mlx5_core.sf.2
	SFNum  int    `json:"sfnum"`            // the eSwitch's SF number: its representor is pfNsf<sfnum>
	Driver string `json:"driver,omitempty"` // mlx5_core.sf
	// Representor is the SF's eSwitch representor on the same function
	// (en3f0pf0sf0), "" when none is there.
	Representor string       `json:"representor,omitempty"`
	Netdevs     []Netdev     `json:"netdevs,omitempty"`
	RDMA        []RDMADevice `json:"rdma,omitempty"`
}

// SF finds the function's SF by auxiliary device name.
func (f Function) SF(name string) (SF, bool) {
	for _, sf := range f.SFs {
		if sf.Name == name {
			return sf, true
		}
	}
	return SF{}, false
}

// Bond is a bonding master (bond_sysfs.c): its netdev, mode
// ("802.3ad 4") and slaves.
type Bond struct {
	Netdev
	Mode   string   `json:"mode"`
	Slaves []string `json:"slaves"`
}

// PCIeLink is the current and maximum link.
type PCIeLink struct {
	Current  LinkSpeed `json:"current"`
	Width    int       `json:"width"`
	Max      LinkSpeed `json:"max"`
	MaxWidth int       `json:"maxWidth"`
	// Degraded: trained below what the device supports (slot or riser).
	Degraded bool `json:"degraded"`
}

// SRIOV is the function's VF configuration.
type SRIOV struct {
	NumVFs   int      `json:"numVfs"`
	TotalVFs int      `json:"totalVfs"`
	VFs      []string `json:"vfs,omitempty"`
}

// Netdev is one network interface.
type Netdev struct {
	Name         string `json:"name"`
	Role         string `json:"role"`
	PhysPortName string `json:"physPortName,omitempty"`
	PhysSwitchID string `json:"physSwitchId,omitempty"`
	MAC          string `json:"mac,omitempty"`
	OperState    string `json:"operState"`
	AdminUp      bool   `json:"adminUp"`
	Ifindex      int    `json:"ifindex,omitempty"`
	MTU          int    `json:"mtu,omitempty"`
	// SpeedMbps from `speed`; -1 when unknown or unreadable.
	SpeedMbps int `json:"speedMbps"`
	// EswitchMode from compat/devlink/mode, when the kernel has it.
	EswitchMode string `json:"eswitchMode,omitempty"`
	// Master is the netdev's master (its `master` link): a bond, a
	// bridge, ovs-system (OvS's kernel datapath); "" when none.
	Master string `json:"master,omitempty"`
	// Device is what the netdev's `device` link names: its PCI function's
	// BDF or an auxiliary device (mlx5_core.sf.2); "" when it has none.
	Device string `json:"-"`
}

// RDMADevice is one /sys/class/infiniband device.
type RDMADevice struct {
	Name     string     `json:"name"`
	NodeGUID string     `json:"nodeGuid,omitempty"`
	Ports    []RDMAPort `json:"ports"`
}

// RDMAPort is one port of an RDMA device.
type RDMAPort struct {
	Device    string    `json:"device"`
	Port      int       `json:"port"`
	State     PortState `json:"state"`
	PhysState PortState `json:"physState"`
	LinkLayer string    `json:"linkLayer,omitempty"`
	Rate      string    `json:"rate,omitempty"`
	Netdev    string    `json:"netdev,omitempty"`
	// IB: lid, sm_lid, LMC, subnet prefix of an InfiniBand port; nil on
	// Ethernet (RoCE) ports, as in `rdma link`.
	IB *IBAddr `json:"ib,omitempty"`
}

// Active reports state 4: ACTIVE and phys_state 5: LinkUp.
func (p RDMAPort) Active() bool {
	return p.State.Num == StateActive && p.PhysState.Num == PhysLinkUp
}

// Scan inventories the host root. On the real root ("/") it maps RDMA
// devices with github.com/Mellanox/rdmamap (and netlink through it) and
// asks devlink for the eSwitch mode when the compat file is absent; under
// any other root it reads the same sysfs files itself.
func Scan(h *host.Host) (*Inventory, error) {
	return ScanContext(context.Background(), h)
}

// ScanContext is Scan with a context for the devlink query.
func ScanContext(ctx context.Context, h *host.Host) (*Inventory, error) {
	o := scanOpts{mapper: rootMapper{h}}
	if h.IsRealRoot() {
		o = scanOpts{mapper: rdmamapMapper{}, devlink: true}
	}
	return scan(ctx, h, o)
}

// scanOpts: which RDMA mapper, and whether devlink may be asked (only when
// the root is the live system: under a fixture root it would describe the
// machine rig runs on, not the fixture).
type scanOpts struct {
	mapper  rdmaMapper
	devlink bool
}

func scan(ctx context.Context, h *host.Host, o scanOpts) (*Inventory, error) {
	inv := &Inventory{SchemaVersion: SchemaVersion, Side: SideHost, Functions: []Function{}}
	ents, err := h.ReadDir("/sys/bus/pci/devices")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("smartnic: %s: %w (is sysfs mounted, or is --root a host root?)", h.Path("/sys/bus/pci/devices"), err)
		}
		return nil, fmt.Errorf("smartnic: %w", err)
	}
	for _, e := range ents {
		bdf := e.Name()
		dir := "/sys/bus/pci/devices/" + bdf
		v, err := h.ReadString(dir + "/vendor")
		if err != nil {
			continue // function vanished while scanning (hot unplug)
		}
		if id, err := ParseHexID(v); err != nil || id != VendorMellanox {
			continue
		}
		f, err := readFunction(ctx, h, o, bdf)
		if err != nil {
			return nil, err
		}
		inv.Functions = append(inv.Functions, f)
	}
	sort.Slice(inv.Functions, func(i, j int) bool { return inv.Functions[i].BDF < inv.Functions[j].BDF })
	assignGenerations(inv)
	assignMSTNames(inv)
	inv.Netdevs = platformNetdevs(h)
	inv.Bonds = readBonds(h, inv)
	inv.Side = detectSide(inv)
	assignRoles(inv)
	return inv, nil
}

func readFunction(ctx context.Context, h *host.Host, o scanOpts, bdf string) (Function, error) {
	dir := "/sys/bus/pci/devices/" + bdf
	f := Function{BDF: bdf, VendorID: "15b3", NUMANode: -1}
	ds, err := h.ReadString(dir + "/device")
	if err != nil {
		return f, fmt.Errorf("smartnic: %s: read device id: %w", bdf, err)
	}
	id, err := ParseHexID(ds)
	if err != nil {
		return f, fmt.Errorf("smartnic: %s: %w", bdf, err)
	}
	f.DeviceID = fmt.Sprintf("%04x", id)
	model, _ := LookupModel(id)
	f.Model, f.Family, f.Kind, f.MSTType = model.Name, model.Family, model.Kind, model.MSTType
	if s, err := h.ReadString(dir + "/revision"); err == nil {
		if r, err := ParseHexID(s); err == nil {
			f.Revision = int(r)
		}
	}
	if s, err := h.ReadString(dir + "/numa_node"); err == nil {
		if n, err := ParseInt(s); err == nil {
			f.NUMANode = n
		}
	}
	if l, err := h.Readlink(dir + "/driver"); err == nil {
		f.Driver = path.Base(l)
	}
	if l, err := h.Readlink(dir + "/physfn"); err == nil {
		f.PhysFn = path.Base(l)
		f.Kind = FunctionVF
	}
	f.Link = readLink(h, dir)
	f.SRIOV = readSRIOV(h, dir)
	f.Netdevs = readNetdevs(h, dir)
	rdma, err := readRDMA(h, o.mapper, bdf)
	if err != nil {
		return f, err
	}
	f.RDMA = rdma
	if f.SFs, err = readSFs(h, o.mapper, bdf); err != nil {
		return f, err
	}
	f.EswitchMode = eswitchMode(ctx, h, f, o.devlink)
	return f, nil
}

func readLink(h *host.Host, dir string) *PCIeLink {
	cs, err1 := h.ReadString(dir + "/current_link_speed")
	ms, err2 := h.ReadString(dir + "/max_link_speed")
	if err1 != nil && err2 != nil {
		return nil
	}
	l := &PCIeLink{}
	l.Current, _ = ParseLinkSpeed(cs)
	l.Max, _ = ParseLinkSpeed(ms)
	if s, err := h.ReadString(dir + "/current_link_width"); err == nil {
		l.Width, _ = ParseInt(s)
	}
	if s, err := h.ReadString(dir + "/max_link_width"); err == nil {
		l.MaxWidth, _ = ParseInt(s)
	}
	if l.Current.GTs > 0 && l.Max.GTs > 0 {
		l.Degraded = l.Current.GTs < l.Max.GTs || (l.Width > 0 && l.Width < l.MaxWidth)
	}
	return l
}

func readSRIOV(h *host.Host, dir string) *SRIOV {
	ts, err := h.ReadString(dir + "/sriov_totalvfs")
	if err != nil {
		return nil
	}
	s := &SRIOV{}
	s.TotalVFs, _ = ParseInt(ts)
	if ns, err := h.ReadString(dir + "/sriov_numvfs"); err == nil {
		s.NumVFs, _ = ParseInt(ns)
	}
	for i := 0; i < s.NumVFs; i++ {
		if l, err := h.Readlink(fmt.Sprintf("%s/virtfn%d", dir, i)); err == nil {
			s.VFs = append(s.VFs, path.Base(l))
		}
	}
	return s
}

// readNetdevs lists <pcidir>/net/* (sorted; sysfs readdir order is not).
func readNetdevs(h *host.Host, dir string) []Netdev {
	ents, err := h.ReadDir(dir + "/net")
	if err != nil {
		return nil
	}
	var out []Netdev
	for _, e := range ents {
		out = append(out, ReadNetdev(h, dir+"/net/"+e.Name()))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ReadNetdev reads one netdev's attributes from its sysfs dir (e.g.
// /sys/class/net/p0). Unreadable attributes stay empty (speed: -1).
func ReadNetdev(h *host.Host, dir string) Netdev {
	n := Netdev{Name: path.Base(dir), SpeedMbps: -1, OperState: "unknown"}
	rd := func(a string) string { s, _ := h.ReadString(dir + "/" + a); return s }
	n.PhysPortName = rd("phys_port_name")
	n.PhysSwitchID = rd("phys_switch_id")
	n.MAC = rd("address")
	if s := rd("operstate"); s != "" {
		n.OperState = s
	}
	if _, up, err := ParseNetFlags(rd("flags")); err == nil {
		n.AdminUp = up
	}
	n.Ifindex, _ = ParseInt(rd("ifindex"))
	n.MTU, _ = ParseInt(rd("mtu"))
	if v, err := ParseInt(rd("speed")); err == nil {
		n.SpeedMbps = v
	}
	n.EswitchMode = rd("compat/devlink/mode")
	if l, err := h.Readlink(dir + "/master"); err == nil {
		n.Master = path.Base(l)
	}
	if l, err := h.Readlink(dir + "/device"); err == nil {
		n.Device = path.Base(l)
	}
	return n
}

// platformNetdevs finds tmfifo_net0 / oob_net0 (not PCI functions).
func platformNetdevs(h *host.Host) []Netdev {
	var out []Netdev
	for _, name := range []string{"oob_net0", "tmfifo_net0"} {
		if _, err := h.Lstat("/sys/class/net/" + name); err != nil {
			continue
		}
		n := ReadNetdev(h, "/sys/class/net/"+name)
		out = append(out, n)
	}
	return out
}

func assignGenerations(inv *Inventory) {
	byBDF := map[string]*Function{}
	for i := range inv.Functions {
		byBDF[inv.Functions[i].BDF] = &inv.Functions[i]
	}
	for i := range inv.Functions {
		f := &inv.Functions[i]
		f.Generation = f.Model
		if pf, ok := byBDF[f.PhysFn]; ok && f.PhysFn != "" {
			f.Generation = pf.Model
			f.Family = pf.Family
		}
		if f.Kind == FunctionRShim {
			f.Generation = strings.TrimSuffix(f.Model, " RShim")
		}
	}
}

// pciDevice is the BDF minus the function: "0000:03:00".
func pciDevice(bdf string) string {
	if i := strings.LastIndex(bdf, "."); i > 0 {
		return bdf[:i]
	}
	return bdf
}

func pciFunction(bdf string) string {
	if i := strings.LastIndex(bdf, "."); i > 0 {
		return bdf[i+1:]
	}
	return "0"
}

// assignMSTNames names NIC functions the way `mst start` does: one
// mt<decimal id>_pciconf<N> per physical device (N counts devices of the
// same id in PCI order), ".F" appended for function F > 0 (§2.2, §2.3).
func assignMSTNames(inv *Inventory) {
	seen := map[string]int{} // base -> next index
	devIndex := map[string]int{}
	for i := range inv.Functions {
		f := &inv.Functions[i]
		if f.Kind != FunctionNIC {
			continue
		}
		id, _ := ParseHexID("0x" + f.DeviceID)
		base := MSTBase(id)
		key := base + "@" + pciDevice(f.BDF)
		n, ok := devIndex[key]
		if !ok {
			n = seen[base]
			seen[base]++
			devIndex[key] = n
		}
		f.MSTName = fmt.Sprintf("%s_pciconf%d", base, n)
		if fn := pciFunction(f.BDF); fn != "0" {
			f.MSTName += "." + fn
		}
	}
}

// BlueFields returns the BlueField NIC functions (not VFs, not RShim).
func (inv *Inventory) BlueFields() []Function {
	var out []Function
	for _, f := range inv.Functions {
		if m, _ := LookupModel(parseID(f.DeviceID)); m.IsBlueField() && f.Kind == FunctionNIC {
			out = append(out, f)
		}
	}
	return out
}

// BlueFieldDevices returns one function per BlueField device: the lowest
// numbered NIC function (function 0), which stands for the whole card in
// firmware configuration (mstconfig/mlxconfig settings are per device).
func (inv *Inventory) BlueFieldDevices() []*Function {
	var out []*Function
	seen := map[string]bool{}
	for i := range inv.Functions {
		f := &inv.Functions[i]
		if m, _ := LookupModel(parseID(f.DeviceID)); !m.IsBlueField() || f.Kind != FunctionNIC {
			continue
		}
		if d := pciDevice(f.BDF); !seen[d] {
			seen[d] = true
			out = append(out, f)
		}
	}
	return out
}

func parseID(s string) uint16 { id, _ := ParseHexID("0x" + s); return id }

// Function returns the function with this BDF ("0000:03:00.0" or "03:00.0").
func (inv *Inventory) Function(bdf string) (*Function, bool) {
	want, ok := pci.Canonical(bdf)
	if !ok {
		return nil, false
	}
	for i := range inv.Functions {
		if inv.Functions[i].BDF == want {
			return &inv.Functions[i], true
		}
	}
	return nil, false
}

// FindBlueField picks the BlueField to configure: the function with this
// BDF when bdf is set (error if it is not a BlueField), else function 0 of
// the only BlueField device (firmware config is per device, so .0 stands
// for both ports). More than one device without a BDF is an error that
// lists them.
func (inv *Inventory) FindBlueField(bdf string) (*Function, error) {
	if bdf != "" {
		f, ok := inv.Function(bdf)
		if !ok {
			return nil, fmt.Errorf("smartnic: no Mellanox PCI function %s (found: %s)", bdf, inv.bdfList())
		}
		if m, _ := LookupModel(parseID(f.DeviceID)); !m.IsBlueField() {
			return nil, fmt.Errorf("smartnic: %s is a %s, not a BlueField", f.BDF, f.Model)
		}
		return f, nil
	}
	devs := inv.BlueFieldDevices()
	switch len(devs) {
	case 0:
		return nil, fmt.Errorf("smartnic: no BlueField found under /sys/bus/pci/devices (Mellanox functions: %s); is the card seated and mlx5_core loaded?", inv.bdfList())
	case 1:
		return devs[0], nil
	}
	var names []string
	for _, d := range devs {
		names = append(names, d.BDF+" ("+d.Model+")")
	}
	return nil, fmt.Errorf("smartnic: %d BlueField devices (%s); name one by PCI address", len(devs), strings.Join(names, ", "))
}

func (inv *Inventory) bdfList() string {
	var s []string
	for _, f := range inv.Functions {
		s = append(s, f.BDF+" "+f.Model)
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// Ports lists every RDMA port of the inventory, sorted by device and port.
func (inv *Inventory) Ports() []RDMAPort {
	var out []RDMAPort
	for _, f := range inv.Functions {
		for _, d := range f.RDMA {
			out = append(out, d.Ports...)
		}
		for _, sf := range f.SFs {
			for _, d := range sf.RDMA {
				out = append(out, d.Ports...)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Device != out[j].Device {
			return lessDevName(out[i].Device, out[j].Device)
		}
		return out[i].Port < out[j].Port
	})
	return out
}

// lessDevName orders mlx5_2 before mlx5_10.
func lessDevName(a, b string) bool {
	pa, na := splitNum(a)
	pb, nb := splitNum(b)
	if pa != pb {
		return pa < pb
	}
	return na < nb
}

func splitNum(s string) (string, int) {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	n := 0
	for _, c := range s[i:] {
		n = n*10 + int(c-'0')
		if n > 1<<20 {
			break
		}
	}
	return s[:i], n
}
