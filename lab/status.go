package lab

import (
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"rig/internal/host"
	"rig/internal/labinfo"
	"rig/lab/card"
	"rig/lab/fwsim"
	"rig/mlxconfig"
	"rig/smartnic"
)

// StatusSchema names Status' JSON shape (rig lab list's is rig.lab.list/v1).
const StatusSchema = labinfo.SchemaVersion

// Status is one lab as the host sees it.
type Status struct {
	SchemaVersion string           `json:"schemaVersion"`
	Name          string           `json:"name"`
	Kind          string           `json:"kind"`
	Up            bool             `json:"up"`
	NetNS         string           `json:"netns"`
	WireNetNS     string           `json:"wireNetns"`
	StateDir      string           `json:"stateDir"`
	MountNS       string           `json:"mountNs"`
	FirmwareState string           `json:"firmwareState"`
	Netdevs       []NetdevStatus   `json:"netdevs"`
	Firmware      []FirmwareStatus `json:"firmware"`
	Processes     []Proc           `json:"processes"`
	// FarEnds is where the card netdevs' far ends are (FarEndsMachines,
	// FarEndsWire); Machines, with far ends on the machines, are the Arm,
	// the x86 host and the peer, each with what is alive in it.
	FarEnds  string          `json:"farEnds"`
	Machines []MachineStatus `json:"machines,omitempty"`
	// Kernel is the lab's SR-IOV kernel (nil when the lab has no record).
	Kernel *KernelStatus `json:"kernel,omitempty"`
	// Substitutions: what the lab stands in for hardware it cannot have
	// (the same as lab.json's, for people).
	Substitutions []string `json:"substitutions"`
	Problems      []string `json:"problems,omitempty"`
}

// NetdevStatus is one card netdev: the lab's veth, its far end (WireUp: the
// far end is up, wherever it is), its RDMA port.
type NetdevStatus struct {
	Name      string `json:"name"`
	AdminUp   bool   `json:"adminUp"`
	Carrier   bool   `json:"carrier"`
	WireUp    bool   `json:"wireUp"`
	FarEnd    FarEnd `json:"farEnd"`
	RDMAPort  string `json:"rdmaPort,omitempty"`
	PortState string `json:"portState,omitempty"`
	PhysState string `json:"physState,omitempty"`
}

// FirmwareStatus is one BlueField function's mode (ConnectX: no mode).
type FirmwareStatus struct {
	BDF      string `json:"bdf"`
	DeviceID string `json:"deviceId"`
	Current  string `json:"current,omitempty"`
	Next     string `json:"next,omitempty"`
	Pending  bool   `json:"pending"`
}

// StatusOf returns lab name's status; a lab with no state is an *Error
// with NotFound.
func StatusOf(name string) (*Status, error) {
	l, err := ForName(name)
	if err != nil {
		return nil, err
	}
	if _, err := os.Lstat(l.Dir); err != nil {
		return nil, notFound(name)
	}
	st := l.status()
	return &st, nil
}

// List returns every lab with state on this host.
func List() ([]Status, error) {
	names, err := Names()
	if err != nil {
		return nil, err
	}
	out := []Status{}
	for _, n := range names {
		out = append(out, Lab{Name: n, Dir: filepath.Join(StateRoot, n)}.status())
	}
	return out, nil
}

func (l Lab) status() Status {
	st := Status{SchemaVersion: StatusSchema, Name: l.Name, NetNS: l.NetNS(), WireNetNS: l.WireNetNS(),
		StateDir: l.Dir, MountNS: l.MntPath(), FirmwareState: l.FirmwareState(), Up: l.isUp(),
		Netdevs: []NetdevStatus{}, Firmware: []FirmwareStatus{}, Substitutions: Substitutions()}
	rec, err := l.readRecord()
	if err != nil {
		st.Problems = append(st.Problems, err.Error())
		return st
	}
	st.Kind = rec.Kind
	if !st.Up {
		st.Problems = append(st.Problems, "not up: a namespace or the mount namespace bind is missing; `rig lab down "+l.Name+"` removes the rest")
	}
	c, _ := card.Lookup(rec.Kind)
	st.FarEnds = rec.FarEnds
	if st.FarEnds == "" {
		st.FarEnds = FarEndsWire
	}
	st.Netdevs = l.netdevStatus(c, rec, &st.Problems)
	st.Firmware = l.firmwareStatus(&st.Problems)
	st.Kernel = l.kernelStatus(rec, c, &st.Problems)
	st.Processes = l.procs()
	if st.Processes == nil {
		st.Processes = []Proc{}
	}
	if st.Up {
		st.Problems = append(st.Problems, liveProblems(l.Name, st.Processes, procCmdline)...)
	}
	st.Machines = l.machinesStatus(rec, st.Processes, &st.Problems)
	return st
}

func (l Lab) netdevStatus(c card.Card, rec record, problems *[]string) []NetdevStatus {
	labH, err := host.NetlinkHandle(l.NetNS())
	if err != nil {
		*problems = append(*problems, fmt.Sprintf("netns: %v", err))
	}
	farH := map[string]*netlink.Handle{}
	out := []NetdevStatus{}
	for _, n := range c.Netdevs {
		ns := NetdevStatus{Name: n.Name, FarEnd: l.farEnd(c.Kind, n.Name, rec)}
		if labH != nil {
			if link, err := labH.LinkByName(n.Name); err == nil {
				ns.AdminUp = link.Attrs().Flags&net.FlagUp != 0
				ns.Carrier = link.Attrs().RawFlags&unix.IFF_LOWER_UP != 0
			} else {
				*problems = append(*problems, "netdev "+n.Name+": "+err.Error())
			}
		}
		h, seen := farH[ns.FarEnd.NetNS]
		if !seen {
			if h, err = host.NetlinkHandle(ns.FarEnd.NetNS); err != nil {
				*problems = append(*problems, fmt.Sprintf("netns: %v", err))
				h = nil
			}
			farH[ns.FarEnd.NetNS] = h
		}
		if h != nil {
			if link, err := h.LinkByName(ns.FarEnd.Name); err == nil {
				ns.WireUp = link.Attrs().Flags&net.FlagUp != 0
			}
		}
		if ib, ok := c.PortOf(n.Name); ok {
			rel, _ := filepath.Rel(l.CardRoot(), c.PortDir(l.CardRoot(), ib))
			ns.RDMAPort = ib.Name + "/1"
			ns.PortState = l.readCard(filepath.Join(rel, "state"))
			ns.PhysState = l.readCard(filepath.Join(rel, "phys_state"))
		}
		out = append(out, ns)
	}
	if labH != nil {
		labH.Delete()
	}
	for _, h := range farH {
		if h != nil {
			h.Delete()
		}
	}
	return out
}

func (l Lab) firmwareStatus(problems *[]string) []FirmwareStatus {
	fs, err := fwsim.New(l.FirmwareState()).Load()
	if err != nil {
		*problems = append(*problems, err.Error())
		return []FirmwareStatus{}
	}
	out := []FirmwareStatus{}
	for _, bdf := range slices.Sorted(maps.Keys(fs.Devices)) {
		d := fs.Devices[bdf]
		f := FirmwareStatus{BDF: bdf, DeviceID: d.DeviceID}
		cur, next := map[string]int64{}, map[string]int64{}
		for n, p := range d.Params {
			cur[n], next[n] = p.Current, p.Next
			f.Pending = f.Pending || p.Current != p.Next
		}
		id, _ := smartnic.ParseHexID("0x" + d.DeviceID)
		model, _ := smartnic.LookupModel(id)
		if gen, ok := mlxconfig.GenerationForModel(model.Name); ok {
			f.Current, f.Next = string(mlxconfig.Classify(gen, cur)), string(mlxconfig.Classify(gen, next))
		}
		out = append(out, f)
	}
	return out
}

// String is Status as text for people.
func (st Status) String() string {
	var b strings.Builder
	state := "up"
	if !st.Up {
		state = "NOT UP"
	}
	fmt.Fprintf(&b, "lab %s: %s (%s)\n", st.Name, st.Kind, state)
	fmt.Fprintf(&b, "  netns %s, wire netns %s, mount ns %s, far ends %s\n", st.NetNS, st.WireNetNS, st.MountNS, st.FarEnds)
	fmt.Fprintf(&b, "  firmware state %s\n", st.FirmwareState)
	for _, n := range st.Netdevs {
		far := "wire end"
		if n.FarEnd.Machine != "" && n.FarEnd.Machine != "wire" {
			far = n.FarEnd.Machine + " " + n.FarEnd.Name
		}
		fmt.Fprintf(&b, "  net %-12s admin %s  carrier %s  %s %s", n.Name, onOff(n.AdminUp, "up", "down"), onOff(n.Carrier, "yes", "no"), far, onOff(n.WireUp, "up", "down"))
		if n.RDMAPort != "" {
			fmt.Fprintf(&b, "  rdma %s: %s, %s", n.RDMAPort, n.PortState, n.PhysState)
		}
		b.WriteString("\n")
	}
	for _, f := range st.Firmware {
		fmt.Fprintf(&b, "  firmware %s [15b3:%s]", f.BDF, f.DeviceID)
		if f.Current != "" {
			fmt.Fprintf(&b, " mode %s, next boot %s", f.Current, f.Next)
		}
		if f.Pending {
			b.WriteString(" (pending: power-cycle to load)")
		}
		b.WriteString("\n")
	}
	if k := st.Kernel; k != nil {
		fmt.Fprintf(&b, "  kernel pid %d %s: sriov_numvfs and compat/devlink/mode of the card's PFs; log %s\n", k.PID, onOff(k.Running, "running", "NOT RUNNING"), k.Log)
		for _, pf := range k.PFs {
			fmt.Fprintf(&b, "  sriov %s: %s VFs", pf.BDF, pf.NumVFs)
			if pf.Eswitch != "" {
				fmt.Fprintf(&b, ", eswitch %s", pf.Eswitch)
			}
			if len(pf.Netdevs) > 0 {
				fmt.Fprintf(&b, ", netdevs %s", strings.Join(pf.Netdevs, " "))
			}
			b.WriteString("\n")
		}
	}
	for _, s := range st.Substitutions {
		fmt.Fprintf(&b, "  substitution: %s\n", s)
	}
	for _, p := range st.Processes {
		fmt.Fprintf(&b, "  process %d %s (%s)\n", p.PID, p.Comm, p.Where)
	}
	for _, m := range st.Machines {
		fmt.Fprintf(&b, "  machine %-4s %s: netns %s", m.Name, onOff(m.Up, "up", "NOT UP"), m.NetNS)
		if m.MountNS != "" {
			fmt.Fprintf(&b, ", mount ns %s", m.MountNS)
		}
		fmt.Fprintf(&b, ", %d process(es)", len(m.Processes))
		for _, p := range m.Processes {
			fmt.Fprintf(&b, " %d %s", p.PID, p.Comm)
		}
		b.WriteString("\n")
		for _, n := range m.Netdevs {
			fmt.Fprintf(&b, "    net %-14s admin %s  carrier %s", n.Name, onOff(n.AdminUp, "up", "down"), onOff(n.Carrier, "yes", "no"))
			if len(n.Addrs) > 0 {
				fmt.Fprintf(&b, "  %s", strings.Join(n.Addrs, " "))
			}
			if n.ArmEnd != "" {
				fmt.Fprintf(&b, "  <-> arm %s", n.ArmEnd)
			}
			b.WriteString("\n")
		}
	}
	for _, p := range st.Problems {
		fmt.Fprintf(&b, "  problem: %s\n", p)
	}
	return b.String()
}

func onOff(v bool, yes, no string) string {
	if v {
		return yes
	}
	return no
}
