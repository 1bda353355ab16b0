package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"rig/bench"
	"rig/internal/devargs"
	"rig/internal/labinfo"
	"rig/playbooks"
	"rig/smartnic"
)

// netdevPortRequest is what shapes the devargs of the ports named by
// netdev: the profile's mlx5 options, the queues and the frame size.
type netdevPortRequest struct {
	netdevs   []string
	mlx5Args  string
	queues    int
	frameSize int
}

// addNetdevPorts resolves ports named by their netdev (--port-netdev p0)
// the way a playbook's OvS ports are (smartnic.ResolveNetdev: the mlx5 devargs
// of the netdev's function on hardware; in a virtual lab net_af_packet on
// the same netdev, said so), names each by the role rig's inventory gives
// it, and adds them to cfg.
func (a *app) addNetdevPorts(ctx context.Context, cfg *bench.Config, req netdevPortRequest) error {
	if len(req.netdevs) == 0 {
		return nil
	}
	h := a.host()
	root := h.Root
	if root == "" {
		root = "/"
	}
	lab, err := labinfo.Read(root)
	if err != nil {
		return withCode(exitFailure, err)
	}
	inv, err := smartnic.ScanContext(ctx, h)
	if err != nil {
		return withCode(exitFailure, fmt.Errorf("--port-netdev: inventory: %w", err))
	}
	seen := map[string]bool{}
	for _, nd := range req.netdevs {
		if seen[nd] {
			return withCode(exitUsage, fmt.Errorf("--port-netdev %s: given twice; one netdev backs one port", nd))
		}
		seen[nd] = true
		np, err := smartnic.ResolveNetdev(h, lab, smartnic.NetdevRequest{Netdev: nd, MLX5Args: req.mlx5Args, MTU: req.frameSize - 18})
		var ne *smartnic.NetdevError
		if errors.As(err, &ne) {
			fix := ne.Fix() + "; or give the port's devargs with --port instead of --port-netdev"
			if ne.Cause() == "nothing in this host" || lab != nil && ne.Cause() == "nothing in virtual lab "+lab.Name {
				fix = "check the name with `ip link` or `rig inventory` (the card's netdevs and their roles)"
			}
			return withCode(exitUsage, bench.NewError("--port-netdev "+nd, err, ne.Cause(), fix))
		} else if err != nil {
			return withCode(exitFailure, fmt.Errorf("--port-netdev %s: %w", nd, err))
		}
		role, label := netdevRole(inv, nd)
		o := bench.PortOrigin{Netdev: nd, Role: role, Label: label}
		devargs := np.Devargs
		if np.Substituted {
			o.Substitution = np.String()
			if req.queues > 1 {
				// af_packet serves as many queues as it has pairs
				devargs += ",qpairs=" + strconv.Itoa(req.queues)
				o.Substitution += fmt.Sprintf("; qpairs=%d for --rxq/--txq %d (af_packet's queues are a PACKET_FANOUT group: a flow may be reordered when a ring fills)", req.queues, req.queues)
			}
		}
		cfg.AddPort(devargs, o)
	}
	return nil
}

// netdevRole is a netdev's role as rig's inventory knows it, and the
// label a report names the port by.
func netdevRole(inv *smartnic.Inventory, netdev string) (role, label string) {
	role = smartnic.RoleOther
	for _, f := range inv.Functions {
		for _, n := range f.Netdevs {
			if n.Name == netdev {
				role = n.Role
			}
		}
	}
	for _, n := range inv.Netdevs {
		if n.Name == netdev {
			role = n.Role
		}
	}
	return role, roleLabel(role) + " " + netdev
}

// roleLabel says a smartnic role in words.
func roleLabel(role string) string {
	switch role {
	case smartnic.RoleUplink:
		return "uplink"
	case smartnic.RoleHostPF:
		return "host PF"
	case smartnic.RoleHostPFRep:
		return "host-PF representor"
	case smartnic.RoleVFRep:
		return "VF representor"
	case smartnic.RoleSFRep:
		return "SF representor"
	case smartnic.RoleVF:
		return "VF"
	case smartnic.RoleTmfifo:
		return "tmfifo"
	case smartnic.RoleOOB:
		return "OOB port"
	}
	return "netdev"
}

// checkPortDevargs checks every port's and vdev's devargs before EAL, as
// a playbook's are checked (ovs.CheckDevargs; playbooks' length limits).
func checkPortDevargs(cfg *bench.Config) error {
	for _, list := range []struct {
		flag string
		args []string
	}{{"--port", cfg.Ports}, {"--vdev", cfg.VDevs}} {
		for _, d := range list.args {
			msg := devargs.Check(d)
			if msg == "" && len(d) > playbooks.MaxDevargsLen {
				msg = fmt.Sprintf("longer than %d bytes", playbooks.MaxDevargsLen)
			}
			if msg != "" {
				return withCode(exitUsage, bench.NewError(list.flag+" "+strconv.Quote(d), errors.New("malformed devargs: "+msg), "",
					"write <pci-address|vdev-name>[,key=value...], e.g. 0000:03:00.0,representor=[65535] or net_af_packet0,iface=p0"))
			}
		}
	}
	return nil
}
