package smartnic

import (
	"path"
	"sort"
	"strings"

	"rig/internal/host"
)

// readSFs finds the scalable functions of PCI function bdf: the
// auxiliary devices in its directory that carry an sfnum attribute (mlx5's
// sf/dev/dev.c gives SF devices exactly that one; NVIDIA's udev rule
// matches ATTRS{sfnum} the same way), each with its driver, the netdevs
// beneath it (<sf>/net) and its RDMA devices (/sys/bus/auxiliary/devices/
// <sf>/infiniband, what rdmamap reads). An unreadable sfnum reads -1.
func readSFs(h *host.Host, m rdmaMapper, bdf string) ([]SF, error) {
	dir := "/sys/bus/pci/devices/" + bdf
	ents, err := h.ReadDir(dir)
	if err != nil {
		return nil, nil // the function vanished; readFunction read it a moment ago
	}
	var out []SF
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		sfDir := dir + "/" + e.Name()
		s, err := h.ReadString(sfDir + "/sfnum")
		if err != nil {
			continue
		}
		sf := SF{Name: e.Name(), SFNum: -1}
		if n, err := ParseInt(s); err == nil && n >= 0 {
			sf.SFNum = n
		}
		if l, err := h.Readlink(sfDir + "/driver"); err == nil {
			sf.Driver = path.Base(l)
		}
		sf.Netdevs = readNetdevs(h, sfDir)
		sf.RDMA, err = readRDMADevices(h, m, bdf+" "+sf.Name, m.DevicesForAux(sf.Name), sfDir+"/net")
		if err != nil {
			return nil, err
		}
		out = append(out, sf)
	}
	sort.Slice(out, func(i, j int) bool { return lessDevName(out[i].Name, out[j].Name) })
	return out, nil
}

// readBonds reads the bonding masters of the inventory's netdevs: each
// distinct `master` that has a bonding/ directory (a bridge or OvS's
// ovs-system has none), with its mode and slaves (bond_sysfs.c: "%s %d",
// names separated by one space), sorted by name.
func readBonds(h *host.Host, inv *Inventory) []Bond {
	seen := map[string]bool{}
	var out []Bond
	visit := func(nds []Netdev) {
		for _, n := range nds {
			m := n.Master
			if m == "" || m == "." || m == ".." || seen[m] {
				continue
			}
			seen[m] = true
			dir := "/sys/class/net/" + m
			mode, err := h.ReadString(dir + "/bonding/mode")
			if err != nil {
				continue
			}
			slaves, _ := h.ReadString(dir + "/bonding/slaves")
			b := Bond{Netdev: ReadNetdev(h, dir), Mode: strings.TrimSpace(mode), Slaves: strings.Fields(slaves)}
			if b.Slaves == nil {
				b.Slaves = []string{}
			}
			out = append(out, b)
		}
	}
	for _, f := range inv.Functions {
		visit(f.Netdevs)
		for _, sf := range f.SFs {
			visit(sf.Netdevs)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
