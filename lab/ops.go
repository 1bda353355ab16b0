package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"rig/internal/host"
	"rig/lab/card"
	"rig/lab/fwsim"
	"rig/ovs"
)

// recorded returns a made lab's paths and the card its record names (up
// or not).
func recorded(name string) (Lab, card.Card, error) {
	l, err := ForName(name)
	if err != nil {
		return l, card.Card{}, err
	}
	rec, err := l.readRecord()
	if err != nil {
		if _, serr := os.Lstat(l.Dir); serr != nil {
			return l, card.Card{}, notFound(name)
		}
		return l, card.Card{}, err
	}
	c, ok := card.Lookup(rec.Kind)
	if !ok {
		return l, c, fmt.Errorf("lab %s: unknown kind %q in %s", name, rec.Kind, l.recordPath())
	}
	return l, c, nil
}

// opened returns an up lab's paths and card.
func opened(name string) (Lab, card.Card, error) {
	l, c, err := recorded(name)
	if err != nil {
		return l, c, err
	}
	if !l.isUp() {
		return l, c, &Error{Lab: name, Err: fmt.Errorf("not up (a namespace or %s is missing)", l.MntPath()),
			FixText: "`rig lab down " + name + "` and up again"}
	}
	return l, c, nil
}

// Link pulls (up=false) or puts back the cable of card netdev dev: the
// far end of the veth (in the wire netns, or on the host or the peer) goes down/up, so the lab's netdev loses/regains
// carrier, and the netdev's RDMA port reads 1: DOWN / 2: Polling (4:
// ACTIVE / 5: LinkUp when back), its speed -1 (the card's when back), as
// mlx5 reports a port without link (hardware-formats.md §4).
func Link(name, dev string, up bool) error {
	l, c, err := opened(name)
	if err != nil {
		return err
	}
	n, ok := c.NetdevByName(dev)
	if !ok {
		var names []string
		for _, x := range c.Netdevs {
			names = append(names, x.Name)
		}
		return &Error{Lab: name, Err: fmt.Errorf("no netdev %q on a %s", dev, c.Kind), FixText: fmt.Sprintf("netdevs: %v", names)}
	}
	rec, err := l.readRecord()
	if err != nil {
		return err
	}
	fe := l.farEnd(c.Kind, dev, rec)
	farH, err := host.NetlinkHandle(fe.NetNS)
	if err != nil {
		return err
	}
	defer farH.Delete()
	if err := setUp(farH, fe.Name, up); err != nil {
		return fmt.Errorf("lab %s: far end (%s %s): %w", name, fe.Machine, fe.Name, err)
	}
	state, phys, speed := card.StateDown, card.PhysPolling, "-1"
	if up {
		state, phys, speed = card.StateActive, card.PhysLinkUp, n.Speed
	}
	if ib, ok := c.PortOf(dev); ok {
		pd := c.PortDir(l.CardRoot(), ib)
		if err := writeAttr(filepath.Join(pd, "state"), state); err != nil {
			return err
		}
		if err := writeAttr(filepath.Join(pd, "phys_state"), phys); err != nil {
			return err
		}
	}
	if n.Speed != "" {
		return writeAttr(filepath.Join(c.NetdevDir(l.CardRoot(), n), "speed"), speed)
	}
	return nil
}

// writeAttr rewrites a card attribute in place (the lab's view binds the
// file or its directory, so the inode must stay) with one write and no
// truncation: rig's steps read these files while the port keeper writes
// them, and a truncate-then-write let a reader see an empty state (the rdma
// step failed on `port state ""`, 1 make test in 9). A value shorter than
// the file is padded with spaces before its newline; readers trim, as they
// do for sysfs.
func writeAttr(p, v string) error {
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("lab: %w", err)
	}
	s := v + "\n"
	if n := int(fi.Size()); len(s) < n {
		s = v + strings.Repeat(" ", n-len(s)) + "\n"
	}
	if _, err := f.WriteAt([]byte(s), 0); err != nil {
		f.Close()
		return fmt.Errorf("lab: %w", err)
	}
	return f.Close()
}

// PowerCycleReport says what a power cycle did.
type PowerCycleReport struct {
	SchemaVersion string   `json:"schemaVersion"`
	Name          string   `json:"name"`
	Loaded        []string `json:"loaded"`  // functions whose next-boot firmware configuration became current
	Stopped       []Proc   `json:"stopped"` // every process that ran in the lab
	// Boot: the host booted again too (see Reboot)
	Boot      *BootReport `json:"boot"`
	Restarted []string    `json:"restarted"`
}

// PowerCycle does to the lab what a power cycle does to the card and the
// Arm OS on it (the x86 host's and the peer's processes, other machines,
// keep running: a serve there answers again once the Arm is back): Next Boot firmware configuration becomes current, every
// process in the lab ends (OvS included), and the OS's services start
// again: ovsdb-server and ovs-vswitchd, from the lab's existing conf.db (as
// /etc/openvswitch/conf.db survives a reboot), so vswitchd reads its DPDK
// settings anew. The host boots as in Reboot: /proc/cmdline from grub.cfg's
// default entry (kept, with a note, when grub.cfg has none), net.* sysctls
// from /etc/sysctl.d. It does not reset the hugepage pool or hugetlbfs
// mounts (the host's), nor link states set with Link (cables stay as they
// are).
func (m *Manager) PowerCycle(ctx context.Context, name string) (*PowerCycleReport, error) {
	l, _, err := opened(name)
	if err != nil {
		return nil, err
	}
	rep := &PowerCycleReport{SchemaVersion: "rig.lab.power-cycle/v1", Name: name, Loaded: []string{}, Restarted: []string{}}
	if rep.Loaded, err = fwsim.New(l.FirmwareState()).PowerCycle(); err != nil {
		return nil, err
	}
	if rep.Loaded == nil {
		rep.Loaded = []string{}
	}
	if rep.Stopped, err = l.killAll(ctx, false); err != nil {
		return rep, err
	}
	if rep.Boot, err = l.bootAfterPowerCycle(); err != nil {
		return rep, err
	}
	started, err := l.restartServices(ctx, m.Binary)
	if err != nil {
		return rep, err
	}
	rep.Restarted = append(rep.Restarted, started...)
	return rep, nil
}

// restartServices starts what a boot of the lab starts (after a power
// cycle or a reboot): the lab kernel, the port keeper, ovsdb-server and
// ovs-vswitchd; it returns their names.
func (l Lab) restartServices(ctx context.Context, bin string) ([]string, error) {
	if err := l.startKernel(bin); err != nil {
		return nil, err
	}
	if err := l.startPorts(bin); err != nil {
		return nil, err
	}
	if err := l.startOVS(ctx, bin); err != nil {
		return nil, err
	}
	return []string{"lab kernel", "port keeper", "ovsdb-server", "ovs-vswitchd"}, nil
}

// StartOVS starts the lab's OvS (run inside the lab by `rig lab __ovs NAME
// start`): a rig-started ovs.Daemon at the default rundir, which
// ovs.TargetFor finds with no flags.
func StartOVS(ctx context.Context) error {
	d, err := ovs.NewDaemon(host.New("/"), ovs.SystemRunDir)
	if err != nil {
		return err
	}
	return d.Start(ctx)
}
