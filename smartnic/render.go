package smartnic

import (
	"fmt"
	"io"
	"path"
	"sort"
	"strconv"
	"strings"
)

// MSTRow is one row of the `mst status -v` PCI device table.
type MSTRow struct {
	DeviceType string `json:"deviceType"` // BlueField2(rev:1)
	MST        string `json:"mst"`        // /dev/mst/mt41686_pciconf0.1
	PCI        string `json:"pci"`        // 03:00.1
	RDMA       string `json:"rdma"`       // mlx5_1
	Net        string `json:"net"`        // net-p1,net-pf1hpf
	NUMA       string `json:"numa"`       // -1
	BDF        string `json:"bdf"`
}

// MSTRows builds the `mst status -v` rows from the inventory: NIC physical
// functions only (VFs and RShim functions have no /dev/mst node here), in
// the order the real table lists them (mstOrder). PCI is the BDF without
// the 0000: domain, or with its domain on every row when any function has
// a non-zero domain, as MFT prints then (3rd-party samples: "0004:01:00.1";
// "0000:01:00.0" next to "0002:01:00.0" in a PCI column 16 wide).
// NET lists the function's netdevs as net-<if>, uplink first, then the
// host-PF representor, then SF and VF representors (the order of the
// sigcomm26 BlueField-3 sample's first row).
func MSTRows(inv *Inventory) []MSTRow {
	domains := false
	for _, f := range inv.Functions {
		if f.Kind == FunctionNIC && f.MSTName != "" && shortBDF(f.BDF) == f.BDF {
			domains = true // not in domain 0000
		}
	}
	var rows []MSTRow
	for _, f := range inv.Functions {
		if f.Kind != FunctionNIC || f.MSTName == "" {
			continue
		}
		r := mstRow(f)
		if domains {
			r.PCI = f.BDF
		}
		rows = append(rows, r)
	}
	sort.SliceStable(rows, func(i, j int) bool { return mstOrder(rows[i].MST, rows[j].MST) })
	return rows
}

func mstRow(f Function) MSTRow {
	typ := f.MSTType
	if typ == "" {
		typ = strings.ReplaceAll(f.Model, " ", "")
	}
	r := MSTRow{
		DeviceType: fmt.Sprintf("%s(rev:%d)", typ, f.Revision),
		MST:        "/dev/mst/" + f.MSTName,
		PCI:        shortBDF(f.BDF),
		NUMA:       strconv.Itoa(f.NUMANode),
		BDF:        f.BDF,
	}
	var rd []string
	for _, d := range f.RDMA {
		rd = append(rd, d.Name)
	}
	r.RDMA = strings.Join(rd, ",")
	nds := append([]Netdev(nil), f.Netdevs...)
	sort.SliceStable(nds, func(i, j int) bool { return roleRank(nds[i].Role) < roleRank(nds[j].Role) })
	var nets []string
	for _, n := range nds {
		nets = append(nets, "net-"+n.Name)
	}
	r.Net = strings.Join(nets, ",")
	return r
}

// mstOrder: does mst device a come before b in `mst status -v`? The table
// lists /dev/mst newest first: `mst start` creates the nodes walking its
// device-ID table (dev_id_database in MFT's mst script: ConnectX-3 0x1003 …
// ConnectX-8 0x1023, then BlueField 0xa2d2 … BlueField-4, ascending for
// every NIC ID rig knows) and, per ID, `lspci -d 15b3:ID` in PCI order,
// numbering cards 0, 1, … and suffixing .F for function F. Newest first
// is then: higher device ID first, higher card index first, function .1
// before .0, as every 3rd-party sample shows (ConnectX6 mt4123 above
// ConnectX5 mt4119; mt4123_pciconf1 above mt4123_pciconf0; mt4129_pciconf1.1,
// mt4129_pciconf1, mt4129_pciconf0.1, mt4129_pciconf0).
func mstOrder(a, b string) bool {
	ia, na, fa := splitMSTName(a)
	ib, nb, fb := splitMSTName(b)
	switch {
	case ia != ib:
		return ia > ib
	case na != nb:
		return na > nb
	}
	return fa > fb
}

// splitMSTName: "/dev/mst/mt41686_pciconf1.1" -> 41686, 1, 1.
func splitMSTName(m string) (id, card, fn int) {
	base := path.Base(m)
	stem, rest, _ := strings.Cut(base, "_pciconf")
	id, _ = strconv.Atoi(strings.TrimPrefix(stem, "mt"))
	c, f, _ := strings.Cut(rest, ".")
	card, _ = strconv.Atoi(c)
	fn, _ = strconv.Atoi(f)
	return id, card, fn
}

func roleRank(r string) int {
	switch r {
	case RoleUplink, RoleHostPF:
		return 0
	case RoleHostPFRep:
		return 1
	case RoleSFRep:
		return 2
	case RoleVFRep:
		return 3
	}
	return 4
}

// WriteMSTStatus prints what `mst status -v` prints: the "MST modules:"
// block of MFT's mst script (its print_status wording, for the modules'
// real state, MSTModules), then the PCI device table of mdevices_info
// (§2.2): columns padded like MFT's (DEVICE_TYPE 24, MST 30, PCI 10 or 16
// with PCI domains, RDMA 16, NET 40), a blank line after each row. A value
// wider than its column is followed by one space so columns stay separable
// (MFT would run them together).
//
// One difference is on purpose: MST names the node `mst start` creates
// (/dev/mst/mt41686_pciconf0), also while the modules are not loaded,
// where MFT prints "NA" in a narrower MST column. Scripts read the name
// from this column to pass to mlxconfig/flint -d; an "NA" would give them
// nothing, and the block above still says truthfully that the modules are
// not loaded (so a script that runs `mst start` on that line still does).
func WriteMSTStatus(w io.Writer, mods MSTModules, rows []MSTRow) error {
	var b strings.Builder
	b.WriteString(mods.lines())
	b.WriteString("PCI devices:\n------------\n")
	widths := mstWidths
	for _, r := range rows {
		if strings.Count(r.PCI, ":") == 2 { // domain:bus:dev.fn
			widths = mstWidthsDomain
		}
	}
	b.WriteString(mstLine(widths, "DEVICE_TYPE", "MST", "PCI", "RDMA", "NET", "NUMA"))
	for _, r := range rows {
		b.WriteString(mstLine(widths, r.DeviceType, r.MST, r.PCI, r.RDMA, r.Net, r.NUMA))
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

var (
	mstWidths       = []int{24, 30, 10, 16, 40}
	mstWidthsDomain = []int{24, 30, 16, 16, 40}
)

func mstLine(widths []int, cols ...string) string {
	var b strings.Builder
	for i, c := range cols {
		b.WriteString(c)
		if i < len(widths) {
			pad := widths[i] - len(c)
			if pad < 1 {
				pad = 1
			}
			b.WriteString(strings.Repeat(" ", pad))
		}
	}
	b.WriteString("\n")
	return b.String()
}

// RDMALink is one `rdma link` entry; JSON keys as `rdma -j link` (§4,
// iproute2 rdma/link.c), the InfiniBand ones only on InfiniBand ports.
type RDMALink struct {
	IfName        string  `json:"ifname"`
	Port          int     `json:"port"`
	SubnetPrefix  string  `json:"subnet_prefix,omitempty"`
	LID           *uint32 `json:"lid,omitempty"`
	SMLID         *uint32 `json:"sm_lid,omitempty"`
	LMC           *uint8  `json:"lmc,omitempty"`
	State         string  `json:"state"`
	PhysicalState string  `json:"physical_state"`
	Netdev        string  `json:"netdev,omitempty"`
	NetdevIndex   int     `json:"netdev_index,omitempty"`
	// Not in `rdma -j link`: the sysfs text, for diagnosis.
	SysfsState     string `json:"sysfsState"`
	SysfsPhysState string `json:"sysfsPhysState"`
}

// RDMALinks lists every RDMA port as `rdma link` would.
func RDMALinks(inv *Inventory) []RDMALink {
	idx := map[string]int{}
	for _, f := range inv.Functions {
		for _, n := range f.Netdevs {
			idx[n.Name] = n.Ifindex
		}
		for _, sf := range f.SFs {
			for _, n := range sf.Netdevs {
				idx[n.Name] = n.Ifindex
			}
		}
	}
	var out []RDMALink
	for _, p := range inv.Ports() {
		l := RDMALink{
			IfName:         p.Device,
			Port:           p.Port,
			State:          RDMAStateName(p.State.Num),
			PhysicalState:  RDMAPhysName(p.PhysState.Num),
			Netdev:         p.Netdev,
			NetdevIndex:    idx[p.Netdev],
			SysfsState:     p.State.String(),
			SysfsPhysState: p.PhysState.String(),
		}
		if ib := p.IB; ib != nil {
			lid, smlid, lmc := ib.LID, ib.SMLID, ib.LMC
			l.SubnetPrefix, l.LID, l.SMLID, l.LMC = ib.SubnetPrefix, &lid, &smlid, &lmc
		}
		out = append(out, l)
	}
	return out
}

// WriteRDMALinks prints iproute2's `rdma link` lines (rdma/link.c, §4):
// "link mlx5_0/1 ", on an InfiniBand port "subnet_prefix fe80:0000:0000:0000
// lid 42 sm_lid 1 lmc 0 " (decimal, "%u"), then "state ACTIVE
// physical_state LINK_UP " and "netdev p0 " when the port has one. Every
// field ends in a space, the last one too, before the newline: scripts
// that compare whole lines see what iproute2 prints.
func WriteRDMALinks(w io.Writer, links []RDMALink) error {
	var b strings.Builder
	for _, l := range links {
		fmt.Fprintf(&b, "link %s/%d ", l.IfName, l.Port)
		if l.SubnetPrefix != "" {
			fmt.Fprintf(&b, "subnet_prefix %s ", l.SubnetPrefix)
		}
		if l.LID != nil {
			fmt.Fprintf(&b, "lid %d ", *l.LID)
		}
		if l.SMLID != nil {
			fmt.Fprintf(&b, "sm_lid %d ", *l.SMLID)
		}
		if l.LMC != nil {
			fmt.Fprintf(&b, "lmc %d ", *l.LMC)
		}
		fmt.Fprintf(&b, "state %s physical_state %s ", l.State, l.PhysicalState)
		if l.Netdev != "" {
			fmt.Fprintf(&b, "netdev %s ", l.Netdev)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteInventory prints a human summary of the inventory.
func WriteInventory(w io.Writer, inv *Inventory) error {
	var b strings.Builder
	fmt.Fprintf(&b, "side: %s\n", inv.Side)
	if len(inv.Functions) == 0 {
		b.WriteString("no Mellanox/NVIDIA PCI functions (vendor 0x15b3) found\n")
	}
	for _, f := range inv.Functions {
		fmt.Fprintf(&b, "%s  %s [15b3:%s] rev %d  %s", f.BDF, f.Model, f.DeviceID, f.Revision, f.Kind)
		if f.MSTName != "" {
			fmt.Fprintf(&b, "  mst %s", f.MSTName)
		}
		fmt.Fprintf(&b, "  numa %d", f.NUMANode)
		if f.Driver != "" {
			fmt.Fprintf(&b, "  driver %s", f.Driver)
		}
		b.WriteString("\n")
		if l := f.Link; l != nil {
			fmt.Fprintf(&b, "    pcie: %s x%d (max %s x%d)", l.Current.Text, l.Width, l.Max.Text, l.MaxWidth)
			if l.Degraded {
				b.WriteString("  DEGRADED: trained below the device's maximum (check slot/riser)")
			}
			b.WriteString("\n")
		}
		if s := f.SRIOV; s != nil {
			fmt.Fprintf(&b, "    sriov: %d/%d VFs", s.NumVFs, s.TotalVFs)
			if len(s.VFs) > 0 {
				fmt.Fprintf(&b, " (%s)", strings.Join(s.VFs, ", "))
			}
			b.WriteString("\n")
		}
		if f.PhysFn != "" {
			fmt.Fprintf(&b, "    physfn: %s\n", f.PhysFn)
		}
		if f.EswitchMode != "" {
			fmt.Fprintf(&b, "    eswitch: %s\n", f.EswitchMode)
		}
		writeDevice(&b, "    ", f.Netdevs, f.RDMA)
		for _, sf := range f.SFs {
			writeSF(&b, sf)
		}
	}
	if len(inv.Netdevs) > 0 {
		// tmfifo_net0, oob_net0: on no PCI function, so under none of them
		b.WriteString("platform netdevs:\n")
		for _, n := range inv.Netdevs {
			writeNetdev(&b, "    ", n)
		}
	}
	if len(inv.Bonds) > 0 {
		b.WriteString("bonds:\n")
		for _, bd := range inv.Bonds {
			writeNetdev(&b, "    ", bd.Netdev)
			fmt.Fprintf(&b, "      mode %s, slaves %s\n", bd.Mode, strings.Join(bd.Slaves, " "))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeDevice prints one device's netdevs and RDMA ports.
func writeDevice(b *strings.Builder, indent string, nds []Netdev, rdma []RDMADevice) {
	for _, n := range nds {
		writeNetdev(b, indent, n)
	}
	for _, d := range rdma {
		for _, p := range d.Ports {
			fmt.Fprintf(b, "%srdma %s: state %s, phys_state %s", indent, p, p.State, p.PhysState)
			if p.Netdev != "" {
				fmt.Fprintf(b, ", netdev %s", p.Netdev)
			}
			b.WriteString("\n")
		}
	}
}

// writeSF prints a scalable function and, indented below it, its netdev
// and RDMA ports.
func writeSF(b *strings.Builder, sf SF) {
	fmt.Fprintf(b, "    sf %s: sfnum %d", sf.Name, sf.SFNum)
	if sf.Driver != "" {
		fmt.Fprintf(b, "  driver %s", sf.Driver)
	}
	if sf.Representor != "" {
		fmt.Fprintf(b, "  representor %s", sf.Representor)
	}
	b.WriteString("\n")
	writeDevice(b, "      ", sf.Netdevs, sf.RDMA)
}

func writeNetdev(b *strings.Builder, indent string, n Netdev) {
	admin := "down"
	if n.AdminUp {
		admin = "up"
	}
	fmt.Fprintf(b, "%snet %s (%s)  mac %s  admin %s  oper %s", indent, n.Name, n.Role, n.MAC, admin, n.OperState)
	if n.SpeedMbps >= 0 {
		fmt.Fprintf(b, "  speed %dMb/s", n.SpeedMbps)
	}
	if n.PhysPortName != "" {
		fmt.Fprintf(b, "  port %s", n.PhysPortName)
	}
	if n.Master != "" {
		fmt.Fprintf(b, "  master %s", n.Master)
	}
	b.WriteString("\n")
}
