package lab

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"rig/internal/host"
	"rig/lab/card"
)

// addVFs makes VFs 0..n-1 of p (its count is 0): the card tree's files,
// the lab view's links, the netdevs. A failure half way takes back what
// was made and leaves the count 0, as a failed sriov_numvfs write does.
func (k *kernel) addVFs(p *kpf, n int) {
	for i := 0; i < n; i++ {
		v, err := k.c.MakeVF(p.fn, i, p.mode == "switchdev")
		if err == nil {
			err = k.addVF(v)
		}
		if err != nil {
			k.log.Printf("mlx5_core %s: sriov_numvfs %d: VF %d: %v; VFs removed, sriov_numvfs stays 0", p.fn.BDF, n, i, err)
			p.vfs = append(p.vfs, v)
			k.removeVFs(p)
			return
		}
		p.vfs = append(p.vfs, v)
	}
	p.numvfs = n
	var names []string
	for _, v := range p.vfs {
		s := v.Fn.BDF + " " + v.Netdev.Name
		if v.Rep != nil {
			s += " (representor " + v.Rep.Name + ")"
		}
		names = append(names, s)
	}
	k.log.Printf("mlx5_core %s: sriov_numvfs 0 -> %d, eSwitch %s: VFs %s", p.fn.BDF, n, p.mode, strings.Join(names, ", "))
}

func (k *kernel) addVF(v card.VFSet) error {
	if err := k.c.WriteVF(k.l.CardRoot(), v, true); err != nil {
		return err
	}
	if err := viewLink("/sys/bus/pci/devices/"+v.Fn.BDF, "../../../devices/"+v.Fn.Path); err != nil {
		return err
	}
	for _, ib := range v.IB {
		if err := viewLink("/sys/class/infiniband/"+ib.Name, "../../devices/"+ib.Parent+"/infiniband/"+ib.Name); err != nil {
			return err
		}
	}
	if err := k.addNetdev(v.Netdev); err != nil {
		return err
	}
	if v.Rep != nil {
		return k.addNetdev(*v.Rep)
	}
	return nil
}

// removeVFs removes all of p's VFs, the last first (pci_iov_remove_virtfn's order).
func (k *kernel) removeVFs(p *kpf) {
	from := p.numvfs
	var errs []error
	for i := len(p.vfs) - 1; i >= 0; i-- {
		v := p.vfs[i]
		if v.Rep != nil {
			errs = append(errs, k.dropNetdev(v.Rep.Name))
		}
		errs = append(errs, k.dropNetdev(v.Netdev.Name), k.c.RemoveVF(k.l.CardRoot(), v), removeViewLink("/sys/bus/pci/devices/"+v.Fn.BDF))
		for _, ib := range v.IB {
			errs = append(errs, removeViewLink("/sys/class/infiniband/"+ib.Name))
		}
	}
	p.vfs, p.numvfs = nil, 0
	if err := errors.Join(errs...); err != nil {
		k.log.Printf("mlx5_core %s: sriov_numvfs %d -> 0: %v", p.fn.BDF, from, err)
		return
	}
	k.log.Printf("mlx5_core %s: sriov_numvfs %d -> 0: VFs removed", p.fn.BDF, from)
}

// viewLink makes a link in the lab's sysfs view when the view does not
// show it already (a directory of the view that is a snapshot, such as
// /sys/bus/pci/devices, does not show what the card tree gains).
func viewLink(p, target string) error {
	if _, err := os.Lstat(p); err == nil {
		return nil
	}
	if err := os.Symlink(target, p); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("view link %s: %w", p, err)
	}
	return nil
}

func removeViewLink(p string) error {
	if fi, err := os.Lstat(p); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		return nil
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("view link %s: %w", p, err)
	}
	return nil
}

// addNetdev makes a VF's netdev or representor as the card's other
// netdevs are made: a veth in the lab, its far end in the wire namespace,
// and the card's attributes over its sysfs dir.
func (k *kernel) addNetdev(n card.Netdev) error {
	labH, err := host.NetlinkHandle(k.l.NetNS())
	if err != nil {
		return err
	}
	defer labH.Delete()
	wireH, err := host.NetlinkHandle(k.l.WireNetNS())
	if err != nil {
		return err
	}
	defer wireH.Delete()
	wireNS, err := netns.GetFromName(k.l.WireNetNS())
	if err != nil {
		return err
	}
	defer wireNS.Close()
	if err := addCardVeth(labH, wireH, wireNS, k.c, n, FarEnd{NetNS: k.l.WireNetNS(), Name: n.Name}); err != nil {
		return err
	}
	return k.l.overlayNetdev(k.c, n)
}

// addCardVeth creates card netdev n as a veth in labH's namespace (the
// card's name, MAC and, when free, ifindex) with its peer fe in farH's
// namespace (the wire's, same-named, or a machine's); the far end up, the
// lab end as the card has it.
func addCardVeth(labH, farH *netlink.Handle, farNS netns.NsHandle, c card.Card, n card.Netdev, fe FarEnd) error {
	mac, err := net.ParseMAC(n.MAC)
	if err != nil {
		return fmt.Errorf("card %s: netdev %s: %w", c.Kind, n.Name, err)
	}
	v := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: n.Name, HardwareAddr: mac, Index: n.Ifindex},
		PeerName: fe.Name, PeerNamespace: netlink.NsFd(int(farNS))}
	if fe.MAC != "" {
		if v.PeerHardwareAddr, err = net.ParseMAC(fe.MAC); err != nil {
			return fmt.Errorf("far end %s of %s: %w", fe.Name, n.Name, err)
		}
	}
	err = labH.LinkAdd(v)
	if (errors.Is(err, unix.EBUSY) || errors.Is(err, unix.EEXIST)) && n.Ifindex != 0 {
		if _, lerr := labH.LinkByName(n.Name); lerr != nil { // the ifindex is taken, not the name
			v.Index = 0
			err = labH.LinkAdd(v)
		}
	}
	if err != nil {
		return fmt.Errorf("veth %s: %w", n.Name, err)
	}
	if err := setUp(farH, fe.Name, true); err != nil {
		return err
	}
	return setUp(labH, n.Name, n.AdminUp())
}

// dropNetdev removes a VF netdev or representor: the card's attributes
// bound over its sysfs dir, then the veth (its far end goes with it).
func (k *kernel) dropNetdev(name string) error {
	p := filepath.Join("/sys/devices/virtual/net", name)
	if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount %s: %w", p, err)
	}
	labH, err := host.NetlinkHandle(k.l.NetNS())
	if err != nil {
		return err
	}
	defer labH.Delete()
	link, err := labH.LinkByName(name)
	if err != nil {
		return nil // already gone
	}
	if err := labH.LinkDel(link); err != nil {
		return fmt.Errorf("delete %s: %w", name, err)
	}
	return nil
}
