package ovs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"rig/internal/host"
	"rig/internal/testutil/fakeexec"
)

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "counters", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Real OpenFlow 1.0 output: quoted names unquoted, "?" counters Unknown
// (never 0), LOCAL kept, the null PMD's bytes=0 a real 0.
func TestParseDumpPortsOF10(t *testing.T) {
	ports, err := ParseDumpPorts(fixture(t, "dump-ports-null-of10.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ports) != 3 {
		t.Fatalf("ports: %v", ports)
	}
	n0 := ports["n0"]
	if n0.RxPackets != 238047584 || n0.RxBytes != 0 || n0.TxPackets != 0 || !n0.Known(RxBytes) {
		t.Errorf("n0: %+v", n0)
	}
	if want := []string{"rx_frame_err", "rx_over_err", "rx_crc_err", "collisions"}; !reflect.DeepEqual(n0.Unknown, want) {
		t.Errorf("n0 unknown %v, want %v", n0.Unknown, want)
	}
	if _, ok := n0.Get("rx_crc_err"); ok {
		t.Error("crc=? must be unknown")
	}
	if _, ok := ports["n 1"]; !ok {
		t.Errorf("quoted name not unquoted: %v", ports)
	}
	if l := ports["LOCAL"]; len(l.Unknown) != 0 || l.Custom["rx_crc_err"] != 0 || !l.Known("collisions") {
		t.Errorf("LOCAL: %+v", l)
	}
	nums, err := ParseDumpPorts(fixture(t, "dump-ports-null-numbers.txt"))
	if err != nil || nums["1"].RxPackets != 273689280 || len(nums) != 3 {
		t.Errorf("numbers: %v %v", nums, err)
	}
}

// OpenFlow 1.5: duration, rfc2819 and CUSTOM Statistics lines; vhost's
// DPDK per-virtqueue keys and the ovs_* drop counters are live there.
func TestParseDumpPortsOF15Custom(t *testing.T) {
	ports, withCustom, err := parseDumpPorts(fixture(t, "dump-ports-vhost-of15.txt"))
	if err != nil {
		t.Fatal(err)
	}
	v1 := ports["v1"]
	if v1.RxPackets != 108544 || v1.RxBytes != 6946816 || v1.TxPackets != 256 || v1.TxDropped != 108288 {
		t.Errorf("v1: %+v", v1)
	}
	if v1.Custom["ovs_tx_failure_drops"] != 108288 || v1.Custom["rx_q0_good_packets"] != 108544 ||
		v1.Custom["tx_q0_good_packets"] != 256 || v1.Custom["rx_1_to_64_packets"] != 108544 ||
		v1.Custom["tx_multicast_packets"] != 0 || !v1.Known("tx_q0_inflight_completed") {
		t.Errorf("v1 custom: %v", v1.Custom)
	}
	if v1.Known(RxErrors) || v1.Known(TxErrors) {
		t.Errorf("vhost errs=? must be unknown: %v", v1.Unknown)
	}
	// a driver's own rx_errors is custom; it does not overwrite the field
	n2 := ports["n2"]
	if n2.TxPackets != 108544 || n2.Custom["tx_q1_packets"] != 108544 || n2.Custom["rx_errors"] != 0 || !n2.Known(RxErrors) {
		t.Errorf("n2: %+v", n2)
	}
	if !withCustom["v0"] || !withCustom["n2"] || withCustom["LOCAL"] {
		t.Errorf("custom sections: %v", withCustom)
	}
	// the same moment over OpenFlow 1.3 and 1.0: same standard counters
	// (within the few ms between the calls), no custom ones
	for _, f := range []string{"dump-ports-vhost-of13.txt", "dump-ports-vhost-of10.txt"} {
		p, err := ParseDumpPorts(fixture(t, f))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if v := p["v1"]; v.RxPackets < v1.RxPackets || v.TxDropped < v1.TxDropped || v.Custom["ovs_tx_failure_drops"] != 0 {
			t.Errorf("%s v1: %+v", f, v)
		}
	}
}

// Before a vhost guest connects every counter is "?": all Unknown.
func TestParseDumpPortsVhostUnconnected(t *testing.T) {
	ports, err := ParseDumpPorts(fixture(t, "dump-ports-vhost-unconnected.txt"))
	if err != nil {
		t.Fatal(err)
	}
	v0 := ports["v0"]
	for _, n := range StandardCounters() {
		if v0.Known(n) {
			t.Errorf("v0 %s known: %+v", n, v0)
		}
	}
	d := ports["v0"].Sub(ports["v0"])
	if len(d.Unknown) != 12 || d.RxPackets != 0 {
		t.Errorf("delta of unknowns: %+v", d)
	}
}

func TestParseDumpPortsRejects(t *testing.T) {
	good := "OFPST_PORT reply (xid=0x2): 1 ports\n  port  p1: rx pkts=1, bytes=2, drop=0, errs=0, frame=0, over=0, crc=0\n           tx pkts=3, bytes=4, drop=0, errs=0, coll=0\n"
	if p, err := ParseDumpPorts([]byte(good)); err != nil || p["p1"].TxBytes != 4 {
		t.Fatalf("good: %v %v", p, err)
	}
	bad := map[string]string{
		"empty":         "",
		"no header":     strings.SplitN(good, "\n", 2)[1],
		"count":         strings.Replace(good, "1 ports", "2 ports", 1),
		"no tx":         strings.Join(strings.Split(good, "\n")[:2], "\n"),
		"bad number":    strings.Replace(good, "pkts=1,", "pkts=x1,", 1),
		"negative":      strings.Replace(good, "pkts=1,", "pkts=-1,", 1),
		"unknown key":   strings.Replace(good, "crc=0", "zap=0", 1),
		"unterminated":  strings.Replace(good, "p1:", `"p1:`, 1),
		"flow dump":     " cookie=0x0, duration=1s, table=0, n_packets=0, n_bytes=0, actions=drop\n",
		"duplicate":     strings.Replace(good, "1 ports", "2 ports", 1) + strings.SplitN(good, "\n", 2)[1],
		"junk in block": strings.Replace(good, "           tx", "           zz", 1),
	}
	for name, in := range bad {
		if p, err := ParseDumpPorts([]byte(in)); err == nil {
			t.Errorf("%s: no error, got %v", name, p)
		}
	}
}

func FuzzParseDumpPorts(f *testing.F) {
	for _, n := range []string{"dump-ports-null-of10.txt", "dump-ports-null-numbers.txt", "dump-ports-vhost-of15.txt", "dump-ports-vhost-unconnected.txt"} {
		f.Add(fixture(f, n))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ports, err := ParseDumpPorts(b)
		if err != nil {
			return
		}
		for name, c := range ports {
			if name == "" {
				t.Fatal("empty port name")
			}
			// a counter is known xor unknown, and Sub of itself is all zero
			d := c.Sub(c)
			for _, n := range StandardCounters() {
				if v, ok := d.Get(n); ok && v != 0 {
					t.Fatalf("%s: self delta %s = %d", name, n, v)
				}
			}
		}
	})
}

// Sub: counter by counter, unknowns and resets stay unknown, custom keys
// on one side only are unknown.
func TestCountersSub(t *testing.T) {
	before := Counters{RxPackets: 10, TxPackets: 5, TxDropped: 1, Unknown: []string{RxErrors},
		Custom: map[string]uint64{"ovs_tx_failure_drops": 1, "rx_q0_good_packets": 10, "gone": 3}}
	after := Counters{RxPackets: 110, TxPackets: 4, TxDropped: 11,
		Custom: map[string]uint64{"ovs_tx_failure_drops": 11, "rx_q0_good_packets": 110, "new": 1}, Stale: []string{"new"}}
	d := after.Sub(before)
	if d.RxPackets != 100 || d.TxDropped != 10 || d.Custom["ovs_tx_failure_drops"] != 10 || d.Custom["rx_q0_good_packets"] != 100 {
		t.Errorf("delta: %+v", d)
	}
	for _, u := range []string{TxPackets, RxErrors, "gone", "new"} {
		if d.Known(u) {
			t.Errorf("%s must be unknown in %+v", u, d)
		}
	}
	if d.Known(TxErrors) != true || !reflect.DeepEqual(d.Stale, []string{"new"}) || d.Duration != 0 {
		t.Errorf("delta: %+v", d)
	}
	// durations: the time between the reads; a shorter one later = the port was re-added
	before.Duration, after.Duration = 10.5, 12.75
	if d := after.Sub(before); d.Duration != 2.25 || d.RxPackets != 100 {
		t.Errorf("delta with durations: %+v", d)
	}
	after.Duration = 1
	if d := after.Sub(before); d.Known(RxPackets) || d.Known("ovs_tx_failure_drops") || d.Known(TxErrors) || len(d.Unknown) != 8+4 {
		t.Errorf("re-added port: %+v", d)
	}
}

// The statistics column: standard keys to fields, omitted ones Unknown,
// the rest Custom; a vhost row without a guest has only the ovs_* keys.
func TestParseInterfaceStatistics(t *testing.T) {
	st, err := ParseInterfaceStatistics(fixture(t, "statistics-vhost.json"))
	if err != nil {
		t.Fatal(err)
	}
	v1 := st["v1"]
	if len(v1.Unknown) != 8 || len(v1.Custom) != 6 || v1.Custom["ovs_tx_retries"] != 0 || !v1.Known("ovs_tx_retries") {
		t.Errorf("v1 (no guest yet in this copy): %+v", v1)
	}
	v0 := st["v0"]
	if !v0.Known(RxPackets) || v0.Known(RxErrors) || !v0.Known("rx_q0_good_packets") {
		t.Errorf("v0: %+v", v0)
	}
	nu, err := ParseInterfaceStatistics(fixture(t, "statistics-null.json"))
	if err != nil || nu["n0"].RxPackets != 237294560 || nu["n0"].Custom["rx_q0_packets"] != 237294528 || len(nu["n0"].Unknown) != 0 {
		t.Errorf("null: %+v %v", nu["n0"], err)
	}
	for _, bad := range []string{`{"data":[["x",["map",[["rx_packets","a"]]]]],"headings":["name","statistics"]}`,
		`{"data":[["x",["map",[["rx_packets",-1]]]]],"headings":["name","statistics"]}`,
		`{"data":[["",["map",[]]]],"headings":["name","statistics"]}`, `[`} {
		if _, err := ParseInterfaceStatistics([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// fakeOVS answers ovs-ofctl / ovs-vsctl / ovs-appctl from fixtures and
// records the argv.
func fakeClient(t *testing.T, private bool, answer func(name string, args []string) ([]byte, error, bool)) (*Client, *fakeexec.Recorder, string) {
	t.Helper()
	run := t.TempDir()
	rec := &fakeexec.Recorder{Answer: answer}
	h := &host.Host{Root: t.TempDir(), Exec: rec.Exec}
	tg := Target{RunDir: SystemRunDir, LogFile: SystemLogFile}
	if private {
		tg = Target{DB: "unix:" + run + "/db.sock", RunDir: run, LogFile: run + "/ovs-vswitchd.log", Private: true}
	}
	return &Client{host: h, Target: tg, Timeout: 7}, rec, run
}

// PortCounters: one dump-ports (OpenFlow up to 1.5, --names, the private
// bridge's mgmt socket) and one statistics read, exact argv; a port that
// had custom counters live keeps them; one that had none gets the
// column's custom keys, listed as Stale.
func TestPortCountersArgvAndMerge(t *testing.T) {
	c, rec, run := fakeClient(t, true, func(name string, args []string) ([]byte, error, bool) {
		switch name {
		case "ovs-ofctl":
			return fixture(t, "dump-ports-vhost-of15.txt"), nil, true
		case "ovs-vsctl":
			return []byte(`{"data":[["v1",["map",[["ovs_tx_retries",0],["stale_key",9]]]],["br0",["map",[["rx_multicast_packets",7],["rx_crc_err",5],["rx_packets",3]]]]],"headings":["name","statistics"]}`), nil, true
		}
		return nil, nil, false
	})
	ports, err := c.PortCounters(context.Background(), "br0")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"ovs-ofctl --timeout=7 -OOpenFlow10,OpenFlow11,OpenFlow12,OpenFlow13,OpenFlow14,OpenFlow15 dump-ports --names unix:" + run + "/br0.mgmt",
		"ovs-vsctl --db=unix:" + run + "/db.sock --timeout=7 --format=json --columns=name,statistics list Interface",
	}
	if got := rec.Lines(); !reflect.DeepEqual(got, want) {
		t.Errorf("argv:\n got %q\nwant %q", got, want)
	}
	if v1 := ports["v1"]; v1.Known("stale_key") || len(v1.Stale) != 0 || v1.TxDropped != 108288 {
		t.Errorf("v1 had live custom counters; the column must not add to them: %+v", v1)
	}
	// LOCAL is the bridge's own interface, br0 in the column: its column-only
	// key comes in as Stale, the live rx_crc_err (0) is not replaced by the column's 5
	if l := ports["LOCAL"]; !reflect.DeepEqual(l.Stale, []string{"rx_multicast_packets"}) || l.Custom["rx_multicast_packets"] != 7 ||
		l.Custom["rx_crc_err"] != 0 || l.RxPackets != 0 || l.Duration != 8.755 {
		t.Errorf("LOCAL: %+v", l)
	}
	c2, _, _ := fakeClient(t, false, func(name string, args []string) ([]byte, error, bool) {
		switch name {
		case "ovs-ofctl":
			return fixture(t, "dump-ports-vhost-of10.txt"), nil, true
		case "ovs-vsctl":
			return fixture(t, "statistics-vhost.json"), nil, true
		}
		return nil, nil, false
	})
	p2, err := c2.PortCounters(context.Background(), "br0")
	if err != nil {
		t.Fatal(err)
	}
	v0 := p2["v0"]
	if v0.RxPackets != 110336 || v0.Custom["rx_q0_good_packets"] != 0 || !contains(v0.Stale, "rx_q0_good_packets") ||
		contains(v0.Stale, RxPackets) || contains(v0.Stale, "rx_1_to_64_packets") == false {
		t.Errorf("OpenFlow 1.0 merge: %+v", v0)
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// The system instance is reached by bridge name; a bad bridge name never
// reaches the tool.
func TestOfctlTargetAndBridgeNames(t *testing.T) {
	c, rec, _ := fakeClient(t, false, func(name string, args []string) ([]byte, error, bool) {
		return fixture(t, "dump-ports-null-of10.txt"), nil, true
	})
	if _, err := c.Ofctl(context.Background(), "br-int", "dump-ports", c.OfctlTarget("br-int")); err != nil {
		t.Fatal(err)
	}
	if got := rec.Lines(); len(got) != 1 || got[0] != "ovs-ofctl --timeout=7 dump-ports br-int" {
		t.Errorf("system argv: %q", got)
	}
	for _, b := range []string{"", "-br", "../x", "a b", "br\n"} {
		if _, err := c.PortCounters(context.Background(), b); err == nil {
			t.Errorf("bridge %q accepted", b)
		}
	}
	if len(rec.Calls()) != 1 {
		t.Errorf("a refused name ran a tool: %q", rec.Lines())
	}
}

// ovs-ofctl's real failures are explained: no such bridge (vswitchd
// alive), vswitchd down (its pidfile), a refused flow left as it is.
func TestOfctlErrorsExplained(t *testing.T) {
	var msg string
	c, _, run := fakeClient(t, true, func(name string, args []string) ([]byte, error, bool) {
		return nil, &host.ToolError{Argv: append([]string{name}, args...), Err: errors.New("exit status 1"), Stderr: msg}, true
	})
	// vswitchd "alive": pidfile + /proc/<pid>/stat under the root
	alive := func() {
		if err := os.WriteFile(filepath.Join(run, "ovs-vswitchd.pid"), []byte("4242\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		h := c.host.(*host.Host)
		if err := os.MkdirAll(filepath.Join(h.Root, "proc/4242"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(h.Root, "proc/4242/stat"), []byte("4242 (ovs-vswitchd) S 1"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var tp *ToolProblem
	// real message from a private OvS 3.1 with no bridge br9, vswitchd down
	msg = "ovs-ofctl: connecting to unix:" + run + "/br9.mgmt (No such file or directory)\n"
	_, err := c.PortCounters(context.Background(), "br9")
	if !errors.As(err, &tp) || tp.Diagnosis.Kind != ProblemVswitchdDown || !strings.Contains(tp.Fix(), "rig ovs daemon start --rundir "+run) {
		t.Fatalf("down: %v", err)
	}
	alive()
	_, err = c.PortCounters(context.Background(), "br9")
	if !errors.As(err, &tp) || tp.Diagnosis.Kind != ProblemNoSuchBridge || !strings.Contains(tp.Cause(), "no bridge br9") ||
		!strings.Contains(err.Error(), "ovs-ofctl --timeout=7") || !strings.Contains(err.Error(), "No such file or directory") {
		t.Fatalf("no bridge: %v", err)
	}
	msg = "ovs-ofctl: unknown action frobnicate\n"
	err = c.AddFlows(context.Background(), "br0", "in_port=1,actions=frobnicate")
	if errors.As(err, &tp) || !strings.Contains(err.Error(), "unknown action frobnicate") || !strings.Contains(err.Error(), "add-flow 1 of 1") {
		t.Fatalf("refused flow: %v", err)
	}
}
