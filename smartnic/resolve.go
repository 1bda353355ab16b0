package smartnic

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"

	"rig/internal/labinfo"
	"rig/internal/pci"
)

// AFPacketDriver is the DPDK PMD a virtual lab puts in place of mlx5: it
// carries real frames over a kernel netdev (the lab's veths).
const AFPacketDriver = "net_af_packet"

// NetdevReader is what resolving a netdev reads of the machine: sysfs under
// the host root (internal/host.Host is one).
type NetdevReader interface {
	Exists(p string) bool
	Path(p string) string
	Readlink(p string) (string, error)
	ReadFile(p string) ([]byte, error)
}

// MLX5Driver is the kernel driver of every mlx5 PCI function; the mlx5
// PMD is bifurcated and needs it bound (hardware-formats.md §8).
const MLX5Driver = "mlx5_core"

// PortKind is what a netdev's phys_port_name says it is (§4, §11.4).
type PortKind int

const (
	PortNone   PortKind = iota // no phys_port_name (a VF's or SF's own netdev, a veth)
	PortUplink                 // pN: the physical port
	PortHostPF                 // pfN or cCpfN: BlueField host-PF representor (pfNhpf)
	PortVFRep                  // pfNvfM or cCpfNvfM: VF representor
	PortSFRep                  // pfNsfM or cCpfNsfM: SF representor
	PortOther                  // anything else (split ports pNsM, unknown forms)
)

// PhysPort is a parsed phys_port_name.
type PhysPort struct {
	Kind       PortKind
	Controller int // cN prefix; -1 when absent
	PF         int // pN / pfN
	Index      int // vfM / sfM
}

// ParsePhysPortName reads a netdev's phys_port_name (the kernel's
// __devlink_port_phys_port_name_get forms, §11.4): "p0", "pf0",
// "pf0vf3", "pf0sf88", each representor form with an optional
// controller prefix ("c1pf0"). "" is PortNone; a form it does not know is
// PortOther, never an error (the caller explains it).
func ParsePhysPortName(s string) PhysPort {
	p := PhysPort{Controller: -1}
	s = strings.TrimSpace(s)
	if s == "" {
		return p
	}
	p.Kind = PortOther
	rest := s
	if strings.HasPrefix(rest, "c") {
		n, tail, ok := leadingNumber(rest[1:])
		if !ok || !strings.HasPrefix(tail, "pf") {
			return p
		}
		p.Controller, rest = n, tail
	}
	if strings.HasPrefix(rest, "pf") {
		n, tail, ok := leadingNumber(rest[2:])
		if !ok {
			return p
		}
		p.PF = n
		switch {
		case tail == "":
			p.Kind = PortHostPF
		case strings.HasPrefix(tail, "vf") || strings.HasPrefix(tail, "sf"):
			m, end, ok := leadingNumber(tail[2:])
			if !ok || end != "" {
				return p
			}
			p.Index, p.Kind = m, PortVFRep
			if tail[0] == 's' {
				p.Kind = PortSFRep
			}
		}
		return p
	}
	if p.Controller < 0 && strings.HasPrefix(rest, "p") {
		if n, tail, ok := leadingNumber(rest[1:]); ok && tail == "" {
			p.Kind, p.PF = PortUplink, n
		}
	}
	return p
}

// leadingNumber splits a decimal number (at most 5 digits, as the kernel's
// u16/u32 port numbers print in practice) off the front of s.
func leadingNumber(s string) (int, string, bool) {
	i := 0
	for i < len(s) && i < 6 && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 || i > 5 {
		return 0, s, false
	}
	n, err := strconv.Atoi(s[:i])
	return n, s[i:], err == nil
}

// NetdevFunction is what sysfs says about a netdev: its PCI function,
// that function's driver and its phys_port_name.
type NetdevFunction struct {
	Netdev       string
	BDF          string // "" when the netdev has no PCI function
	Device       string // the `device` link's target name ("" when none)
	Driver       string
	PhysPortName string
}

// String says what was found, for messages.
func (f NetdevFunction) String() string {
	switch {
	case f.Device == "":
		return "no device link (a virtual netdev: veth, bridge, tap, ...)"
	case f.BDF == "":
		return fmt.Sprintf("device %s, not a PCI function (an SF's auxiliary device or a platform device)", f.Device)
	}
	drv := f.Driver
	if drv == "" {
		drv = "no driver bound"
	}
	ppn := f.PhysPortName
	if ppn == "" {
		ppn = "none"
	}
	return fmt.Sprintf("PCI function %s, driver %s, phys_port_name %s", f.BDF, drv, ppn)
}

// ReadNetdevFunction reads /sys/class/net/NETDEV under the host root: the
// `device` link (its target names the PCI function), the function's
// `driver` link and phys_port_name (absent or unreadable: "").
func ReadNetdevFunction(h NetdevReader, netdev string) (NetdevFunction, error) {
	f := NetdevFunction{Netdev: netdev}
	if netdev == "" || netdev == "." || netdev == ".." || strings.ContainsAny(netdev, "/\x00") {
		return f, fmt.Errorf("%q is not a netdev name", netdev)
	}
	dir := "/sys/class/net/" + netdev
	if !h.Exists(dir) {
		return f, fmt.Errorf("no netdev %s (%s does not exist)", netdev, h.Path(dir))
	}
	target, err := h.Readlink(dir + "/device")
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("netdev %s: %w", netdev, err)
	}
	f.Device = path.Base(target)
	if bdf, ok := pci.Canonical(f.Device); ok {
		f.BDF = bdf
	}
	if drv, err := h.Readlink(dir + "/device/driver"); err == nil {
		f.Driver = path.Base(drv)
	}
	if b, err := h.ReadFile(dir + "/phys_port_name"); err == nil {
		f.PhysPortName = strings.TrimSpace(string(b))
	}
	return f, nil
}

// NetdevError is a netdev rig cannot resolve to mlx5 devargs.
type NetdevError struct {
	Netdev  string
	Found   string
	Why     string
	FixText string
}

func (e *NetdevError) Error() string {
	return fmt.Sprintf("netdev %s: %s (found: %s)", e.Netdev, e.Why, e.Found)
}

// Cause is what the netdev is, as found in sysfs.
func (e *NetdevError) Cause() string { return e.Found }

// Fix says what to write in the playbook instead.
func (e *NetdevError) Fix() string { return e.FixText }

// MLX5Devargs returns the mlx5 devargs of a netdev's function (DPDK's mlx5
// guide, OvS phy.rst; hardware-formats.md §5): an uplink pN is its PCI
// function ("0000:03:00.0"); a host-PF representor pfN (pfNhpf) is
// "<PF>,representor=[65535]" (mlx5 maps phys_port_name pfN to representor
// id UINT16_MAX); a VF representor pfNvfM is "<PF>,representor=vfM".
// Anything else, or a function not driven by mlx5_core, is a *NetdevError
// naming what was found.
func MLX5Devargs(f NetdevFunction) (string, error) {
	fail := func(why, fix string) (string, error) {
		return "", &NetdevError{Netdev: f.Netdev, Found: f.String(), Why: why, FixText: fix}
	}
	rawFix := "give the port raw devargs instead of netdev (e.g. devargs: \"0000:03:00.0\"), or name an mlx5 uplink or representor (p0, pf0hpf, pf0vf0)"
	switch {
	case f.Device == "":
		return fail("not an mlx5 port: it has no PCI function", rawFix)
	case f.BDF == "":
		return fail("not an mlx5 port rig can name: its device is not a PCI function", "for an SF, name its representor (en3f0pf0sf0) in raw devargs: \"<PF BDF>,representor=sf<N>\"")
	case f.Driver != MLX5Driver:
		return fail("its PCI function is not driven by "+MLX5Driver+", so the mlx5 PMD cannot drive it", rawFix+"; for another NIC bind it to vfio-pci and use its PCI address")
	}
	pp := ParsePhysPortName(f.PhysPortName)
	switch pp.Kind {
	case PortUplink:
		return f.BDF, nil
	case PortHostPF:
		return f.BDF + ",representor=[65535]", nil
	case PortVFRep:
		return fmt.Sprintf("%s,representor=vf%d", f.BDF, pp.Index), nil
	case PortSFRep:
		return fail("an SF representor; rig resolves uplinks, host-PF and VF representors only", fmt.Sprintf("give raw devargs: \"%s,representor=sf%d\"", f.BDF, pp.Index))
	case PortNone:
		return fail("no phys_port_name (a VF's own netdev, or a PF in legacy mode on an old kernel)", fmt.Sprintf("give raw devargs: \"%s\" (the function's PCI address)", f.BDF))
	}
	return fail("phys_port_name "+strconv.Quote(f.PhysPortName)+" is not an uplink (pN) or a representor (pfN, pfNvfM)", rawFix)
}

// NetdevPort is a port named by its netdev, resolved.
type NetdevPort struct {
	Netdev string
	// Hardware is the mlx5 devargs the netdev's function takes ("" when
	// sysfs shows no mlx5 function, e.g. a lab's veth); Found what sysfs
	// showed.
	Hardware string
	Found    string
	// Devargs is what OvS gets: Hardware plus mlx5_args on hardware, the
	// substitute in a lab.
	Devargs string
	// Substituted: a virtual lab put Devargs in place of mlx5; Reason says
	// which lab and why, Dropped the mlx5_args not applied.
	Substituted bool
	Reason      string
	Dropped     string
}

// String is the substitution line rig shows in plan, report and notes:
// "p0: mlx5 devargs 0000:03:00.0 substituted by net_af_packet_p0,iface=p0 (virtual lab a: ...)".
func (p NetdevPort) String() string {
	if !p.Substituted {
		return fmt.Sprintf("%s: mlx5 devargs %s (%s)", p.Netdev, p.Devargs, p.Found)
	}
	hw := "mlx5 devargs " + p.Hardware
	if p.Hardware == "" {
		hw = "mlx5 (no mlx5 function here: " + p.Found + ")"
	}
	s := fmt.Sprintf("%s: %s substituted by %s (%s)", p.Netdev, hw, p.Devargs, p.Reason)
	if p.Dropped != "" {
		s += "; mlx5_args " + p.Dropped + " not applied (af_packet has no such options)"
	}
	return s
}

// NetdevRequest is a port's netdev and what shapes its devargs.
type NetdevRequest struct {
	Netdev   string
	MLX5Args string // appended to the mlx5 devargs
	NRxq     int    // af_packet: qpairs
	MTU      int    // af_packet: frame size
}

// ResolveNetdev resolves a port named by its netdev. On hardware (lab nil,
// or a lab without an mlx5 substitution) it is MLX5Devargs of the netdev's
// function plus the request's mlx5_args. In a virtual lab that substitutes
// net_af_packet for mlx5 it is an af_packet vdev on the same netdev
// (AFPacketDevargs), with the mlx5 devargs the hardware would take, when
// the lab's sysfs shows them, kept for the report.
func ResolveNetdev(h NetdevReader, lab *labinfo.Info, req NetdevRequest) (NetdevPort, error) {
	fn, err := ReadNetdevFunction(h, req.Netdev)
	if err != nil {
		where := "this host"
		if lab != nil {
			where = "virtual lab " + lab.Name
		}
		return NetdevPort{}, &NetdevError{Netdev: req.Netdev, Found: "nothing in " + where, Why: err.Error(),
			FixText: "check the name with `ip link`; fix the port's netdev in the playbook"}
	}
	np := NetdevPort{Netdev: req.Netdev, Found: fn.String()}
	hw, hwErr := MLX5Devargs(fn)
	sub := ""
	if lab != nil {
		sub = lab.Substitutions["mlx5"]
	}
	if sub == "" {
		if hwErr != nil {
			return NetdevPort{}, hwErr
		}
		np.Hardware, np.Devargs = hw, hw
		if req.MLX5Args != "" {
			np.Devargs += "," + req.MLX5Args
		}
		return np, nil
	}
	if sub != AFPacketDriver {
		return NetdevPort{}, &NetdevError{Netdev: req.Netdev, Found: fmt.Sprintf("virtual lab %s substitutes %q for mlx5", lab.Name, sub),
			Why: "this rig knows only " + AFPacketDriver + " as a stand-in for mlx5", FixText: "recreate the lab with this rig (`rig lab down`, `rig lab up`)"}
	}
	if hwErr == nil {
		np.Hardware = hw
	}
	np.Devargs, np.Substituted, np.Dropped = AFPacketDevargs(req), true, req.MLX5Args
	np.Reason = fmt.Sprintf("virtual lab %s: no mlx5 hardware here; %s carries the frames over the same netdev", lab.Name, AFPacketDriver)
	if req.NRxq > 1 {
		// af_packet's queues are a PACKET_FANOUT group: when one ring fills, the
		// kernel rolls frames over to another, reordering a flow (a lab check
		// with n_rxq 3 saw 1.7 % of frames out of order, an invalid measurement)
		np.Reason += fmt.Sprintf("; n_rxq %d served by one af_packet queue pair (its fanout reorders a flow when a ring fills)", req.NRxq)
	}
	return np, nil
}

// AFPacketDevargs is the af_packet vdev that stands in for a netdev's mlx5
// port (DPDK 22.11 drivers/net/af_packet: iface, qpairs, blocksz, framesz,
// framecnt, qdisc_bypass). The vdev bus matches the driver by name prefix,
// so the name is net_af_packet_<netdev>: unique per OvS process as netdev
// names are per namespace, and at most 14+15 bytes, far below
// RTE_DEV_NAME_MAX_LEN (64). One queue pair whatever n_rxq (OvS uses as
// many rx queues as the device offers; see ResolveNetdev); a jumbo mtu_request gets
// frames (and blocks) large enough for it, as the default 2048-byte frame
// holds a 1500-byte MTU only.
func AFPacketDevargs(req NetdevRequest) string {
	name := make([]byte, 0, len(req.Netdev))
	for i := 0; i < len(req.Netdev); i++ {
		c := req.Netdev[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			c = '_'
		}
		name = append(name, c)
	}
	s := AFPacketDriver + "_" + string(name) + ",iface=" + req.Netdev
	frame := 2048 // the PMD's default framesz
	if req.MTU > 1500 {
		frame = 4096
		for frame < req.MTU+256 { // Ethernet header, FCS, tpacket2 header, sockaddr_ll
			frame *= 2
		}
		s += fmt.Sprintf(",blocksz=%d,framesz=%d", frame, frame)
	}
	return s + ",framecnt=" + strconv.Itoa(AFPacketRingFrames(frame))
}

// AFPacketRingFrames is the frame count of an af_packet ring of frameSize
// frames: 16 MiB of ring (8192 frames of 2048 B). The PMD's default, 512
// frames, overflows during a few milliseconds of scheduling delay: in a
// 2-CPU lab a check at 100 kpps lost 0.4 % on OvS's af_packet port with it
// and none with 8192.
func AFPacketRingFrames(frameSize int) int {
	n := (16 << 20) / frameSize
	if n < 512 {
		n = 512
	}
	return n
}
