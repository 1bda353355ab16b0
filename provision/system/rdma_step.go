package system

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"rig/internal/host"
	"rig/playbooks"
	"rig/provision"
	"rig/smartnic"
)

// rdmaStep makes the playbook's RDMA ports ACTIVE / LinkUp. The one thing it
// can fix is a netdev that is administratively down (the RoCE port follows
// its netdev): it sets it up through netlink. A physical link that is down
// (no cable, peer port down, transceiver) is reported with the phys_state
// and what to check; rig never claims to fix it.
type rdmaStep struct {
	h     *host.Host
	spec  *playbooks.RDMASpec
	links linkAdmin
	// port reads one port's state; smartnic.ReadPort (sysfs under the root)
	// unless a test models the kernel (see rdma_step_test.go).
	port  func(dev string, port int) (smartnic.RDMAPort, error)
	sleep func(time.Duration)
	now   func() time.Time
}

// linkAdmin reads and sets a netdev's administrative state.
type linkAdmin interface {
	AdminUp(name string) (bool, error)
	SetUp(name string) error
}

// NewRDMAStep builds the rdma step. Netdevs are read and set through
// netlink in env.NetNS when the root is the live system or a netns is
// given; under a fixture root without --netns their admin state comes from
// the fixture's sysfs and Apply cannot change it.
func NewRDMAStep(env *provision.Env, spec *playbooks.RDMASpec) (provision.Step, error) {
	h := env.Host
	s := &rdmaStep{h: h, spec: spec, sleep: env.SleepFunc(), now: env.NowFunc()}
	s.port = func(dev string, port int) (smartnic.RDMAPort, error) { return smartnic.ReadPort(h, dev, port) }
	if h.IsRealRoot() || env.NetNS != "" {
		s.links = netlinkAdmin{ns: env.NetNS}
	} else {
		s.links = sysfsAdmin{h: h}
	}
	return s, nil
}

func (s *rdmaStep) Name() string { return "rdma" }

// rdmaTarget is one wanted port, resolved.
type rdmaTarget struct {
	object string // "rdma mlx5_0/1 (p0)"
	port   smartnic.RDMAPort
	netdev string
}

func (s *rdmaStep) resolve() ([]rdmaTarget, error) {
	var inv *smartnic.Inventory
	var out []rdmaTarget
	for _, ps := range s.spec.Ports {
		dev, num := ps.Device, ps.PortNum()
		if ps.Netdev != "" {
			if inv == nil {
				var err error
				if inv, err = smartnic.Scan(s.h); err != nil {
					return nil, err
				}
			}
			p, ok := inv.NetdevPort(ps.Netdev)
			if !ok {
				return nil, s.noPort(ps.Netdev)
			}
			dev, num = p.Device, p.Port
		}
		p, err := s.port(dev, num)
		if err != nil {
			return nil, &provision.Problem{Err: err, // ReadPort's error names "rdma <dev>/<port>"
				CauseText: "no such RDMA device or port (wrong name, or mlx5_ib not loaded)",
				FixText:   "check `rdma link`; `modprobe mlx5_ib`; fix the device/port in the playbook"}
		}
		nd := p.Netdev
		if ps.Netdev != "" {
			nd = ps.Netdev
		}
		obj := fmt.Sprintf("rdma %s/%d", dev, num)
		if nd != "" {
			obj += " (" + nd + ")"
		}
		out = append(out, rdmaTarget{object: obj, port: p, netdev: nd})
	}
	return out, nil
}

// noPort explains a netdev that no RDMA port lists: it does not exist at
// all, or it exists but no RDMA device (of a PCI function or of an SF's
// auxiliary device) names it.
func (s *rdmaStep) noPort(netdev string) error {
	obj := "rdma: netdev " + netdev
	if _, err := s.h.Lstat("/sys/class/net/" + netdev); err != nil {
		return &provision.Problem{Object: obj, Err: fmt.Errorf("no such netdev (%s does not exist)", s.h.Path("/sys/class/net/"+netdev)),
			CauseText: "there is no network interface by this name on this host (a typo, a name udev changed, or its driver is not loaded)",
			FixText:   "check `ip link` and `rdma link`, and put the netdev's name in the playbook"}
	}
	return &provision.Problem{Object: obj, Err: errors.New("no RDMA port has this netdev"),
		CauseText: "the netdev exists, but no RDMA device lists it: it is not on a Mellanox PCI function or SF, or mlx5_ib (RDMA) is not loaded",
		FixText:   "check `rdma link`; load mlx5_ib (`modprobe mlx5_ib`), or name a netdev that `rdma link` shows"}
}

func stateText(p smartnic.RDMAPort) string {
	return fmt.Sprintf("state %q, phys_state %q", p.State.String(), p.PhysState.String())
}

func (s *rdmaStep) Check(ctx context.Context) (provision.Plan, error) {
	targets, err := s.resolve()
	if err != nil {
		return provision.Plan{}, err
	}
	var plan provision.Plan
	var changes []provision.Change
	var down []rdmaTarget
	for _, t := range targets {
		if t.port.Active() {
			plan.Notes = append(plan.Notes, fmt.Sprintf("%s: ACTIVE / LINK_UP", t.object))
			continue
		}
		if t.netdev != "" {
			up, err := s.links.AdminUp(t.netdev)
			if err != nil {
				return provision.Plan{}, fmt.Errorf("%s: netdev %s: %w", t.object, t.netdev, err)
			}
			if !up {
				changes = append(changes, provision.Change{Object: t.object, Action: "set netdev " + t.netdev + " up",
					From: "admin down (" + stateText(t.port) + ")", To: "admin up"})
				down = append(down, t)
				continue
			}
		}
		return provision.Plan{}, linkProblem(t)
	}
	if len(down) > 0 {
		// one op: set every netdev up, then wait for the ports together
		plan.Add(func(ctx context.Context) error { return s.raise(ctx, down) }, changes...)
		if a, ok := s.links.(sysfsAdmin); ok {
			plan.Ops[len(plan.Ops)-1].Refused = a.refusal(down[0].netdev)
			plan.Notes = append(plan.Notes, "rdma: under --root "+s.h.Root+" the netdevs are a fixture's; setting them up would be netlink on this machine: apply refuses (give --netns where the netdevs live)")
		}
	}
	return plan, nil
}

// linkProblem explains a port that is not ACTIVE while its netdev is up.
func linkProblem(t rdmaTarget) error {
	p := t.port
	if p.PhysState.Num != smartnic.PhysLinkUp {
		cause := "the physical link is down: " + physHint(p.PhysState.Num)
		return &provision.Problem{Object: t.object,
			Err:       fmt.Errorf("port not ACTIVE: %s (rdma link: %s / %s)", stateText(p), smartnic.RDMAStateName(p.State.Num), smartnic.RDMAPhysName(p.PhysState.Num)),
			CauseText: cause,
			FixText: "check the cable is seated at both ends, the transceiver/DAC is supported by the card, the peer (switch or other host) port is enabled and at a matching speed; " +
				"then `rdma link show " + p.String() + "` must show physical_state LINK_UP. rig cannot fix a physical link"}
	}
	cause := fmt.Sprintf("the physical link is up but the logical state is %s", p.State.Name)
	fix := "check `ip link show " + t.netdev + "` (oper state) and dmesg for mlx5 errors"
	if strings.EqualFold(p.LinkLayer, "InfiniBand") {
		cause += ": an InfiniBand port stays INIT/ARMED until a subnet manager configures it"
		fix = "run a subnet manager on the fabric (opensm on one host, or the switch's SM)"
	}
	return &provision.Problem{Object: t.object, Err: fmt.Errorf("port not ACTIVE: %s", stateText(p)), CauseText: cause, FixText: fix}
}

func physHint(n int) string {
	switch n {
	case smartnic.PhysPolling:
		return "phys_state 2: Polling — the port is enabled and looking for a partner (no cable, far end unplugged, peer port down, or an unsupported module/speed)"
	case smartnic.PhysDisabled:
		return "phys_state 3: Disabled — the port is disabled although its netdev is up (firmware/driver forced it down, or a module fault)"
	case smartnic.PhysSleep:
		return "phys_state 1: Sleep — the port is powered down"
	case smartnic.PhysTraining:
		return "phys_state 4: PortConfigurationTraining — link training has not completed (cable quality, speed/FEC mismatch with the peer)"
	case smartnic.PhysErrRecov:
		return "phys_state 6: LinkErrorRecovery — the link is flapping (bad cable or module)"
	}
	return fmt.Sprintf("phys_state %d is not 5: LinkUp", n)
}

// raise sets the targets' netdevs up and waits for their ports to be
// ACTIVE.
func (s *rdmaStep) raise(ctx context.Context, targets []rdmaTarget) error {
	for _, t := range targets {
		if err := s.links.SetUp(t.netdev); err != nil {
			return fmt.Errorf("%s: set netdev %s up: %w", t.object, t.netdev, err)
		}
	}
	// The port follows its netdev within a few seconds; wait for it so the
	// re-check sees the result, and explain a link that stays down.
	deadline := s.now().Add(s.spec.WaitTimeout())
	for _, t := range targets {
		for {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("%s: waiting for ACTIVE: %w", t.object, err)
			}
			p, err := s.port(t.port.Device, t.port.Port)
			if err != nil {
				return fmt.Errorf("%s: %w", t.object, err)
			}
			if p.Active() {
				break
			}
			if !s.now().Before(deadline) {
				t.port = p
				return fmt.Errorf("netdev %s is up now, but after %s: %w", t.netdev, s.spec.WaitTimeout(), linkProblem(t))
			}
			s.sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// netlinkAdmin is the live system: netlink in a network namespace.
type netlinkAdmin struct{ ns string }

func (n netlinkAdmin) AdminUp(name string) (bool, error) {
	hd, err := host.NetlinkHandle(n.ns)
	if err != nil {
		return false, err
	}
	defer hd.Close()
	l, err := hd.LinkByName(name)
	if err != nil {
		return false, fmt.Errorf("netlink: %w%s", err, n.where())
	}
	return l.Attrs().Flags&net.FlagUp != 0, nil
}

func (n netlinkAdmin) SetUp(name string) error {
	hd, err := host.NetlinkHandle(n.ns)
	if err != nil {
		return err
	}
	defer hd.Close()
	l, err := hd.LinkByName(name)
	if err != nil {
		return fmt.Errorf("netlink: %w%s", err, n.where())
	}
	if err := hd.LinkSetUp(l); err != nil {
		return fmt.Errorf("netlink: set %s up: %w (needs CAP_NET_ADMIN)", name, err)
	}
	return nil
}

func (n netlinkAdmin) where() string {
	if n.ns == "" {
		return " (in this network namespace; give --netns if it lives in another)"
	}
	return " (in netns " + n.ns + ")"
}

// sysfsAdmin reads admin state from <root>/sys/class/net/<if>/flags: a
// fixture root with no live netdevs behind it. It cannot set anything.
type sysfsAdmin struct{ h *host.Host }

func (a sysfsAdmin) AdminUp(name string) (bool, error) {
	s, err := a.h.ReadString("/sys/class/net/" + name + "/flags")
	if err != nil {
		return false, err
	}
	_, up, err := smartnic.ParseNetFlags(s)
	return up, err
}

func (a sysfsAdmin) SetUp(name string) error { return a.refusal(name) }

// refusal is why a fixture's netdev cannot be set up: the fixture has no
// kernel behind it, and netlink would act on this machine.
func (a sysfsAdmin) refusal(name string) error {
	return &provision.Problem{Object: "rdma: netdev " + name,
		Err:       fmt.Errorf("refused: host root %s is not the live system: setting netdev %s up would be a netlink write on this machine", a.h.Root, name),
		CauseText: "--root is for read-only work on a fixture tree (inventory, rdma links, plan)",
		FixText:   "run rig up without --root on the host itself, or give --netns NAME where the netdev lives"}
}
