package lab

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"rig/internal/host"
	"rig/lab/card"
)

// PhysDisabled is an RDMA port whose netdev is admin-down, as the
// cx6dx-host fixture's enp59s0f1np1 (mlx5_1) reads (formats:
// hardware-formats.md §4).
const PhysDisabled = "3: Disabled"

// PortState is what an Ethernet (RoCE) port of mlx5 reads while its netdev
// is admin up or down, with or without carrier: the port follows its netdev.
func PortState(adminUp, carrier bool) (state, phys string) {
	switch {
	case !adminUp:
		return card.StateDown, PhysDisabled
	case !carrier:
		return card.StateDown, card.PhysPolling
	}
	return card.StateActive, card.PhysLinkUp
}

// FollowPorts is the lab's port keeper (`rig lab __ports NAME`, started by
// Up and PowerCycle in the lab's network namespace): it watches the card's
// netdevs there and keeps each one's RDMA port state in the card tree as
// mlx5 would (PortState), so `ip link set enp59s0f1np1 up` inside a lab
// (or rig's rdma step) makes mlx5_1 ACTIVE, as on the card. It runs until
// killed (lab down, power cycle) or ctx ends. With machine "host" (`rig
// lab __ports NAME host`, in the host's network namespace) it keeps the
// host card's RDMA ports (mlx5_0 follows the host's PF0 netdev) in the
// host's tree; it runs until lab down.
func FollowPorts(ctx context.Context, name, machine string) error {
	l, c, err := opened(name)
	if err != nil {
		return err
	}
	root := l.CardRoot()
	switch machine {
	case machineArm:
	case machineHost:
		m, ok := card.MachinesOf(c.Kind)
		if !ok {
			return fmt.Errorf("lab %s: a %s has no host", name, c.Kind)
		}
		c, root = m.Host, l.HostCardRoot()
	default:
		return fmt.Errorf("lab %s: no port keeper for machine %q (arm, host)", name, machine)
	}
	updates, done := make(chan netlink.LinkUpdate, 64), make(chan struct{})
	defer close(done)
	if err := netlink.LinkSubscribeWithOptions(updates, done, netlink.LinkSubscribeOptions{ListExisting: true}); err != nil {
		return fmt.Errorf("lab %s: watch the card's netdevs: %w", name, err)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case u, ok := <-updates:
			if !ok {
				return fmt.Errorf("lab %s: netlink subscription ended", name)
			}
			a := u.Attrs()
			ib, ok := c.PortOf(a.Name)
			if !ok {
				continue
			}
			state, phys := PortState(a.Flags&net.FlagUp != 0, a.RawFlags&unix.IFF_LOWER_UP != 0)
			pd := c.PortDir(root, ib)
			if _, err := os.Stat(pd); err != nil {
				continue // a VF's RDMA device, gone with its VF (sriov_numvfs 0)
			}
			for f, v := range map[string]string{"state": state, "phys_state": phys} {
				if err := writeIfDiffers(filepath.Join(pd, f), v); err != nil {
					return err
				}
			}
		}
	}
}

func writeIfDiffers(p, v string) error {
	b, err := os.ReadFile(p)
	if err == nil && strings.TrimSpace(string(b)) == v {
		return nil
	}
	return writeAttr(p, v)
}

// startPorts starts the port keeper in the lab's network namespace, in
// its own session, and leaves it running (lab down and power cycle end it
// with the lab's other processes).
func (l Lab) startPorts(binary string) error { return l.startPortsOn(binary, machineArm) }

// startPortsOn starts the port keeper of a machine (the Arm, the host)
// in its network namespace; the host's runs until lab down.
func (l Lab) startPortsOn(binary, machine string) error {
	cmd := exec.Command(binary, "lab", "__ports", l.Name, machine)
	cmd.SysProcAttr = &unix.SysProcAttr{Setsid: true}
	ns := l.NetNSPath()
	if machine == machineHost {
		ns = l.HostNetNSPath()
	}
	if err := host.InNetNS(ns, cmd.Start); err != nil {
		return fmt.Errorf("lab %s: start the %s's port keeper: %w", l.Name, machine, err)
	}
	return cmd.Process.Release()
}
