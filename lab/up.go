package lab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"rig/internal/host"
	"rig/lab/card"
	"rig/lab/fwsim"
	"rig/mlxconfig"
)

// Tools are the names the lab's bin dir gives the rig binary: the
// firmware tools (answered from the lab's firmware state), rig itself and
// update-grub (the lab's, UpdateGrub).
func Tools() []string {
	return []string{"mstconfig", "mlxconfig", "mstprivhost", "mlxprivhost", "rig", "update-grub"}
}

// Manager makes and removes labs. Binary is the rig binary: the lab's
// init, its OvS starter and its firmware tools are that binary.
type Manager struct {
	Binary string
	Host   *host.Host // exec seam for `ip netns`; host.New("/") by default
}

func (m *Manager) run(ctx context.Context, name string, args ...string) error {
	h := m.Host
	if h == nil {
		h = host.New("/")
	}
	_, err := h.Run(ctx, name, args...)
	return err
}

// Up makes lab name of kind with its far ends farEnds (FarEndsMachines,
// FarEndsWire; "" is the kind's default: machines for a DPU kind, wire
// otherwise). A lab of that name already up is an *Error with Exists; a
// failure half way removes what was made.
func (m *Manager) Up(ctx context.Context, kind, name, farEnds string) (*Status, error) {
	c, ok := card.Lookup(kind)
	if !ok {
		return nil, fmt.Errorf("lab: unknown kind %q; kinds: %s", kind, strings.Join(card.KindNames(), ", "))
	}
	l, err := ForName(name)
	if err != nil {
		return nil, err
	}
	if farEnds, err = ResolveFarEnds(kind, farEnds); err != nil {
		return nil, err
	}
	unlock, err := lockState()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, err := os.Lstat(l.Dir); err == nil {
		r, _ := l.readRecord()
		return nil, &Error{Lab: name, Exists: true, Err: fmt.Errorf("already up (kind %s)", r.Kind),
			FixText: "use it (`rig lab exec " + name + " -- …`), or `rig lab down " + name + "` first, or pick another --name"}
	}
	for _, ns := range l.netnsPaths() {
		if _, err := os.Lstat(ns); err == nil {
			return nil, &Error{Lab: name, Exists: true, Err: fmt.Errorf("%s exists but the lab has no state in %s", ns, l.Dir),
				FixText: "`rig lab down " + name + "` removes what is left"}
		}
	}
	if err := recordPools(HugepagesSysDir, poolRecordPath(), name); err != nil {
		return nil, err
	}
	if err := m.create(ctx, l, c, farEnds); err != nil {
		_, derr := m.teardown(ctx, l)
		return nil, errors.Join(err, derr)
	}
	st := l.status()
	return &st, nil
}

// ResolveFarEnds checks farEnds for kind and gives "" the kind's default.
func ResolveFarEnds(kind, farEnds string) (string, error) {
	_, dpu := card.MachinesOf(kind)
	switch {
	case farEnds == "" && dpu:
		return FarEndsMachines, nil
	case farEnds == "" || farEnds == FarEndsWire:
		return FarEndsWire, nil
	case farEnds == FarEndsMachines && dpu:
		return farEnds, nil
	case farEnds == FarEndsMachines:
		return "", fmt.Errorf("lab: --far-ends machines: a %s is no DPU (no Arm, host and peer); its far ends are in the wire netns: leave --far-ends out", kind)
	}
	return "", fmt.Errorf("lab: --far-ends %q: want %s (the DPU's host and peer) or %s (every far end in the wire netns)", farEnds, FarEndsMachines, FarEndsWire)
}

// create makes the lab's state dir, namespaces, veths, mount namespaces,
// the machines' addresses and OvS.
func (m *Manager) create(ctx context.Context, l Lab, c card.Card, farEnds string) error {
	if err := l.makeStateDir(); err != nil {
		return err
	}
	rec := record{Name: l.Name, Kind: c.Kind, NetNS: l.NetNS(), WireNetNS: l.WireNetNS(), Binary: m.Binary, FarEnds: farEnds}
	namespaces := []string{l.NetNS(), l.WireNetNS()}
	if rec.machines() {
		rec.HostNetNS, rec.PeerNetNS = l.HostNetNS(), l.PeerNetNS()
		namespaces = append(namespaces, rec.HostNetNS, rec.PeerNetNS)
	}
	if err := l.writeRecord(rec); err != nil {
		return err
	}
	if err := c.Write(l.CardRoot(), true); err != nil {
		return err
	}
	if err := l.initFirmware(c); err != nil {
		return err
	}
	if err := l.makeBin(m.Binary); err != nil {
		return err
	}
	if err := l.prepareOS(); err != nil {
		return err
	}
	if err := ensureMountpoints(); err != nil {
		return err
	}
	for _, ns := range namespaces {
		if err := m.run(ctx, "ip", "netns", "add", ns); err != nil {
			return fmt.Errorf("lab %s: %w", l.Name, err)
		}
		if err := quietIPv6("/run/netns/" + ns); err != nil {
			return fmt.Errorf("lab %s: %w", l.Name, err)
		}
	}
	if err := l.makeVeths(c, rec); err != nil {
		return err
	}
	if err := l.startInit(m.Binary, machineArm); err != nil {
		return err
	}
	if rec.machines() {
		if err := l.createMachines(c, m.Binary); err != nil {
			return err
		}
	}
	if err := l.startKernel(m.Binary); err != nil {
		return err
	}
	if err := l.startPorts(m.Binary); err != nil {
		return err
	}
	return l.startOVS(ctx, m.Binary)
}

// makeStateDir makes StateRoot/NAME, root only, as a private bind of
// itself: a mount namespace can be bound only on a file of a private mount.
func (l Lab) makeStateDir() error {
	if err := os.MkdirAll(StateRoot, 0o700); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	if err := os.Mkdir(l.Dir, 0o700); err != nil {
		return fmt.Errorf("lab %s: %w", l.Name, err)
	}
	if err := unix.Mount(l.Dir, l.Dir, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("lab %s: bind %s: %w", l.Name, l.Dir, err)
	}
	if err := unix.Mount("", l.Dir, "", unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("lab %s: make %s private: %w", l.Name, l.Dir, err)
	}
	return os.Mkdir(l.stash(), 0o700)
}

// initFirmware writes the firmware state: every NIC function of the card
// in the card's starting mode.
func (l Lab) initFirmware(c card.Card) error {
	devs := map[string]*fwsim.Device{}
	for _, f := range c.Firmware {
		mode := mlxconfig.ModeDPU
		if c.FwMode != "" {
			var err error
			if mode, err = mlxconfig.ParseDPUMode(c.FwMode); err != nil {
				return err
			}
		}
		d, err := fwsim.NewDevice(f.DeviceID, mode)
		if err != nil {
			return fmt.Errorf("lab %s: firmware %s: %w", l.Name, f.BDF, err)
		}
		devs[f.BDF] = d
	}
	return fwsim.New(l.FirmwareState()).Init(devs)
}

// makeBin links the lab's tools to the rig binary.
func (l Lab) makeBin(binary string) error {
	if err := os.Mkdir(l.BinDir(), 0o755); err != nil {
		return err
	}
	for _, t := range Tools() {
		if err := os.Symlink(binary, filepath.Join(l.BinDir(), t)); err != nil {
			return err
		}
	}
	if err := os.Mkdir(l.FarBinDir(), 0o755); err != nil {
		return err
	}
	return os.Symlink(binary, filepath.Join(l.FarBinDir(), "rig"))
}

// makeVeths creates each card netdev as a veth in the lab's namespace
// (the card's name, MAC and ifindex) with its peer in the wire namespace,
// of the same name, or, with far ends on the machines, on the host or the
// peer (farEnd); both ends up unless the card has the port admin-down
// (then only the far end is up).
func (l Lab) makeVeths(c card.Card, rec record) error {
	labH, err := host.NetlinkHandle(l.NetNS())
	if err != nil {
		return err
	}
	defer labH.Delete()
	for _, n := range c.Netdevs {
		if err := l.addJoinedVeth(labH, c, n, rec); err != nil {
			return fmt.Errorf("lab %s: %w", l.Name, err)
		}
	}
	return nil
}

// addJoinedVeth makes card netdev n, its far end where rec's layout puts it.
func (l Lab) addJoinedVeth(labH *netlink.Handle, c card.Card, n card.Netdev, rec record) error {
	fe := l.farEnd(c.Kind, n.Name, rec)
	farH, err := host.NetlinkHandle(fe.NetNS)
	if err != nil {
		return err
	}
	defer farH.Delete()
	farNS, err := netns.GetFromName(fe.NetNS)
	if err != nil {
		return err
	}
	defer farNS.Close()
	if link, err := farH.LinkByName("lo"); err == nil {
		_ = farH.LinkSetUp(link)
	}
	if link, err := labH.LinkByName("lo"); err == nil {
		_ = labH.LinkSetUp(link)
	}
	return addCardVeth(labH, farH, farNS, c, n, fe)
}

func setUp(h *netlink.Handle, name string, up bool) error {
	link, err := h.LinkByName(name)
	if err != nil {
		return fmt.Errorf("netdev %s: %w", name, err)
	}
	if up {
		err = h.LinkSetUp(link)
	} else {
		err = h.LinkSetDown(link)
	}
	if err != nil {
		return fmt.Errorf("netdev %s: set up=%v: %w", name, up, err)
	}
	return nil
}

// startOVS runs `rig lab __ovs NAME start` inside the lab: ovsdb-server
// and ovs-vswitchd-dpdk with their files in /var/run/openvswitch there.
func (l Lab) startOVS(ctx context.Context, binary string) error {
	cmd := exec.CommandContext(ctx, binary, "lab", "__ovs", l.Name, "start")
	cmd.Env = l.labEnv(os.Environ())
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := l.runInside(cmd); err != nil {
		return fmt.Errorf("lab %s: start OvS: %w: %s", l.Name, err, strings.TrimSpace(out.String()))
	}
	return nil
}
