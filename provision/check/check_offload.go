package check

import (
	"context"
	"fmt"
	"io"
	"strings"

	"rig/internal/labinfo"
	"rig/ovs"
	"rig/ovs/diagnose"
	"rig/playbooks"
)

// CheckOffload is whether the datapath flows that carried the check's
// traffic (in at its ingress port) were offloaded to the NIC, read from
// `ovs-appctl dpctl/dump-flows -m` right after the traffic, and why not
// (diagnose.AnalyzeOffload). With check.offload: required the check fails
// (exit 4) unless every one of them was offloaded.
type CheckOffload struct {
	Mode string `json:"mode"` // preferred | required
	diagnose.OffloadReport
	Pass bool     `json:"pass"`           // required: every flow offloaded; preferred: always
	Argv []string `json:"argv,omitempty"` // the dump that was read
	// Error: the flows could not be read (the report is empty then);
	// Unreadable: lines of the dump that could not be read (the others
	// are judged).
	Error      string                `json:"error,omitempty"`
	Unreadable []ovs.DPFlowLineError `json:"unreadable,omitempty"`
}

// offload reads the datapath flows after the traffic and judges them by
// the check's offload mode (nil when off).
func (s *checkStep) offload(ctx context.Context, p *checkPath) *CheckOffload {
	mode := s.spec.OffloadOrDefault()
	if mode == playbooks.OffloadOff {
		return nil
	}
	o := &CheckOffload{Mode: mode}
	dump, err := s.o.DumpDPFlows(ctx, "")
	if dump != nil {
		o.Argv = dump.Argv
	}
	st, serr := s.o.ReadState(ctx)
	if err == nil && serr != nil {
		err = serr
	}
	if err != nil {
		o.Error = err.Error()
		o.Verdict = "not read"
		o.Pass = mode != playbooks.OffloadRequired
		return o
	}
	o.Unreadable = dump.Unreadable
	o.OffloadReport = diagnose.AnalyzeOffload(diagnose.OffloadEvidence{Port: s.offloadPort(p, st), OtherConfig: st.OtherConfig,
		Log: s.o.LogSinceStart(), Flows: dump.Flows})
	o.Pass = mode != playbooks.OffloadRequired || o.Verdict == diagnose.OffloadVerdictFull
	return o
}

// offloadPort is what is behind the check's ingress port: the check's own
// vhost-user or memif port (no card), else the bridge's port as
// diagnose.PortOffloadFacts reads it (a lab's stand-in, the card's uplink or
// representor and its eSwitch mode).
func (s *checkStep) offloadPort(p *checkPath, st *ovs.State) diagnose.OffloadPort {
	if p.kind != pathPorts && len(p.settings) > 0 { // rig's own port, made for the check
		return diagnose.OffloadPort{Name: p.in, Kind: strings.TrimSpace(p.settings[0].Type + " " + p.settings[0].Devargs)}
	}
	ifc, ok := st.Interface(p.in)
	if !ok {
		return diagnose.OffloadPort{Name: p.in}
	}
	lab, _ := labinfo.Read(s.env.Host.Root)
	return diagnose.PortOffloadFacts(s.env.Host, lab, *ifc)
}

// offloadFailure is check.offload: required not met: what it says and
// the causes' fixes.
func offloadFailure(o *CheckOffload) ThresholdVerdict {
	return ThresholdVerdict{Name: "offload required: flows offloaded of those in at " + o.Port, Limit: float64(o.Flows), Measured: float64(o.Offloaded),
		Note: o.Verdict}
}

// causes and fixes of a failed required offload, one per line.
func (o *CheckOffload) causeText() string {
	var c []string
	for _, x := range o.Causes {
		c = append(c, x.Cause)
	}
	if o.Error != "" {
		c = append(c, "the datapath flows could not be read: "+o.Error)
	}
	if o.Verdict == diagnose.OffloadVerdictNoFlows {
		c = append(c, fmt.Sprintf("no datapath flow in at %s was found after the traffic (they expire 10 s after their last packet)", o.Port))
	}
	return strings.Join(c, "; ")
}

func (o *CheckOffload) fixText() string {
	var f []string
	for _, x := range o.Causes {
		f = append(f, x.Fix)
	}
	if len(f) == 0 {
		f = append(f, "rerun the check; `rig ovs status --flows` lists the datapath flows and their offload state")
	}
	return strings.Join(f, "; ")
}

// writeText prints the offload report for people.
func (o *CheckOffload) writeText(w io.Writer) {
	if o.Error != "" {
		fmt.Fprintf(w, "offload (%s): datapath flows not read: %s\n", o.Mode, o.Error)
		return
	}
	fmt.Fprintf(w, "offload (%s): %d datapath flow(s) in at %s, %d packet(s): %d offloaded, %d partially, %d not", o.Mode, o.Flows, o.Port, o.Packets,
		o.Offloaded, o.Partial, o.NotOffloaded)
	var dps []string
	for _, dp := range []string{ovs.DatapathOVS, ovs.DatapathDPDK, ovs.DatapathTC, ovs.DatapathDOCA, ""} {
		if n := o.Datapaths[dp]; n > 0 {
			if dp == "" {
				dp = "not said"
			}
			dps = append(dps, fmt.Sprintf("dp:%s %d", dp, n))
		}
	}
	if len(dps) > 0 {
		fmt.Fprintf(w, " (%s)", strings.Join(dps, ", "))
	}
	verdict := o.Verdict
	for _, c := range o.Causes {
		if c.Kind == diagnose.OffloadCauseLab && o.Verdict != diagnose.OffloadVerdictFull {
			verdict += ": lab" // the truth in a virtual lab: no eSwitch behind its ports
			break
		}
	}
	if !o.HWOffload {
		verdict += ", hw-offload off"
	}
	fmt.Fprintf(w, ": %s\n", verdict)
	for _, c := range o.Causes {
		fmt.Fprintf(w, "  why: %s\n    fix: %s\n", c.Cause, c.Fix)
		for _, e := range c.Evidence {
			fmt.Fprintf(w, "    log: %s\n", e)
		}
	}
	if o.Mode == playbooks.OffloadRequired {
		fmt.Fprintf(w, "  offload required: %s\n", map[bool]string{true: "pass", false: "FAIL"}[o.Pass])
	}
}
