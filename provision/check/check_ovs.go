package check

import (
	"context"
	"fmt"
	"strconv"

	"rig/ovs"
)

// CheckCookie marks every OpenFlow flow the check adds ("rig-chk" in
// ASCII): the check removes its flows, and a later run removes a killed
// run's leftovers, by this cookie alone.
const CheckCookie uint64 = 0x7269672d63686b

// CheckPortPrefix names every port the check adds to a bridge.
const CheckPortPrefix = "rig-chk-"

// checkOVS is what the check step needs of OvS (ovs.Client): the
// database (ports), the OpenFlow tables (flows with rig's cookie), live
// per-port counters, PMD statistics, the datapath flows and the log.
type checkOVS interface {
	ReadState(ctx context.Context) (*ovs.State, error)
	AddPort(ctx context.Context, bridge, port string, s ovs.IfaceSettings) error
	DeletePort(ctx context.Context, bridge, port string) error
	AddFlows(ctx context.Context, bridge string, flows ...string) error
	DelFlowsByCookie(ctx context.Context, bridge string, cookie uint64) error
	FlowsByCookie(ctx context.Context, bridge string, cookie uint64) ([]string, error)
	PortCounters(ctx context.Context, bridge string) (map[string]ovs.Counters, error)
	ClearPMDStats(ctx context.Context) error
	PMDStats(ctx context.Context) ([]ovs.PMDStats, error)
	// the datapath flows (dpctl/dump-flows -m) and the vswitchd log since
	// its start: whether the check's traffic was offloaded, and why not
	DumpDPFlows(ctx context.Context, typ string) (*ovs.DPFlowDump, error)
	LogSinceStart() ovs.LogTail
}

// flowInOut is the check's one flow per direction: every frame entering
// in leaves by out, above anything the bridge has.
func flowInOut(in, out int64) string {
	return "cookie=" + fmt.Sprintf("%#x", CheckCookie) + ",priority=65535,in_port=" + strconv.FormatInt(in, 10) +
		",actions=output:" + strconv.FormatInt(out, 10)
}
