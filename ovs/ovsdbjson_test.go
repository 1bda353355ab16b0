package ovs

import (
	"os"
	"strings"
	"testing"
)

// Samples recorded from ovs-vsctl 3.1.0 (`StateArgs()` against a private
// ovs-vswitchd-dpdk on this VM): fresh db, the ovs-vdev playbook applied,
// and a port with devargs 0000:99:00.0 added.
func readSample(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseStateEmpty(t *testing.T) {
	st, err := ParseState(readSample(t, "state-empty.json"))
	if err != nil {
		t.Fatal(err)
	}
	if st.DPDKInitialized || st.DPDKVersion != "DPDK 22.11.11" || len(st.Bridges) != 0 || len(st.OtherConfig) != 0 || st.OVSVersion != "" {
		t.Fatalf("got %+v", st)
	}
}

func TestParseStateAttached(t *testing.T) {
	st, err := ParseState(readSample(t, "state-attached.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !st.DPDKInitialized || st.OtherConfig["dpdk-init"] != "try" || st.OtherConfig["dpdk-socket-mem"] != "128" {
		t.Fatalf("open_vswitch: %+v", st)
	}
	b, ok := st.Bridge("br-vdev")
	if !ok || b.DatapathType != "netdev" || len(b.Ports) != 3 {
		t.Fatalf("bridge: %+v", b)
	}
	ifc, ok := st.Interface("vnull1")
	if !ok {
		t.Fatal("vnull1 missing")
	}
	if ifc.Bridge != "br-vdev" || ifc.Port != "vnull1" || ifc.Type != "dpdk" || ifc.OFPort <= 0 || ifc.Error != "" ||
		ifc.Devargs() != "net_null1" || ifc.NRxq != "2" || ifc.MTURequest != 1500 || ifc.LinkState != "up" || ifc.AdminState != "up" {
		t.Fatalf("vnull1: %+v", ifc)
	}
	if _, ok := ifc.Statistics["rx_packets"]; !ok {
		t.Fatalf("vnull1 statistics: %v", ifc.Statistics)
	}
	if ifc.Status["driver_name"] != "net_null" {
		t.Fatalf("vnull1 status: %v", ifc.Status)
	}
	br, _ := st.Interface("br-vdev")
	if br.Type != "internal" || br.OFPort != 65534 {
		t.Fatalf("internal port: %+v", br)
	}
}

func TestParseStateBadPort(t *testing.T) {
	st, err := ParseState(readSample(t, "state-bad-pci.json"))
	if err != nil {
		t.Fatal(err)
	}
	ifc, ok := st.Interface("bad0")
	if !ok || ifc.OFPort != -1 || ifc.Error != "Error attaching device '0000:99:00.0' to DPDK" || ifc.Attached() {
		t.Fatalf("bad0: %+v", ifc)
	}
	if ifc.LinkState != "" || ifc.MTU != 0 || len(ifc.Statistics) != 0 {
		t.Fatalf("bad0 empty columns: %+v", ifc)
	}
}

func TestParseTablesEncodings(t *testing.T) {
	in := `{"data":[[["uuid","u1"],["set",[1,2]],["map",[["a","x"],["b",3]]],["set",[]],7,1.5,true,["named-uuid","n"],["set",[["uuid","u2"]]]]],"headings":["id","s","m","e","i","f","b","n","one"]}`
	ts, err := ParseTables([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	r := ts[0].Rows[0]
	if r["id"].Kind != KindUUID || r.Str("id") != "u1" {
		t.Errorf("uuid: %+v", r["id"])
	}
	if r.Str("s") != "1,2" || len(r["s"].Set()) != 2 {
		t.Errorf("set: %+v", r["s"])
	}
	if m := r["m"].Map(); m["a"] != "x" || m["b"] != "3" {
		t.Errorf("map: %v", m)
	}
	if !r["e"].IsEmpty() || r.Str("e") != "" {
		t.Errorf("empty set: %+v", r["e"])
	}
	if n, ok := r["i"].Int(); !ok || n != 7 {
		t.Errorf("int: %v %v", n, ok)
	}
	if r.Str("f") != "1.5" {
		t.Errorf("float: %s", r.Str("f"))
	}
	if b, ok := r["b"].Bool(); !ok || !b {
		t.Errorf("bool")
	}
	if u := r["one"].UUIDs(); len(u) != 1 || u[0] != "u2" {
		t.Errorf("one-element set: %v", u)
	}
	if u := r["n"].UUIDs(); len(u) != 1 || u[0] != "n" {
		t.Errorf("named-uuid: %v", u)
	}
}

func TestParseTablesErrors(t *testing.T) {
	for _, in := range []string{
		`{"data":[[1,2]],"headings":["a"]}`,
		`{"data":[[["map",[["a"]]]]],"headings":["a"]}`,
		`{"data":[[["set",{}]]],"headings":["a"]}`,
		`{"data":[[{"x":1}]],"headings":["a"]}`,
		`{"data":[[["uuid",5]]],"headings":["a"]}`,
		`{"data":`,
		`[1,2]`,
	} {
		if _, err := ParseTables([]byte(in)); err == nil {
			t.Errorf("%s: want an error", in)
		}
	}
	if _, err := ParseState([]byte(`{"data":[],"headings":[]}`)); err == nil || !strings.Contains(err.Error(), "want 4 tables") {
		t.Errorf("ParseState of one table: %v", err)
	}
}

func FuzzParseTables(f *testing.F) {
	for _, n := range []string{"state-empty.json", "state-attached.json", "state-bad-pci.json", "state-upstream-byname.json", "state-doca-byname.json"} {
		f.Add(readSample(f, n))
	}
	f.Add([]byte(`{"data":[[["map",[["k",["uuid","x"]]]]]],"headings":["m"]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ts, err := ParseTables(b)
		if err != nil {
			return
		}
		for _, tb := range ts {
			for _, r := range tb.Rows {
				if len(r) > len(tb.Headings) {
					t.Fatalf("row has %d cells for %d headings", len(r), len(tb.Headings))
				}
				for _, d := range r {
					_ = d.String()
					_ = d.Map()
					_ = d.UUIDs()
					_, _ = d.Int()
					_, _ = d.Bool()
				}
			}
		}
		_, _ = ParseState(b)
	})
}

// The recorded upstream OvS 3.1 state (ports p0 and pf0hpf type=dpdk
// without devargs, doca-init=true set and ignored) and OVS-DOCA's (the same
// with the doca columns lib/ovs-doca.c writes): which OvS it is, and how
// each DPDK port is resolved.
func TestParseStateTellsOVSDOCA(t *testing.T) {
	up, err := ParseState(readSample(t, "state-upstream-byname.json"))
	if err != nil {
		t.Fatal(err)
	}
	if up.DOCA || up.DOCAInitialized || !up.DPDKInitialized || up.OtherConfig["doca-init"] != "true" {
		t.Fatalf("upstream: %+v", up)
	}
	p0, _ := up.Interface("p0")
	if p0.OFPort != -1 || p0.Error != "'p0' is missing 'options:dpdk-devargs'. The old 'dpdk<port_id>' names are not supported" || p0.Resolution != ResolutionNone {
		t.Fatalf("upstream p0: %+v", p0)
	}
	doca, err := ParseState(readSample(t, "state-doca-byname.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !doca.DOCA || !doca.DOCAInitialized || doca.DOCAVersion != "3.2.0" || !doca.DPDKInitialized {
		t.Fatalf("doca: %+v", doca)
	}
	for name, want := range map[string]string{"p0": ResolutionName, "pf0hpf": ResolutionName, "vnull0": ResolutionDevargs, "br-sfc": ""} {
		if ifc, ok := doca.Interface(name); !ok || ifc.Resolution != want {
			t.Errorf("doca %s: %+v, want resolution %q", name, ifc, want)
		}
	}
	if ok, why := up.DOCANameUsable(); ok || !strings.Contains(why, "no doca_initialized column") {
		t.Errorf("upstream usable: %v %s", ok, why)
	}
	doca.DOCAInitialized = false
	if ok, why := doca.DOCANameUsable(); ok || !strings.Contains(why, "doca-init=true") {
		t.Errorf("doca off usable: %v %s", ok, why)
	}
}
