package provision

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"rig/internal/host"
	"rig/ovs"
)

// CheckCookie marks every OpenFlow flow the check adds ("rig-chk" in
// ASCII): the check removes its flows, and a later run removes a killed
// run's leftovers, by this cookie alone.
const CheckCookie uint64 = 0x7269672d63686b

// CheckPortPrefix names every port the check adds to a bridge.
const CheckPortPrefix = "rig-chk-"

// checkOVS is what the check step needs of OvS: the database (ports), the
// OpenFlow tables (flows with rig's cookie) and live per-port counters.
type checkOVS interface {
	ReadState(ctx context.Context) (*ovs.State, error)
	AddPort(ctx context.Context, bridge, port string, s ovs.IfaceSettings) error
	DeletePort(ctx context.Context, bridge, port string) error
	AddFlows(ctx context.Context, bridge string, flows ...string) error
	DelFlowsByCookie(ctx context.Context, bridge string, cookie uint64) error
	FlowsByCookie(ctx context.Context, bridge string, cookie uint64) ([]string, error)
	// PortCounters are the live counters of every port of bridge, by port
	// name: OvS's statistics keys (rx_packets, tx_dropped, ...).
	PortCounters(ctx context.Context, bridge string) (map[string]map[string]uint64, error)
	// PMDStats is `dpif-netdev/pmd-stats-show` after ClearPMDStats.
	ClearPMDStats(ctx context.Context) error
	PMDStats(ctx context.Context) (string, error)
}

// ofClient adds what the check needs beyond ovs.Client: ovs-ofctl for the
// cookie flows and live port counters, ovs-appctl for PMD statistics,
// all through the host's exec seam.
type ofClient struct {
	*ovs.Client
	h *host.Host
}

func newOFClient(h *host.Host, c *ovs.Client) *ofClient { return &ofClient{Client: c, h: h} }

// ofTarget is the bridge as ovs-ofctl names it: the private instance's
// management socket (its rundir), else the bridge name.
func (c *ofClient) ofTarget(bridge string) string {
	if c.Target.Private {
		return "unix:" + filepath.Join(c.Target.RunDir, bridge+".mgmt")
	}
	return bridge
}

func (c *ofClient) ofctl(ctx context.Context, args ...string) ([]byte, error) {
	out, err := c.h.Run(ctx, "ovs-ofctl", args...)
	if err != nil {
		return out, fmt.Errorf("ovs: %w", err)
	}
	return out, nil
}

func cookieMatch(cookie uint64) string { return fmt.Sprintf("cookie=%#x/-1", cookie) }

// AddFlows adds flows (each `ovs-ofctl add-flow` syntax) one call each.
func (c *ofClient) AddFlows(ctx context.Context, bridge string, flows ...string) error {
	for _, f := range flows {
		if _, err := c.ofctl(ctx, "add-flow", c.ofTarget(bridge), f); err != nil {
			return err
		}
	}
	return nil
}

// DelFlowsByCookie deletes every flow whose cookie is exactly cookie.
func (c *ofClient) DelFlowsByCookie(ctx context.Context, bridge string, cookie uint64) error {
	_, err := c.ofctl(ctx, "del-flows", c.ofTarget(bridge), cookieMatch(cookie))
	return err
}

// FlowsByCookie lists the flows whose cookie is exactly cookie.
func (c *ofClient) FlowsByCookie(ctx context.Context, bridge string, cookie uint64) ([]string, error) {
	out, err := c.ofctl(ctx, "dump-flows", c.ofTarget(bridge), cookieMatch(cookie))
	if err != nil {
		return nil, err
	}
	var flows []string
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "cookie=") {
			flows = append(flows, l)
		}
	}
	return flows, nil
}

// PortCounters reads the Interface statistics of the bridge's ports.
func (c *ofClient) PortCounters(ctx context.Context, bridge string) (map[string]map[string]uint64, error) {
	st, err := c.ReadState(ctx)
	if err != nil {
		return nil, err
	}
	b, ok := st.Bridge(bridge)
	if !ok {
		return nil, fmt.Errorf("ovs: bridge %s: no such bridge", bridge)
	}
	out := map[string]map[string]uint64{}
	for _, p := range b.Ports {
		for _, ifc := range p.Interfaces {
			m := map[string]uint64{}
			for k, v := range ifc.Statistics {
				if v >= 0 {
					m[k] = uint64(v)
				}
			}
			out[p.Name] = m
		}
	}
	return out, nil
}

// appctl runs ovs-appctl against this instance's ovs-vswitchd.
func (c *ofClient) appctl(ctx context.Context, args ...string) ([]byte, error) {
	var pre []string
	if c.Target.Private {
		pre = []string{"-t", filepath.Join(c.Target.RunDir, "ovs-vswitchd.ctl")}
	}
	out, err := c.h.Run(ctx, "ovs-appctl", append(pre, args...)...)
	if err != nil {
		return out, fmt.Errorf("ovs: %w", err)
	}
	return out, nil
}

func (c *ofClient) ClearPMDStats(ctx context.Context) error {
	_, err := c.appctl(ctx, "dpif-netdev/pmd-stats-clear")
	return err
}

func (c *ofClient) PMDStats(ctx context.Context) (string, error) {
	out, err := c.appctl(ctx, "dpif-netdev/pmd-stats-show")
	return string(out), err
}

// flowInOut is the check's one flow per direction: every frame entering
// in leaves by out, above anything the bridge has.
func flowInOut(in, out int64) string {
	return "cookie=" + fmt.Sprintf("%#x", CheckCookie) + ",priority=65535,in_port=" + strconv.FormatInt(in, 10) +
		",actions=output:" + strconv.FormatInt(out, 10)
}
