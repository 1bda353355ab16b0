package ovs

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func dpflowsFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "dpflows", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func parseFixture(t *testing.T, name string) []DPFlow {
	t.Helper()
	flows, err := ParseDPFlows(dpflowsFixture(t, name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return flows
}

// Recorded OvS 3.1 -m: the main-thread header, ufid, names in in_port and
// actions, dp:ovs, dp-extra-info; ARP flows never used, the TCP one with
// flags.
func TestParseDPFlowsRecordedVerbose(t *testing.T) {
	flows := parseFixture(t, "ovs31-netdev-m.txt")
	if len(flows) != 3 {
		t.Fatalf("flows: %+v", flows)
	}
	tcp := flows[2]
	want := DPFlow{LineNo: 4, Line: tcp.Line, Thread: "the main thread", UFID: "322d8c29-b0f1-40cd-b2dd-696f2b2285a0",
		Match:  "skb_priority(0/0),skb_mark(0/0),ct_state(0/0),ct_zone(0/0),ct_mark(0/0),ct_label(0/0),recirc_id(0),dp_hash(0/0),in_port(rdpfa0),packet_type(ns=0,id=0),eth(src=02:00:00:00:0a:01,dst=02:00:00:00:0b:01),eth_type(0x0800),ipv4(src=10.250.77.1/0.0.0.0,dst=10.250.77.2/0.0.0.0,proto=6/0,tos=0/0,ttl=64/0,frag=no),tcp(src=48396/0,dst=9/0),tcp_flags(0/0)",
		InPort: "rdpfa0", RecircID: "0", Packets: 1, Bytes: 74, Used: "1.504s", Flags: "S",
		Offload: OffloadNone, Datapath: DatapathOVS, Actions: "rdpfb0", ExtraInfo: "miniflow_bits(5,1)"}
	if !reflect.DeepEqual(tcp, want) {
		t.Errorf("tcp flow:\n got %+v\nwant %+v", tcp, want)
	}
	arp := flows[0]
	if arp.Used != "never" || arp.Packets != 0 || arp.Actions != "rdpfbr,rdpfb0" || arp.ExtraInfo != "miniflow_bits(5,2)" || arp.Flags != "" || arp.LineNo != 2 {
		t.Errorf("arp flow: %+v", arp)
	}
	if flows[1].InPort != "rdpfb0" || flows[1].Actions != "rdpfa0" {
		t.Errorf("reply flow: %+v", flows[1])
	}
	// --no-names: the same flows, datapath port numbers (dpctl/show: rdpfa0 is 2)
	nums := parseFixture(t, "ovs31-netdev-m-no-names.txt")
	if len(nums) != 3 || nums[2].InPort != "2" || nums[2].Actions != "3" || nums[0].Actions != "1,3" || nums[2].UFID != tcp.UFID {
		t.Errorf("no-names: %+v", nums)
	}
	if show := string(dpflowsFixture(t, "ovs31-dpctl-show.txt")); !strings.Contains(show, "port 2: rdpfa0") {
		t.Errorf("dpctl/show fixture: %s", show)
	}
}

// Without -m: no ufid, no dp:, no offloaded:, so the offload state is
// unknown; numbers in in_port.
func TestParseDPFlowsRecordedPlain(t *testing.T) {
	flows := parseFixture(t, "ovs31-netdev-plain.txt")
	if len(flows) != 3 {
		t.Fatalf("flows: %+v", flows)
	}
	f := flows[2]
	if f.UFID != "" || f.Datapath != "" || f.Offload != OffloadUnknown || f.InPort != "2" || f.Packets != 1 || f.Bytes != 74 ||
		f.Flags != "S" || f.Actions != "3" || f.ExtraInfo != "" || f.Match != "recirc_id(0),in_port(2),packet_type(ns=0,id=0),eth(src=02:00:00:00:0a:01,dst=02:00:00:00:0b:01),eth_type(0x0800),ipv4(frag=no)" {
		t.Errorf("plain: %+v", f)
	}
	if off := dpflowsFixture(t, "ovs31-netdev-m-type-offloaded.txt"); len(off) != 0 {
		t.Fatalf("recorded type=offloaded is empty, got %q", off)
	}
	if flows, err := ParseDPFlows(nil); err != nil || len(flows) != 0 {
		t.Errorf("empty dump: %+v %v", flows, err)
	}
}

// conntrack: a recirc_id(0) flow recirculates to a recirc_id(0x1) flow;
// both come in on rdpfa0 and both count the same 31 packets.
func TestParseDPFlowsRecordedRecirc(t *testing.T) {
	flows := parseFixture(t, "ovs31-netdev-ct-m.txt")
	if len(flows) != 2 {
		t.Fatalf("flows: %+v", flows)
	}
	if r := flows[0]; r.RecircID != "0x1" || !r.Recirculated() || r.InPort != "rdpfa0" || r.Packets != 31 || r.Bytes != 1724 {
		t.Errorf("recirculated flow: %+v", r)
	}
	if f := flows[1]; f.RecircID != "0" || f.Recirculated() || f.Actions != "ct,recirc(0x1)" || f.Packets != 31 {
		t.Errorf("first pass: %+v", f)
	}
	s := SummarizeDPFlows(flows, "rdpfa0", "2")
	if s.Total != (DPFlowCount{Flows: 1, Packets: 31, Bytes: 1724}) || s.Recirculated != (DPFlowCount{Flows: 1, Packets: 31, Bytes: 1724}) || len(s.Flows) != 2 {
		t.Errorf("summary: %+v", s)
	}
	plain := parseFixture(t, "ovs31-netdev-ct-plain.txt")
	if len(plain) != 2 || plain[0].RecircID != "0x1" || plain[1].Actions != "ct,recirc(0x1)" || plain[1].InPort != "2" {
		t.Errorf("plain ct: %+v", plain)
	}
}

// The offload forms, built from the sources: dp:dpdk full, partial
// (offloaded:partial, dp:ovs), dp:doca, dp:tc in and out of hardware.
func TestParseDPFlowsOffloadForms(t *testing.T) {
	dpdk := parseFixture(t, "dpdk-offload.txt")
	if len(dpdk) != 4 {
		t.Fatalf("dpdk: %+v", dpdk)
	}
	type form struct {
		thread, offloaded, dp string
		state                 OffloadState
	}
	got := func(fs []DPFlow) []form {
		var out []form
		for _, f := range fs {
			out = append(out, form{f.Thread, f.Offloaded, f.Datapath, f.Offload})
		}
		return out
	}
	if g, w := got(dpdk), []form{{"pmd on cpu core: 1", "yes", "dpdk", OffloadFull}, {"pmd on cpu core: 1", "partial", "ovs", OffloadPartial},
		{"pmd on cpu core: 1", "", "ovs", OffloadNone}, {"pmd on cpu core: 3", "yes", "dpdk", OffloadFull}}; !reflect.DeepEqual(g, w) {
		t.Errorf("dpdk forms:\n got %+v\nwant %+v", g, w)
	}
	if dpdk[0].Packets != 4000000 || dpdk[0].InPort != "p0" || dpdk[1].Actions != "pf0hpf,dpdkbr0" {
		t.Errorf("dpdk: %+v", dpdk[:2])
	}
	doca := parseFixture(t, "doca-offload.txt")
	if g, w := got(doca), []form{{"pmd on cpu core: 1", "yes", "doca", OffloadFull}, {"pmd on cpu core: 1", "", "ovs", OffloadNone},
		{"pmd on cpu core: 1", "yes", "doca", OffloadFull}}; !reflect.DeepEqual(g, w) {
		t.Errorf("doca forms:\n got %+v\nwant %+v", g, w)
	}
	tc := parseFixture(t, "tc-offload.txt")
	if g, w := got(tc), []form{{"", "yes", "tc", OffloadFull}, {"", "", "tc", OffloadNone}, {"", "", "ovs", OffloadNone}}; !reflect.DeepEqual(g, w) {
		t.Errorf("tc forms:\n got %+v\nwant %+v", g, w)
	}
	if tc[0].ExtraInfo != "" || tc[0].InPort != "2" || tc[0].RecircID != "0" || tc[2].Actions != "1,3" {
		t.Errorf("tc: %+v", tc)
	}
	doc := parseFixture(t, "doc-dpdk-bridge-rst.txt")
	if len(doc) != 1 || doc[0].InPort != "pcap0" || doc[0].Packets != 77072681 || doc[0].Bytes != 3545343326 || doc[0].Used != "0.000s" ||
		doc[0].Actions != "vhostuserclient0" || doc[0].ExtraInfo != "miniflow_bits(4,1)" || !strings.HasSuffix(doc[0].Match, "udp(src=53/0,dst=53/0))") {
		t.Errorf("doc: %+v", doc)
	}
}

// The summary of the check's ingress port p0: recirculation apart, by
// offload state and layer; a port given by name and number matches both
// forms.
func TestSummarizeDPFlows(t *testing.T) {
	s := SummarizeDPFlows(parseFixture(t, "dpdk-offload.txt"), "p0")
	if s.Total != (DPFlowCount{Flows: 3, Packets: 7500012, Bytes: 450000720}) || s.Recirculated.Flows != 0 || len(s.Flows) != 3 {
		t.Errorf("total: %+v", s)
	}
	wantOff := map[OffloadState]DPFlowCount{OffloadFull: {2, 7500000, 450000000}, OffloadPartial: {1, 12, 720}}
	if !reflect.DeepEqual(s.ByOffload, wantOff) {
		t.Errorf("by offload: %+v", s.ByOffload)
	}
	wantDP := map[string]DPFlowCount{DatapathDPDK: {2, 7500000, 450000000}, DatapathOVS: {1, 12, 720}}
	if !reflect.DeepEqual(s.ByDatapath, wantDP) {
		t.Errorf("by datapath: %+v", s.ByDatapath)
	}
	doca := SummarizeDPFlows(parseFixture(t, "doca-offload.txt"), "pf0hpf")
	if doca.Total.Flows != 1 || doca.ByOffload[OffloadFull].Packets != 7499000 || doca.ByDatapath[DatapathDOCA].Flows != 1 {
		t.Errorf("doca pf0hpf: %+v", doca)
	}
	plain := SummarizeDPFlows(parseFixture(t, "ovs31-netdev-plain.txt"), "rdpfa0", "2")
	if plain.Total.Flows != 2 || plain.ByOffload[OffloadUnknown].Flows != 2 || plain.ByDatapath[""].Packets != 1 {
		t.Errorf("plain: %+v", plain)
	}
	if none := SummarizeDPFlows(parseFixture(t, "ovs31-netdev-m.txt"), "nosuch", ""); none.Total.Flows != 0 || len(none.Flows) != 0 || none.ByOffload == nil {
		t.Errorf("no match: %+v", none)
	}
}

// A line that cannot be read is reported with its number; the others are
// still returned. The document's wrapped sample is eight such lines.
func TestParseDPFlowsBadLines(t *testing.T) {
	good := strings.TrimSpace(string(dpflowsFixture(t, "ovs31-netdev-plain.txt")))
	in := good + "\n" +
		"recirc_id(0),in_port(2), packets:x, bytes:1, used:never, actions:3\n" +
		"ufid:nonsense, in_port(2), packets:1, bytes:1, used:never, actions:3\n" +
		"recirc_id(0),in_port(2), packets:1, bytes:1, used:never\n" +
		"in_port(2, packets:1, bytes:1, used:never, actions:3\n" +
		"in_port(2), bytes:1, packets:1, used:never, actions:3\n" +
		"in_port(2), packets:1, bytes:1, used:yesterday, actions:3\n" +
		"in_port(2), packets:1, bytes:1, used:never, packets:2, actions:3\n" +
		"in_port(2), packets:1, bytes:1, used:never, actions:\n" +
		"\r\n" +
		"in_port(3), packets:5, bytes:300, used:0.100s, dpe_packets:5, actions:2\r\n"
	flows, err := ParseDPFlows([]byte(in))
	var pe *DPFlowParseError
	if !errors.As(err, &pe) {
		t.Fatalf("want *DPFlowParseError, got %v", err)
	}
	var lines []int
	for _, l := range pe.Lines {
		lines = append(lines, l.LineNo)
		if l.Line == "" || l.Reason == "" {
			t.Errorf("line error without line or reason: %+v", l)
		}
	}
	if want := []int{5, 6, 7, 8, 9, 10, 11, 12}; !reflect.DeepEqual(lines, want) {
		t.Errorf("bad lines %v, want %v (%v)", lines, want, err)
	}
	if !strings.Contains(err.Error(), "line 5: packets:\"x\"") || !strings.Contains(err.Error(), "and 5 more") {
		t.Errorf("message: %v", err)
	}
	if len(flows) != 4 || flows[3].LineNo != 14 || flows[3].Extra["dpe_packets"] != "5" || flows[3].Packets != 5 || flows[3].Thread != "the main thread" {
		t.Errorf("flows kept: %+v", flows)
	}
	wrapped, err := ParseDPFlows(dpflowsFixture(t, "doc-dpdk-bridge-rst-wrapped.txt"))
	if !errors.As(err, &pe) || len(pe.Lines) != 8 || len(wrapped) != 0 {
		t.Errorf("wrapped doc: %+v %v", wrapped, err)
	}
}

func TestDPFlowKeyValue(t *testing.T) {
	for _, c := range []struct{ match, name, want string }{
		{"recirc_id(0),in_port(2),eth()", "in_port", "2"},
		{"tunnel(tun_id=0x1,src=1.1.1.1,flags(-df+csum)),in_port(vxlan_sys_4789),eth()", "in_port", "vxlan_sys_4789"},
		{"xin_port(9),in_port(p0)", "in_port", "p0"},
		{"eth(),eth_type(0x0800)", "in_port", ""},
		{"in_port(a(b)c),eth()", "in_port", "a(b)c"},
	} {
		if got, err := keyValue(c.match, c.name); err != nil || got != c.want {
			t.Errorf("%s in %s: %q %v, want %q", c.name, c.match, got, err, c.want)
		}
	}
	if _, err := keyValue("in_port(2,eth()", "in_port"); err == nil {
		t.Error("unclosed in_port( accepted")
	}
}

func FuzzParseDPFlows(f *testing.F) {
	for _, n := range []string{"ovs31-netdev-m.txt", "ovs31-netdev-m-no-names.txt", "ovs31-netdev-plain.txt", "ovs31-netdev-ct-m.txt",
		"ovs31-netdev-ct-plain.txt", "dpdk-offload.txt", "doca-offload.txt", "tc-offload.txt", "doc-dpdk-bridge-rst.txt",
		"doc-dpdk-bridge-rst-wrapped.txt", "ovs31-dpctl-show.txt", "ovs31-bridge-dump-flows-offload-stats.txt"} {
		f.Add(dpflowsFixture(f, n))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		flows, err := ParseDPFlows(b)
		var pe *DPFlowParseError
		if err != nil && (!errors.As(err, &pe) || len(pe.Lines) == 0) {
			t.Fatalf("error is not a *DPFlowParseError with lines: %v", err)
		}
		lines := strings.Split(string(b), "\n")
		for _, fl := range flows {
			if fl.LineNo < 1 || fl.LineNo > len(lines) || strings.TrimSpace(lines[fl.LineNo-1]) != fl.Line {
				t.Fatalf("flow %+v is not line %d", fl, fl.LineNo)
			}
			counters := ", packets:" + strconv.FormatUint(fl.Packets, 10) + ", bytes:" + strconv.FormatUint(fl.Bytes, 10) + ", used:" + fl.Used
			if !strings.Contains(fl.Line, fl.Match+counters) || !strings.Contains(fl.Line, ", actions:"+fl.Actions) || fl.Actions == "" {
				t.Fatalf("counters %q / actions %q not in line %q", counters, fl.Actions, fl.Line)
			}
			if fl.Offload != offloadState(fl.Offloaded, fl.Datapath) {
				t.Fatalf("offload %q for offloaded:%q dp:%q", fl.Offload, fl.Offloaded, fl.Datapath)
			}
			if fl.InPort != "" && !strings.Contains(fl.Match, "in_port("+fl.InPort+")") {
				t.Fatalf("in_port %q not in match %q", fl.InPort, fl.Match)
			}
		}
		if pe != nil {
			for _, l := range pe.Lines {
				if l.LineNo < 1 || l.LineNo > len(lines) || strings.TrimSpace(lines[l.LineNo-1]) != l.Line {
					t.Fatalf("error %+v does not name its line", l)
				}
			}
		}
		_ = SummarizeDPFlows(flows, "p0", "1")
	})
}
