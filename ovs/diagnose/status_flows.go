package diagnose

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"rig/internal/labinfo"
	"rig/ovs"
)

// FlowsStatus is `rig ovs status --flows`: the datapath flows of the
// running ovs-vswitchd (dpctl/dump-flows -m), per bridge interface: how
// many came in there, their packets, whether they were offloaded, on which
// datapath layer, and for those not (all) offloaded why not (AnalyzeOffload).
type FlowsStatus struct {
	Argv []string `json:"argv"`
	// Ports: every interface of every bridge, in the bridges' order.
	Ports      []OffloadReport       `json:"ports"`
	Unreadable []ovs.DPFlowLineError `json:"unreadable,omitempty"`
}

// ReadFlows dumps the datapath flows and reports each interface of st's
// bridges; lab is the virtual lab's record (nil outside one).
func ReadFlows(ctx context.Context, c *ovs.Client, st *Status, lab *labinfo.Info) (*FlowsStatus, error) {
	dump, err := c.DumpDPFlows(ctx, "")
	if err != nil {
		return nil, err
	}
	fs := &FlowsStatus{Argv: dump.Argv, Ports: []OffloadReport{}, Unreadable: dump.Unreadable}
	log := c.LogSinceStart()
	for _, b := range st.Bridges {
		for _, p := range b.Ports {
			for _, ifc := range p.Interfaces {
				fs.Ports = append(fs.Ports, AnalyzeOffload(OffloadEvidence{Port: PortOffloadFacts(c.Host(), lab, ifc),
					OtherConfig: st.OtherConfig, Log: log, Flows: dump.Flows}))
			}
		}
	}
	return fs, nil
}

// WriteText prints the flows per port, then why the ports whose flows
// were not (all) offloaded were not.
func (fs *FlowsStatus) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "\ndatapath flows (%s):\n", strings.Join(fs.Argv, " "))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PORT\tFLOWS\tPACKETS\tOFFLOADED\tPARTIAL\tNOT\tDATAPATHS\tVERDICT")
	for _, r := range fs.Ports {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", r.Port, r.Flows, r.Packets, r.Offloaded, r.Partial, r.NotOffloaded, datapathsText(r.Datapaths), r.Verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range fs.Ports {
		for _, c := range r.Causes {
			fmt.Fprintf(w, "%s: %s\n  fix: %s\n", r.Port, c.Cause, c.Fix)
			for _, e := range c.Evidence {
				fmt.Fprintf(w, "  log: %s\n", e)
			}
		}
	}
	for _, u := range fs.Unreadable {
		fmt.Fprintf(w, "unreadable: %s\n", u.Error())
	}
	return nil
}

// datapathsText is "ovs:2 dpdk:1" ("-" for none), in a fixed order.
func datapathsText(dps map[string]int) string {
	out := ""
	for _, dp := range []string{ovs.DatapathOVS, ovs.DatapathDPDK, ovs.DatapathTC, ovs.DatapathDOCA, ""} {
		if n := dps[dp]; n > 0 {
			if dp == "" {
				dp = "?"
			}
			if out != "" {
				out += " "
			}
			out += fmt.Sprintf("%s:%d", dp, n)
		}
	}
	return dash(out)
}
