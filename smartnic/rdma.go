package smartnic

import (
	"context"
	"fmt"
	"sort"
	"strconv"

	"github.com/Mellanox/rdmamap"

	"rig/internal/host"
)

// rdmaMapper finds the RDMA devices of a PCI function, their ports and the
// RDMA device of a netdev. rdmamap reads fixed /sys paths and asks netlink
// in the current network namespace, so it serves only the real root;
// rootMapper reads the same files under any host root (lab-notes.md).
type rdmaMapper interface {
	DevicesForPCI(bdf string) []string
	// DevicesForAux: the RDMA devices of an auxiliary device (an SF's
	// mlx5_core.sf.2), from /sys/bus/auxiliary/devices/<name>/infiniband.
	DevicesForAux(name string) []string
	Ports(dev string) []string
	DeviceForNetdev(netdev string) (string, error)
}

// rdmamapMapper is github.com/Mellanox/rdmamap, for the real root only.
type rdmamapMapper struct{}

func (rdmamapMapper) DevicesForPCI(bdf string) []string { return rdmamap.GetRdmaDevicesForPcidev(bdf) }
func (rdmamapMapper) DevicesForAux(name string) []string {
	return rdmamap.GetRdmaDevicesForAuxdev(name)
}
func (rdmamapMapper) Ports(dev string) []string { return rdmamap.GetPorts(dev) }
func (rdmamapMapper) DeviceForNetdev(n string) (string, error) {
	return rdmamap.GetRdmaDeviceForNetdevice(n)
}

// rootMapper reads what rdmamap reads, under the host root: the real
// directories <pcidir>/infiniband/* and <auxdir>/infiniband/*,
// /sys/class/infiniband/<dev>/ports/*, and ports/*/gid_attrs/ndevs/* for
// the netdev of each GID.
type rootMapper struct{ h *host.Host }

func (m rootMapper) DevicesForPCI(bdf string) []string {
	return m.devicesIn("/sys/bus/pci/devices/" + bdf + "/infiniband")
}

func (m rootMapper) DevicesForAux(name string) []string {
	return m.devicesIn("/sys/bus/auxiliary/devices/" + name + "/infiniband")
}

func (m rootMapper) devicesIn(dir string) []string {
	ents, err := m.h.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() { // rdmamap keeps directories only
			out = append(out, e.Name())
		}
	}
	return out
}

func (m rootMapper) Ports(dev string) []string {
	ents, err := m.h.ReadDir("/sys/class/infiniband/" + dev + "/ports")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func (m rootMapper) DeviceForNetdev(netdev string) (string, error) {
	ents, _ := m.h.ReadDir("/sys/class/infiniband")
	for _, d := range ents {
		for _, p := range m.Ports(d.Name()) {
			if portNetdev(m.h, d.Name(), p) == netdev {
				return d.Name(), nil
			}
		}
	}
	return "", fmt.Errorf("rdma device not found for netdev %v", netdev)
}

// portNetdev is the netdev named by the port's GID attributes ("" for IB
// ports or when none is set). Unused GID entries fail to read; skip them.
func portNetdev(h *host.Host, dev, port string) string {
	dir := "/sys/class/infiniband/" + dev + "/ports/" + port + "/gid_attrs/ndevs"
	ents, err := h.ReadDir(dir)
	if err != nil {
		return ""
	}
	idx := make([]int, 0, len(ents))
	for _, e := range ents {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			idx = append(idx, n)
		}
	}
	sort.Ints(idx)
	for _, n := range idx {
		if s, err := h.ReadString(fmt.Sprintf("%s/%d", dir, n)); err == nil && s != "" {
			return s
		}
	}
	return ""
}

// readRDMA reads the RDMA devices of PCI function bdf.
func readRDMA(h *host.Host, m rdmaMapper, bdf string) ([]RDMADevice, error) {
	return readRDMADevices(h, m, bdf, m.DevicesForPCI(bdf), "/sys/bus/pci/devices/"+bdf+"/net")
}

// readRDMADevices reads the named RDMA devices of one device (owner, for
// messages: "0000:03:00.0", "0000:03:00.0 mlx5_core.sf.2") whose netdevs
// are in netDir.
func readRDMADevices(h *host.Host, m rdmaMapper, owner string, names []string, netDir string) ([]RDMADevice, error) {
	sort.Slice(names, func(i, j int) bool { return lessDevName(names[i], names[j]) })
	var out []RDMADevice
	for _, name := range names {
		d := RDMADevice{Name: name}
		d.NodeGUID, _ = h.ReadString("/sys/class/infiniband/" + name + "/node_guid")
		ports := m.Ports(name)
		nums := make([]int, 0, len(ports))
		for _, p := range ports {
			if n, err := strconv.Atoi(p); err == nil {
				nums = append(nums, n)
			}
		}
		sort.Ints(nums)
		for _, n := range nums {
			p, err := ReadPort(h, name, n)
			if err != nil {
				return nil, fmt.Errorf("smartnic: %s: %w", owner, err)
			}
			d.Ports = append(d.Ports, p)
		}
		out = append(out, d)
	}
	fillPortNetdevs(h, m, netDir, out)
	return out, nil
}

// fillPortNetdevs: when a port's GID table names no netdev (no GIDs yet),
// ask the mapper which RDMA device each of the device's netdevs (in
// netDir) belongs to (rdmamap: netlink + GID table); a single-port device
// with exactly one matching netdev gets it.
func fillPortNetdevs(h *host.Host, m rdmaMapper, netDir string, devs []RDMADevice) {
	var netdevs []string
	if ents, err := h.ReadDir(netDir); err == nil {
		for _, e := range ents {
			netdevs = append(netdevs, e.Name())
		}
	}
	for i := range devs {
		d := &devs[i]
		if len(d.Ports) != 1 || d.Ports[0].Netdev != "" {
			continue
		}
		var match []string
		for _, n := range netdevs {
			if dev, err := m.DeviceForNetdev(n); err == nil && dev == d.Name {
				match = append(match, n)
			}
		}
		if len(match) == 1 {
			d.Ports[0].Netdev = match[0]
		}
	}
}

// ReadPort reads /sys/class/infiniband/<dev>/ports/<port>: state,
// phys_state, link_layer, rate, the netdev from the GID table and, on an
// InfiniBand port, lid, sm_lid, LMC and subnet prefix (readIBAddr).
func ReadPort(h *host.Host, dev string, port int) (RDMAPort, error) {
	dir := fmt.Sprintf("/sys/class/infiniband/%s/ports/%d", dev, port)
	p := RDMAPort{Device: dev, Port: port}
	s, err := h.ReadString(dir + "/state")
	if err != nil {
		return p, fmt.Errorf("rdma %s/%d: read state: %w", dev, port, err)
	}
	if p.State, err = ParsePortState(s); err != nil {
		return p, fmt.Errorf("rdma %s/%d: %w", dev, port, err)
	}
	s, err = h.ReadString(dir + "/phys_state")
	if err != nil {
		return p, fmt.Errorf("rdma %s/%d: read phys_state: %w", dev, port, err)
	}
	if p.PhysState, err = ParsePortState(s); err != nil {
		return p, fmt.Errorf("rdma %s/%d: %w", dev, port, err)
	}
	p.LinkLayer, _ = h.ReadString(dir + "/link_layer")
	p.Rate, _ = h.ReadString(dir + "/rate")
	p.Netdev = portNetdev(h, dev, strconv.Itoa(port))
	if p.IB, err = readIBAddr(h, dir, p.LinkLayer); err != nil {
		return p, fmt.Errorf("rdma %s/%d: %w", dev, port, err)
	}
	return p, nil
}

// eswitchMode: the uplink's compat/devlink/mode file when present (MLNX_OFED
// kernels, DPDK mlx5.rst); else, on the real root only, `devlink dev
// eswitch show pci/<bdf>` through the exec seam. "" when not readable (no
// devlink, a VF, a device without eSwitch).
func eswitchMode(ctx context.Context, h *host.Host, f Function, devlink bool) string {
	if f.Kind != FunctionNIC {
		return ""
	}
	for _, n := range f.Netdevs {
		if n.EswitchMode != "" {
			return n.EswitchMode
		}
	}
	if !devlink || len(f.Netdevs) == 0 {
		return ""
	}
	out, err := h.Run(ctx, "devlink", "dev", "eswitch", "show", "pci/"+f.BDF)
	if err != nil {
		return ""
	}
	mode, err := ParseEswitchShow(string(out))
	if err != nil {
		return ""
	}
	return mode
}

// NetdevPort finds the RDMA port whose netdev is name.
func (inv *Inventory) NetdevPort(name string) (RDMAPort, bool) {
	for _, p := range inv.Ports() {
		if p.Netdev == name {
			return p, true
		}
	}
	return RDMAPort{}, false
}

// devName for messages: "mlx5_0/1".
func (p RDMAPort) String() string { return p.Device + "/" + strconv.Itoa(p.Port) }

func (rdmamapMapper) rdmaDeviceList() []string { return rdmamap.GetRdmaDeviceList() }
