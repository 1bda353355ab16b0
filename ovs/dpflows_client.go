package ovs

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Reading the datapath flows of a running ovs-vswitchd (dpflows.go parses
// them).

// DPFlowTypeOffloaded is the type= of DumpDPFlows that lists only fully
// offloaded flows (offloaded and layer not ovs; lib/dpctl.c
// flow_passes_type_filter).
const DPFlowTypeOffloaded = "offloaded"

// DPFlowDump is one `dpctl/dump-flows -m` read by DumpDPFlows.
type DPFlowDump struct {
	Argv []string `json:"argv"` // the ovs-appctl argv that gave Flows
	// Type is the type= filter Flows were dumped with ("" for none).
	Type string `json:"type,omitempty"`
	// TypeRefused is set when the OvS refused the type= asked for: what it
	// said. Flows are then the unfiltered dump (Type ""), and offload type
	// filtering is not available on this OvS.
	TypeRefused string   `json:"typeRefused,omitempty"`
	Flows       []DPFlow `json:"flows"`
	// Unreadable lists the lines ParseDPFlows could not read; Flows holds
	// the others.
	Unreadable []DPFlowLineError `json:"unreadable,omitempty"`
}

// DPFlowsArgs is the ovs-appctl command of DumpDPFlows (after -t and
// --timeout): `dpctl/dump-flows -m [type=TYPE]`.
func DPFlowsArgs(typ string) []string {
	a := []string{"dpctl/dump-flows", "-m"}
	if typ != "" {
		a = append(a, "type="+typ)
	}
	return a
}

// ProblemNoDatapath is a dump-flows answered "no datapaths exist": the
// ovs-vswitchd has no bridge.
const ProblemNoDatapath = "no-datapath"

// DumpDPFlows runs `ovs-appctl [-t CTL] --timeout=N dpctl/dump-flows -m
// [type=TYPE]` against this instance's ovs-vswitchd (typ "" for every flow,
// DPFlowTypeOffloaded for the fully offloaded ones) and parses it. When the
// OvS refuses type= (one from before type= existed takes the word for a
// datapath name; one that knows other types says "Failed to parse type"),
// it dumps again without type= and returns that, with TypeRefused saying
// what the OvS said: offload type filtering is not available there. Lines
// it cannot read are in Unreadable, not an error; the error is for a dump
// that could not be made (ovs-vswitchd down: a *ToolProblem).
func (c *Client) DumpDPFlows(ctx context.Context, typ string) (*DPFlowDump, error) {
	d := &DPFlowDump{Argv: c.appctlArgv(DPFlowsArgs(typ)...), Type: typ}
	out, err := c.Appctl(ctx, DPFlowsArgs(typ)...)
	if err != nil && typ != "" && typeRefused(toolOutput(err)) {
		refused := strings.TrimSpace(toolOutput(err))
		d = &DPFlowDump{Argv: c.appctlArgv(DPFlowsArgs("")...), TypeRefused: refused}
		out, err = c.Appctl(ctx, DPFlowsArgs("")...)
	}
	if err != nil {
		if strings.Contains(toolOutput(err), "no datapaths exist") {
			return nil, &ToolProblem{Err: err, Diagnosis: Diagnosis{Object: "ovs: dpctl", Kind: ProblemNoDatapath,
				Argv: toolArgv(err), Error: strings.TrimSpace(toolOutput(err)),
				Cause: "ovs-vswitchd has no datapath: no bridge exists, so there are no datapath flows to read",
				Fix:   "create the bridge the traffic goes through (ovs section of the playbook, then `rig up`)"}}
		}
		return nil, fmt.Errorf("ovs: reading datapath flows: %w", err)
	}
	flows, perr := ParseDPFlows(out)
	d.Flows = flows
	var pe *DPFlowParseError
	if errors.As(perr, &pe) {
		d.Unreadable = pe.Lines
	}
	return d, nil
}

// typeRefused reports an ovs-appctl dpctl/dump-flows failure that is the
// type= argument's: an unknown type (lib/dpctl.c populate_dump_types), the
// word taken for a datapath name by an OvS without type= (opt_dpif_open),
// or ovs-dpctl's refusal of type=.
func typeRefused(out string) bool {
	return strings.Contains(out, "Failed to parse type") || strings.Contains(out, "datapath not found") ||
		strings.Contains(out, "opening datapath") || strings.Contains(out, "Invalid argument 'type'")
}
