package diagnose

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"rig/internal/host"
	"rig/ovs"
)

// StatusSchema names Status' JSON shape.
const StatusSchema = "rig.ovs.status/v1"

// Status is `rig ovs status`: DPDK state, liveness of the vswitchd behind
// it, every interface, and a diagnosis for each problem.
type Status struct {
	SchemaVersion string         `json:"schemaVersion"`
	Target        ovs.Target     `json:"target"`
	Vswitchd      ovs.ProcStatus `json:"vswitchd"`
	// DPDKInitialized is the column as stored; DPDKStale is true when the
	// vswitchd that wrote it is gone (the column stays true after a crash).
	DPDKInitialized bool   `json:"dpdkInitialized"`
	DPDKStale       bool   `json:"dpdkInitializedStale"`
	DPDKVersion     string `json:"dpdkVersion,omitempty"`
	OVSVersion      string `json:"ovsVersion,omitempty"`
	// DOCA: the database is NVIDIA OVS-DOCA's (State.DOCA).
	DOCA            bool              `json:"doca"`
	DOCAInitialized bool              `json:"docaInitialized,omitempty"`
	DOCAVersion     string            `json:"docaVersion,omitempty"`
	OtherConfig     map[string]string `json:"otherConfig"`
	Bridges         []ovs.Bridge      `json:"bridges"`
	// OVSDBReachable is false when the state could not be read (Problems
	// then holds why, with the cause and fix).
	OVSDBReachable bool            `json:"ovsdbReachable"`
	Problems       []ovs.Diagnosis `json:"problems,omitempty"`
	// Flows: the datapath flows per interface (rig ovs status --flows).
	Flows *FlowsStatus `json:"flows,omitempty"`
	// OK is true only when ovsdb answers, ovs-vswitchd runs, DPDK is
	// initialised and every interface is attached.
	OK bool `json:"ok"`
}

// DiagnoseReadError explains a failed read of the database: the cause and
// fix `rig up`'s ovs step and `rig ovs status` both give.
func DiagnoseReadError(c *ovs.Client, err error) ovs.Diagnosis {
	d := ovs.Diagnosis{Object: "ovs: ovsdb", Kind: ProblemOVSDBUnreachable, Error: err.Error()}
	var te *host.ToolError
	if errors.As(err, &te) {
		// what the tool said; its argv goes to JSON, not into the sentence
		d.Argv = te.Argv
		out := strings.TrimSpace(te.Stderr)
		if out == "" {
			out = strings.TrimSpace(te.Stdout)
		}
		if out != "" {
			d.Error = out + " (" + te.Err.Error() + ")"
		}
	}
	if !ovs.Unreachable(err) {
		d.Kind = ProblemOVSDBRead
	}
	t := c.Target
	if t.Private {
		d.Cause = "ovsdb-server of the private instance in " + t.RunDir + " is not running"
		d.Fix = "rig ovs daemon start --rundir " + t.RunDir
	} else {
		db := t.DB
		if db == "" {
			db = "the default socket " + ovs.SystemRunDir + "/db.sock"
		}
		d.Cause = "ovsdb-server is not running or not reachable at " + db
		d.Fix = "systemctl start openvswitch-switch (or pass --rundir/--db for a private instance)"
	}
	return d
}

// ReadStatus reads everything `rig ovs status` shows.
func ReadStatus(ctx context.Context, c *ovs.Client) (*Status, error) {
	st, err := c.ReadState(ctx)
	if err != nil {
		return &Status{SchemaVersion: StatusSchema, Target: c.Target, Vswitchd: c.VswitchdStatus(),
			OtherConfig: map[string]string{}, Bridges: []ovs.Bridge{}, Problems: []ovs.Diagnosis{DiagnoseReadError(c, err)}}, nil
	}
	s := &Status{SchemaVersion: StatusSchema, Target: c.Target, Vswitchd: c.VswitchdStatus(), OVSDBReachable: true,
		DPDKInitialized: st.DPDKInitialized, DPDKVersion: st.DPDKVersion, OVSVersion: st.OVSVersion,
		DOCA: st.DOCA, DOCAInitialized: st.DOCAInitialized, DOCAVersion: st.DOCAVersion,
		OtherConfig: st.OtherConfig, Bridges: st.Bridges}
	if s.Bridges == nil {
		s.Bridges = []ovs.Bridge{}
	}
	if !s.Vswitchd.Alive {
		s.DPDKStale = st.DPDKInitialized
		s.Problems = append(s.Problems, c.VswitchdDown(s.Vswitchd, st))
		return s, nil
	}
	var failed []ovs.Interface
	for _, b := range s.Bridges {
		for _, p := range b.Ports {
			for _, ifc := range p.Interfaces {
				if !ifc.Attached() {
					failed = append(failed, ifc)
				}
			}
		}
	}
	log := EvidenceLog(ctx, c, st, failed...)
	if !st.DPDKInitialized {
		// requested or not, no DPDK means no dpdk port can work: say which
		d := DiagnoseDPDK(st, log)
		if c.Target.Private {
			d.Fix = strings.ReplaceAll(d.Fix, "`rig up`", "`rig up --rundir "+c.Target.RunDir+"`")
		}
		s.Problems = append(s.Problems, d)
	}
	for _, b := range s.Bridges {
		for _, p := range b.Ports {
			for i := range p.Interfaces {
				ifc := &p.Interfaces[i]
				if ifc.Resolution == ovs.ResolutionName {
					ifc.ResolvedTo = describeDOCAName(c.Host(), ifc.Name)
				}
				if !ifc.Attached() { // same rule as the ovs step: ofport > 0 and no error
					s.Problems = append(s.Problems, Diagnose(c.Host(), st, *ifc, log))
				}
			}
		}
	}
	s.OK = len(s.Problems) == 0 && s.DPDKInitialized && s.Vswitchd.Alive
	return s, nil
}

// WriteText prints the status for people.
func (s *Status) WriteText(w io.Writer) error {
	alive := "running"
	if !s.Vswitchd.Alive {
		alive = "NOT RUNNING (" + strings.TrimSuffix(s.Vswitchd.Note, " (not running)") + ")"
	} else {
		alive += fmt.Sprintf(" (pid %d)", s.Vswitchd.PID)
	}
	init := strconv.FormatBool(s.DPDKInitialized)
	if s.DPDKStale {
		init += " (STALE: written by a vswitchd that is gone)"
	}
	db := s.Target.DB
	if db == "" {
		db = "(system default)"
	}
	if !s.OVSDBReachable {
		fmt.Fprintf(w, "ovsdb:             %s: UNREACHABLE\n", db)
		fmt.Fprintf(w, "ovs-vswitchd:      %s\n", alive)
		return s.writeProblems(w)
	}
	fmt.Fprintf(w, "ovsdb:             %s\n", db)
	fmt.Fprintf(w, "ovs-vswitchd:      %s\n", alive)
	fmt.Fprintf(w, "dpdk_initialized:  %s\n", init)
	if s.DPDKVersion != "" {
		fmt.Fprintf(w, "dpdk_version:      %s\n", s.DPDKVersion)
	}
	if s.DOCA {
		v := ""
		if s.DOCAVersion != "" {
			v = " (DOCA " + s.DOCAVersion + ")"
		}
		fmt.Fprintf(w, "doca_initialized:  %v%s: NVIDIA OVS-DOCA\n", s.DOCAInitialized, v)
	}
	var keys []string
	for k := range s.OtherConfig {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "other_config:      %s=%s\n", k, s.OtherConfig[k])
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BRIDGE\tPORT\tTYPE\tOFPORT\tLINK\tADMIN\tRXQ\tRX_PKTS\tTX_PKTS\tDEVARGS\tRESOLUTION\tERROR")
	for _, b := range s.Bridges {
		for _, p := range b.Ports {
			for _, i := range p.Interfaces {
				rxq := i.NRxq
				if rxq == "" {
					rxq = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", b.Name, i.Name, i.Type, i.OFPort,
					dash(i.LinkState), dash(i.AdminState), rxq, i.Statistics["rx_packets"], i.Statistics["tx_packets"], dash(i.Devargs()),
					resolutionText(i), dash(i.Error))
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if s.Flows != nil {
		if err := s.Flows.WriteText(w); err != nil {
			return err
		}
	}
	return s.writeProblems(w)
}

// Verdict is the one-line summary: what is true, "ok: ..." only when OK.
func (s *Status) Verdict() string {
	if !s.OK {
		return fmt.Sprintf("NOT OK: %d problem(s)", len(s.Problems))
	}
	n := 0
	for _, b := range s.Bridges {
		for _, p := range b.Ports {
			n += len(p.Interfaces)
		}
	}
	v := "ok: DPDK initialised"
	if s.DPDKVersion != "" {
		v += " (" + s.DPDKVersion + ")"
	}
	return v + fmt.Sprintf(", ovs-vswitchd running, %d interface(s) on %d bridge(s), all attached", n, len(s.Bridges))
}

func (s *Status) writeProblems(w io.Writer) error {
	if len(s.Problems) == 0 {
		_, err := fmt.Fprintln(w, "\n"+s.Verdict())
		return err
	}
	fmt.Fprintf(w, "\n%s:\n", s.Verdict())
	for _, p := range s.Problems {
		fmt.Fprintf(w, "- %s: %s\n    cause: %s\n    fix:   %s\n", p.Object, p.Error, p.Cause, p.Fix)
		for _, e := range p.Evidence {
			fmt.Fprintf(w, "    log:   %s\n", e)
		}
	}
	return nil
}

// resolutionText is the RESOLUTION cell: how OvS finds a DPDK port's
// device.
func resolutionText(i ovs.Interface) string {
	switch i.Resolution {
	case ovs.ResolutionDevargs:
		return "devargs given"
	case ovs.ResolutionName:
		if i.ResolvedTo != "" {
			return "by netdev name: " + i.ResolvedTo
		}
		return "by netdev name"
	case ovs.ResolutionNone:
		return "none (no devargs, and this OvS resolves no names)"
	}
	return "-"
}

// describeDOCAName says what OVS-DOCA resolves a port name to, or why it
// cannot, from sysfs.
func describeDOCAName(h ovs.Host, name string) string {
	n, err := ovs.ResolveDOCAName(h, name)
	if err != nil {
		return "does not resolve: " + err.Error()
	}
	return n.String()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
