package ovs

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Datapath flows: what `ovs-appctl dpctl/dump-flows -m` prints, read into
// DPFlow, and which of them carried a port's traffic, offloaded or not.
//
// The format (testdata/dpflows/README.md has the sources) is one line per
// flow, lib/dpctl.c format_dpif_flow:
//
//	[ufid:UUID, ]MATCH, packets:N, bytes:N, used:(T.TTTs|never)[, flags:F][, offloaded:(yes|partial)][, dp:LAYER], actions:ACTIONS[, dp-extra-info:INFO]
//
// with a header line before each PMD thread's flows ("flow-dump from pmd on
// cpu core: N", "flow-dump from the main thread:"). ufid, offloaded, dp and
// dp-extra-info are printed with -m only, and -m prints port names
// (in_port(p0)) unless --no-names (in_port(2): datapath port numbers, as
// `dpctl/show` lists them, not OpenFlow port numbers).
//
// Use: after a check's traffic, Client.DumpDPFlows(ctx, "") (or
// DPFlowTypeOffloaded), then SummarizeDPFlows(dump.Flows, ingressName,
// ingressDPNumber) for the flows that came in on the check's ingress port.

// OffloadState says whether a datapath flow was offloaded.
type OffloadState string

const (
	// OffloadFull is `offloaded:yes`: the flow and its actions run in
	// the offload layer (dp:dpdk rte_flow, dp:tc, dp:doca).
	OffloadFull OffloadState = "yes"
	// OffloadPartial is `offloaded:partial` (with dp:ovs): only the match
	// is offloaded (rte_flow mark), the actions run in OvS's datapath.
	OffloadPartial OffloadState = "partial"
	// OffloadNone is a -m line without `offloaded:` (dp:ovs, or dp:tc for
	// a tc filter in software only).
	OffloadNone OffloadState = "no"
	// OffloadUnknown is a line that does not say: a dump without -m (no
	// dp: either), or an `offloaded:` value this parser does not know.
	OffloadUnknown OffloadState = "unknown"
)

// Datapath layers OvS prints after dp: (DPFlow.Datapath).
const (
	DatapathOVS  = "ovs"  // OvS's own datapath, kernel or userspace
	DatapathDPDK = "dpdk" // rte_flow offload (lib/netdev-offload-dpdk.c)
	DatapathTC   = "tc"   // tc flower (lib/netdev-offload-tc.c)
	DatapathDOCA = "doca" // NVIDIA OVS-DOCA (lib/dpdk-offload-doca.c)
)

// DPFlow is one datapath flow line.
type DPFlow struct {
	LineNo int    `json:"lineNo"` // 1-based, in the dump
	Line   string `json:"line"`   // trimmed, as printed
	// Thread is the header the flow came under: "pmd on cpu core: 1",
	// "the main thread", "non-dpdk interfaces" (older OvS); "" for
	// a datapath without PMD threads (kernel).
	Thread string `json:"thread,omitempty"`
	UFID   string `json:"ufid,omitempty"` // -m only
	Match  string `json:"match"`          // the key/mask part, raw
	// InPort is in_port(...)'s value as printed: a datapath port number
	// ("2") or, with names, the port's name ("p0"); "" when absent.
	InPort string `json:"inPort,omitempty"`
	// RecircID is recirc_id(...)'s value ("0", "0x1"); "" when absent.
	RecircID string `json:"recircId,omitempty"`
	Packets  uint64 `json:"packets"`
	Bytes    uint64 `json:"bytes"`
	Used     string `json:"used"`            // "0.004s" or "never", raw
	Flags    string `json:"flags,omitempty"` // TCP flags ("S", "SF."), raw
	// Offloaded is the value of `offloaded:` ("yes", "partial"), "" when
	// not printed; Offload is what it means (with Datapath).
	Offloaded string       `json:"offloaded,omitempty"`
	Offload   OffloadState `json:"offload"`
	Datapath  string       `json:"datapath,omitempty"` // dp:, "" when not printed
	Actions   string       `json:"actions"`            // raw
	ExtraInfo string       `json:"extraInfo,omitempty"`
	// Extra holds other "key:value" fields between used: and actions:
	// that this parser does not know (a vendor's OvS may add some).
	Extra map[string]string `json:"extra,omitempty"`
}

// FromPort reports whether the flow's in_port is one of ports (names or
// datapath port numbers, compared as printed).
func (f DPFlow) FromPort(ports ...string) bool {
	for _, p := range ports {
		if p != "" && f.InPort == p {
			return true
		}
	}
	return false
}

// Recirculated reports a flow matched after a recirculation (recirc_id
// not 0): its packets were counted first by the flow that recirculated them.
func (f DPFlow) Recirculated() bool {
	return f.RecircID != "" && f.RecircID != "0" && f.RecircID != "0x0"
}

// DPFlowLineError is a line ParseDPFlows could not read.
type DPFlowLineError struct {
	LineNo int    `json:"lineNo"`
	Line   string `json:"line"`
	Reason string `json:"reason"`
}

func (e DPFlowLineError) Error() string {
	return fmt.Sprintf("line %d: %s: %q", e.LineNo, e.Reason, e.Line)
}

// DPFlowParseError lists the lines of a dump that could not be read; the
// flows of the other lines are returned beside it.
type DPFlowParseError struct {
	Lines []DPFlowLineError
}

func (e *DPFlowParseError) Error() string {
	msg := make([]string, 0, 3)
	for i, l := range e.Lines {
		if i == 3 {
			msg = append(msg, fmt.Sprintf("and %d more", len(e.Lines)-3))
			break
		}
		msg = append(msg, l.Error())
	}
	return fmt.Sprintf("dpctl/dump-flows: %d unreadable line(s): %s", len(e.Lines), strings.Join(msg, "; "))
}

// ParseDPFlows reads `dpctl/dump-flows` output, with or without -m (and
// --names or --no-names). Blank lines and the "flow-dump from ..." headers
// are skipped. A line it cannot read does not stop it: it returns the flows
// it read and a *DPFlowParseError naming every line it could not.
func ParseDPFlows(out []byte) ([]DPFlow, error) {
	var flows []DPFlow
	var bad []DPFlowLineError
	thread := ""
	for i, raw := range strings.Split(string(out), "\n") {
		ln := i + 1
		t := strings.TrimSpace(raw)
		if t == "" {
			continue
		}
		if h, ok := strings.CutPrefix(t, "flow-dump from "); ok {
			thread = strings.TrimSuffix(h, ":")
			continue
		}
		f, err := parseDPFlow(t)
		if err != nil {
			bad = append(bad, DPFlowLineError{LineNo: ln, Line: t, Reason: err.Error()})
			continue
		}
		f.LineNo, f.Thread = ln, thread
		flows = append(flows, f)
	}
	if len(bad) > 0 {
		return flows, &DPFlowParseError{Lines: bad}
	}
	return flows, nil
}

// parseDPFlow reads one flow line (trimmed).
func parseDPFlow(t string) (DPFlow, error) {
	f := DPFlow{Line: t}
	rest := t
	if u, ok := strings.CutPrefix(rest, "ufid:"); ok {
		id, after, ok := strings.Cut(u, ", ")
		if !ok || !isUFID(id) {
			return f, fmt.Errorf("ufid: %q is not a UUID followed by \", \"", firstWord(u))
		}
		f.UFID, rest = id, after
	}
	mi := strings.Index(rest, ", packets:")
	if mi <= 0 {
		if strings.HasPrefix(rest, "packets:") {
			return f, errors.New("no match before packets:")
		}
		return f, errors.New("no \", packets:\" after the match")
	}
	f.Match, rest = rest[:mi], rest[mi+2:]
	if strings.Contains(f.Match, ", ") {
		return f, errors.New("the match holds \", \" (odp_flow_format separates keys with \",\" alone)")
	}
	ai := strings.Index(rest, ", actions:")
	if ai < 0 {
		return f, errors.New("no \", actions:\" after the counters")
	}
	stats, acts := rest[:ai], rest[ai+len(", actions:"):]
	if ei := strings.LastIndex(acts, ", dp-extra-info:"); ei >= 0 {
		acts, f.ExtraInfo = acts[:ei], acts[ei+len(", dp-extra-info:"):]
	}
	if acts == "" {
		return f, errors.New("empty actions")
	}
	f.Actions = acts
	if err := f.stats(stats); err != nil {
		return f, err
	}
	var err error
	if f.InPort, err = keyValue(f.Match, "in_port"); err != nil {
		return f, err
	}
	if f.RecircID, err = keyValue(f.Match, "recirc_id"); err != nil {
		return f, err
	}
	f.Offload = offloadState(f.Offloaded, f.Datapath)
	return f, nil
}

// stats reads "packets:N, bytes:N, used:T[, flags:F][, offloaded:X][, dp:L]"
// (dpif_flow_stats_format, then format_dpif_flow), other key:value fields
// into Extra.
func (f *DPFlow) stats(s string) error {
	seen := map[string]bool{}
	for i, field := range strings.Split(s, ", ") {
		k, v, ok := strings.Cut(field, ":")
		if !ok || k == "" || strings.ContainsAny(k, " ,") {
			return fmt.Errorf("counter field %q is not key:value", field)
		}
		if seen[k] {
			return fmt.Errorf("%s: printed twice", k)
		}
		seen[k] = true
		if want := [...]string{"packets", "bytes", "used"}; i < len(want) && k != want[i] {
			return fmt.Errorf("counter %d is %q, want %s: (packets:, bytes:, used: come first)", i+1, k, want[i])
		}
		var err error
		switch k {
		case "packets":
			f.Packets, err = counter(v)
		case "bytes":
			f.Bytes, err = counter(v)
		case "used":
			if !isUsed(v) {
				err = errors.New("not \"never\" or seconds (\"0.004s\")")
			}
			f.Used = v
		case "flags":
			f.Flags = v
		case "offloaded":
			f.Offloaded = v
		case "dp":
			f.Datapath = v
		default:
			if f.Extra == nil {
				f.Extra = map[string]string{}
			}
			f.Extra[k] = v
		}
		if err != nil {
			return fmt.Errorf("%s:%q: %w", k, v, err)
		}
	}
	if !seen["used"] {
		return errors.New("no packets:, bytes:, used: counters")
	}
	return nil
}

// offloadState is what offloaded: and dp: say together.
func offloadState(offloaded, dp string) OffloadState {
	switch offloaded {
	case "yes":
		return OffloadFull
	case "partial":
		return OffloadPartial
	case "":
		if dp != "" { // -m prints offloaded: whenever the flow is
			return OffloadNone
		}
	}
	return OffloadUnknown
}

// keyValue returns the value of match key name ("in_port" in
// "recirc_id(0),in_port(2),..."), "" when the match has no such key. The
// value runs to the parenthesis that closes the key's.
func keyValue(match, name string) (string, error) {
	for i := 0; i < len(match); {
		j := strings.Index(match[i:], name+"(")
		if j < 0 {
			return "", nil
		}
		j += i
		if j > 0 && match[j-1] != ',' && match[j-1] != '(' {
			i = j + len(name)
			continue
		}
		start, depth := j+len(name)+1, 1
		for k := start; k < len(match); k++ {
			switch match[k] {
			case '(':
				depth++
			case ')':
				depth--
				if depth == 0 {
					return match[start:k], nil
				}
			}
		}
		return "", fmt.Errorf("%s( is not closed", name)
	}
	return "", nil
}

// isUFID checks odp_format_ufid's form: "%08x-%04x-%04x-%04x-%04x%08x".
func isUFID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// counter reads a counter as %"PRIu64" prints it (no sign, no leading
// zero).
func counter(v string) (uint64, error) {
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, err
	}
	if strconv.FormatUint(n, 10) != v {
		return 0, errors.New("not a decimal counter as OvS prints one")
	}
	return n, nil
}

// isUsed checks dpif_flow_stats_format's used: "never" or "%.3fs" (the
// seconds since the flow last matched; negative only with a clock step).
func isUsed(v string) bool {
	if v == "never" {
		return true
	}
	n, ok := strings.CutSuffix(v, "s")
	n = strings.TrimPrefix(n, "-")
	whole, frac, dot := strings.Cut(n, ".")
	return ok && dot && whole != "" && len(frac) == 3 && allDigits(whole) && allDigits(frac)
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func firstWord(s string) string {
	if i := strings.IndexAny(s, ", "); i >= 0 {
		return s[:i]
	}
	return s
}

// DPFlowCount is a number of flows and what they counted.
type DPFlowCount struct {
	Flows   int    `json:"flows"`
	Packets uint64 `json:"packets"`
	Bytes   uint64 `json:"bytes"`
}

func (c *DPFlowCount) add(f DPFlow) {
	c.Flows++
	c.Packets += f.Packets
	c.Bytes += f.Bytes
}

// DPFlowSummary is what the datapath flows of one ingress port say.
type DPFlowSummary struct {
	// Ports are the in_port values asked for (a name and/or a datapath
	// port number).
	Ports []string `json:"ports"`
	// Total counts the flows that first matched the port's packets
	// (recirc_id 0 or none); Recirculated counts the flows that matched
	// them again after a recirculation (conntrack, bonds): their packets
	// are already in Total, so they are counted apart.
	Total        DPFlowCount `json:"total"`
	Recirculated DPFlowCount `json:"recirculated"`
	// ByOffload and ByDatapath split Total by offload state and by dp:
	// layer ("" when the dump did not print one: no -m).
	ByOffload  map[OffloadState]DPFlowCount `json:"byOffload"`
	ByDatapath map[string]DPFlowCount       `json:"byDatapath"`
	// Flows are the matching flows, recirculated ones included, in dump
	// order.
	Flows []DPFlow `json:"flows"`
}

// SummarizeDPFlows counts the flows whose in_port is one of ports, by
// offload state and datapath layer. Give the port's name for a dump with
// names (-m) and its datapath port number for one without (--no-names;
// `dpctl/show` numbers, not OpenFlow ports); both match either form.
func SummarizeDPFlows(flows []DPFlow, ports ...string) DPFlowSummary {
	s := DPFlowSummary{Ports: append([]string(nil), ports...),
		ByOffload: map[OffloadState]DPFlowCount{}, ByDatapath: map[string]DPFlowCount{}}
	for _, f := range flows {
		if !f.FromPort(ports...) {
			continue
		}
		s.Flows = append(s.Flows, f)
		if f.Recirculated() {
			s.Recirculated.add(f)
			continue
		}
		s.Total.add(f)
		c := s.ByOffload[f.Offload]
		c.add(f)
		s.ByOffload[f.Offload] = c
		d := s.ByDatapath[f.Datapath]
		d.add(f)
		s.ByDatapath[f.Datapath] = d
	}
	return s
}
