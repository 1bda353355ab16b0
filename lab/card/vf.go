package card

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// SR-IOV: what a write to a PF's sriov_numvfs makes, as data (the lab's
// kernel, package lab, renders it and makes the netdevs live). Formats and
// sources: testdata/hosts/README.md.

// VFSet is one VF with what the kernel makes for it: the PCI function,
// its netdev, the RDMA devices the card table hangs off it, and in
// switchdev mode its representor on the PF.
type VFSet struct {
	PF     Fn
	Index  int
	Fn     Fn
	Netdev Netdev
	IB     []IB
	Rep    *Netdev
}

// SRIOVPFs lists the card's PFs with SR-IOV attributes, in table order.
func (c Card) SRIOVPFs() []Fn {
	var out []Fn
	for _, f := range c.Fns {
		if f.TotalVFs != "" {
			out = append(out, f)
		}
	}
	return out
}

// Uplink is a PF's own netdev (phys_port_name pN; else its only netdev
// with a compat/devlink/mode), false when it has none.
func (c Card) Uplink(pf Fn) (Netdev, bool) {
	for _, n := range c.Netdevs {
		if n.Parent == pf.Path && (uplinkPPN.MatchString(n.PPN) || n.Mode != "") {
			return n, true
		}
	}
	return Netdev{}, false
}

var (
	uplinkPPN = regexp.MustCompile(`^p(\d+)$`)
	npSuffix  = regexp.MustCompile(`np\d+$`)
)

// VFBDF is VF i's address: the PF's routing ID plus sriov_offset plus i
// times sriov_stride (drivers/pci/iov.c pci_iov_virtfn_bus/_devfn).
func VFBDF(pf Fn, i int) (string, error) {
	var dom, bus, dev, fn int
	if _, err := fmt.Sscanf(pf.BDF, "%04x:%02x:%02x.%x", &dom, &bus, &dev, &fn); err != nil {
		return "", fmt.Errorf("PF %q: %w", pf.BDF, err)
	}
	off, err1 := strconv.Atoi(pf.VFOffset)
	stride, err2 := strconv.Atoi(pf.VFStride)
	if err1 != nil || err2 != nil {
		return "", fmt.Errorf("PF %s: sriov_offset %q / sriov_stride %q: not numbers", pf.BDF, pf.VFOffset, pf.VFStride)
	}
	rid := bus<<8 | dev<<3 | fn
	rid += off + i*stride
	return fmt.Sprintf("%04x:%02x:%02x.%x", dom, rid>>8&0xff, rid>>3&0x1f, rid&7), nil
}

// pathName is the PF's udev path name (systemd's ID_NET_NAME_PATH less
// the np<N> suffix, as NVIDIA's vf-net-link-name.sh strips it):
// enp59s0f0np0 → enp59s0f0; for an uplink not named so, from the address.
func pathName(pf Fn, uplink Netdev) string {
	if strings.HasPrefix(uplink.Name, "en") && npSuffix.MatchString(uplink.Name) {
		return npSuffix.ReplaceAllString(uplink.Name, "")
	}
	var dom, bus, dev, fn int
	fmt.Sscanf(pf.BDF, "%04x:%02x:%02x.%x", &dom, &bus, &dev, &fn)
	return fmt.Sprintf("enp%ds%df%d", bus, dev, fn)
}

// MakeVF describes VF i of pf as the kernel makes it. A VF the card table
// has (cx6dx-host's two) comes back as the table has it; others get the
// names NVIDIA's udev helper gives (VF netdev <path>v<i>, representor
// <path>_<i>; on a BlueField Arm the representor takes its phys_port_name)
// and locally administered MACs.
func (c Card) MakeVF(pf Fn, i int, switchdev bool) (VFSet, error) {
	bdf, err := VFBDF(pf, i)
	if err != nil {
		return VFSet{}, err
	}
	up, _ := c.Uplink(pf)
	path := filepath.Dir(pf.Path) + "/" + bdf
	v := VFSet{PF: pf, Index: i, Fn: Fn{Path: path, BDF: bdf, Device: "0x" + pf.VFDevice, Revision: pf.Revision, NUMA: pf.NUMA,
		CurSpeed: "Unknown", CurWidth: "255", MaxSpeed: "Unknown", MaxWidth: "255", Class: pf.Class}}
	rid := macBytes(bdf)
	v.Netdev = Netdev{Parent: path, Name: fmt.Sprintf("%sv%d", pathName(pf, up), i), MAC: "02:15:" + rid + ":00",
		Oper: "up", Flags: FlagsUp, Carrier: "1", Speed: up.Speed}
	for _, n := range c.Netdevs {
		if n.Parent == path {
			v.Netdev = n
		}
	}
	for _, ib := range c.IB {
		if ib.Parent == path {
			v.IB = append(v.IB, ib)
		}
	}
	if switchdev {
		pfnum := pf.BDF[len(pf.BDF)-1:]
		if m := uplinkPPN.FindStringSubmatch(up.PPN); m != nil {
			pfnum = m[1]
		}
		ppn := fmt.Sprintf("pf%svf%d", pfnum, i)
		name := fmt.Sprintf("%s_%d", pathName(pf, up), i)
		if !strings.HasPrefix(up.Name, "en") { // a BlueField Arm: after the host's VF representors
			ppn = fmt.Sprintf("pf%svf%d", pfnum, i+c.hostVFReps(pf, pfnum))
			name = ppn
		}
		v.Rep = &Netdev{Parent: pf.Path, Name: name, MAC: "02:15:" + rid + ":01", Oper: "up", Flags: FlagsUp, Carrier: "1",
			PPN: ppn, SWID: up.SWID}
	}
	return v, nil
}

// hostVFReps is how many VF representors the card table has on pf (a
// BlueField Arm's representors of the host's VFs): the Arm's own VFs'
// representors are numbered after them (hardware-formats.md §3; there the
// count is the host's NUM_OF_VFS, here the representors the table has).
func (c Card) hostVFReps(pf Fn, pfnum string) int {
	re := regexp.MustCompile(`^(c\d+)?pf` + pfnum + `vf(\d+)$`)
	n := 0
	for _, d := range c.Netdevs {
		if m := re.FindStringSubmatch(d.PPN); d.Parent == pf.Path && m != nil {
			if k, _ := strconv.Atoi(m[2]); k+1 > n {
				n = k + 1
			}
		}
	}
	return n
}

// macBytes is a VF's bus, device and function as three MAC bytes.
func macBytes(bdf string) string {
	var dom, bus, dev, fn int
	fmt.Sscanf(bdf, "%04x:%02x:%02x.%x", &dom, &bus, &dev, &fn)
	return fmt.Sprintf("%02x:%02x:%02x", bus, dev, fn)
}

// WriteVF renders v under root as the kernel shows it (lab as in Write):
// the VF function with physfn, the PF's virtfnN, /sys/bus/pci/devices,
// its netdev, its RDMA devices and its representor.
func (c Card) WriteVF(root string, v VFSet, lab bool) error {
	t := &tree{root: root}
	t.pcifn(v.Fn)
	t.lnk("../"+v.Fn.BDF, fmt.Sprintf("sys/devices/%s/virtfn%d", v.PF.Path, v.Index))
	t.lnk("../"+filepath.Base(v.PF.Path), "sys/devices/"+v.Fn.Path+"/physfn")
	t.netdev(v.Netdev, lab)
	for _, ib := range v.IB {
		t.ibdev(ib)
	}
	if v.Rep != nil {
		t.netdev(*v.Rep, lab)
	}
	if t.err != nil {
		return fmt.Errorf("card %s: VF %s: %w", c.Kind, v.Fn.BDF, t.err)
	}
	return nil
}

// RemoveVF removes what WriteVF wrote (and the card table's own VF, when
// the kernel takes it away).
func (c Card) RemoveVF(root string, v VFSet) error {
	paths := []string{fmt.Sprintf("sys/devices/%s/virtfn%d", v.PF.Path, v.Index), "sys/bus/pci/devices/" + v.Fn.BDF,
		"sys/devices/" + v.Fn.Path}
	for _, ib := range v.IB {
		paths = append(paths, "sys/class/infiniband/"+ib.Name)
	}
	if v.Rep != nil {
		paths = append(paths, "sys/devices/"+v.Rep.Parent+"/net/"+v.Rep.Name, "sys/class/net/"+v.Rep.Name)
	}
	paths = append(paths, "sys/class/net/"+v.Netdev.Name)
	for _, p := range paths {
		if err := os.RemoveAll(filepath.Join(root, p)); err != nil {
			return fmt.Errorf("card %s: VF %s: %w", c.Kind, v.Fn.BDF, err)
		}
	}
	return nil
}
