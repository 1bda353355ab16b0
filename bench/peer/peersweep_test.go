package peer

import (
	"context"
	"encoding/csv"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"rig/bench"
	"rig/bench/search"
)

// twoHostLoop is a near loop and a far forwarder capped at capPPS, faked:
// the near side sends at its --rate for 1 s and gets back what the cap
// lets through; the far side, once stopped, reports what it received and
// forwarded of the near side's last trial. It records each far config.
type twoHostLoop struct {
	capPPS     float64
	mu         sync.Mutex
	sent, back uint64
	farCfgs    []bench.Config
}

func (h *twoHostLoop) near(_ context.Context, c bench.Config) (*bench.Result, error) {
	pps := 2e6 // unlimited
	if c.Rate != "" {
		v, err := strconv.ParseFloat(strings.TrimSuffix(c.Rate, "pps"), 64)
		if err != nil {
			return nil, err
		}
		pps = v
	}
	sent := uint64(pps)
	back := min(sent, uint64(h.capPPS))
	h.mu.Lock()
	h.sent, h.back = sent, back
	h.mu.Unlock()
	r := &bench.Result{SchemaVersion: bench.SchemaVersion, Role: bench.RoleLoop, FrameSize: c.FrameSize, DurationS: 1, SendS: 1, Memory: "--no-huge", Cores: 1,
		Sent: sent, Received: back, Lost: int64(sent - back)}
	r.Ports = []bench.PortStats{{Name: "p0", TxPkts: sent, TxBytes: sent * uint64(c.FrameSize-bench.FCSLen)},
		{Name: "p1", Port: 1, RxPkts: back, RxBytes: back * uint64(c.FrameSize-bench.FCSLen)}}
	bench.PortRates(r.Ports, 1, 0)
	return r, nil
}

func (h *twoHostLoop) far(ctx context.Context, c bench.Config, ready func()) (*bench.Result, error) {
	h.mu.Lock()
	h.farCfgs = append(h.farCfgs, c)
	h.mu.Unlock()
	ready()
	<-ctx.Done() // the near side's stop
	h.mu.Lock()
	rx, tx := h.sent, h.back
	h.mu.Unlock()
	r := &bench.Result{SchemaVersion: bench.SchemaVersion, Role: c.Role, MaxRate: c.MaxRate, DurationS: 2, Memory: "--no-huge", Cores: 1, Interrupted: true,
		Ports: []bench.PortStats{{Name: "f0", RxPkts: rx, TxPkts: 0, Policed: rx - tx, RxBytes: rx * 60}, {Name: "f1", Port: 1, TxPkts: tx, TxBytes: tx * 60}}}
	if c.FwdMode == "io" { // as collect: an io forwarder counts no bytes
		for i := range r.Ports {
			r.Ports[i].RxBytes, r.Ports[i].TxBytes, r.Ports[i].BytesNotMeasured = 0, 0, true
		}
	}
	bench.PortRates(r.Ports, 2, 0)
	return r, nil
}

// trial is the near side's RunFunc through a far serve (in memory).
func (h *twoHostLoop) trial(t *testing.T, tmpl bench.Config) bench.RunFunc {
	srv := &Server{Token: []byte(testToken), Run: h.far, Log: &syncBuf{}, Timeouts: fastPeer, Policy: testPolicy}
	return pipePeer(t, srv, testToken).Trial(h.near, FarTemplate(tmpl))
}

// A two-host sweep: each cell's far side runs through serve with the
// cell's queues, descriptors and burst; the cell's rate is this host's
// (not doubled by the far ports), the far columns what the far forwarder
// sent back, the loss across hosts; table and CSV show both.
func TestSweepThroughPeer(t *testing.T) {
	h := &twoHostLoop{capPPS: 1.5e6}
	base := bench.Config{Role: bench.RoleLoop, Duration: time.Second, Rate: "1000000pps"}
	sw, err := search.PlanSweep(search.SweepSpec{Base: base, Axes: search.SweepAxes{Sizes: []int{64, 128}, Queues: []int{1, 2}, Rates: []string{"1000000pps", "2000000pps"}}, Peer: "far:7400"})
	if err != nil {
		t.Fatal(err)
	}
	if sw.Peer != "far:7400" || sw.FarRole != bench.RoleFwd {
		t.Fatalf("sweep peer %q far role %q", sw.Peer, sw.FarRole)
	}
	search.RunSweep(context.Background(), sw, h.trial(t, bench.Config{VDevs: []string{"net_af_packet0,iface=dpa", "net_af_packet1,iface=dpb"}, NoHuge: true, Cores: 1}), nil)
	if len(h.farCfgs) != len(sw.Cells) || len(sw.Cells) != 8 {
		t.Fatalf("%d far runs for %d cells", len(h.farCfgs), len(sw.Cells))
	}
	for i, c := range sw.Cells {
		f := h.farCfgs[i]
		if f.Role != bench.RoleFwd || f.RxQ != c.Queues || f.TxQ != c.Queues || f.RxD != c.Desc || f.Burst != c.Burst || f.Count != 0 || f.Duration != 0 || f.Rate != "" || len(f.VDevs) != 2 || f.FwdMode != "io" {
			t.Errorf("cell %d (%s): far config %+v", c.N, c.Label(), f)
		}
		rate, _ := strconv.ParseFloat(strings.TrimSuffix(c.Rate, "pps"), 64)
		want := min(rate, 1.5e6) / 1e6
		if c.Status != search.CellMeasured || c.Mpps != want || c.FarMpps != want || c.Lost != int64(rate-want*1e6) || c.Result.Peer == nil || len(c.Result.Ports) != 4 {
			t.Errorf("cell %d: %s mpps %v far %v lost %d, want %v", c.N, c.Status, c.Mpps, c.FarMpps, c.Lost, want)
		}
	}
	// the far forwarder runs io (--peer-fwd-mode's default): it counts no
	// bytes, so the far Gbps is not measured: "-", empty in the CSV, a note
	var b strings.Builder
	sw.PrintTable(&b)
	for _, want := range []string{"two hosts: the loop here, the far side (fwd) on peer far:7400", "far Mpps  far Gbps  status",
		"2000000pps  1.500  0.768    1.008       -  500000     1.500         -      ok",
		"cell 8: far Gbps not measured: the far forwarder ran io mode, which reads no frame (--peer-fwd-mode mac counts bytes)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := sw.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(b.String())).ReadAll()
	if err != nil || len(rows) != 9 || rows[0][17] != "far_mpps" || rows[2][17] != "1.500" || rows[2][16] != "500000" || rows[1][17] != "1.000" ||
		rows[0][18] != "far_gbps" || rows[2][18] != "" || rows[2][11] != "0.768" {
		t.Errorf("csv: %v\n%s", err, b.String())
	}
	if c := sw.Cells[1]; !c.FarGbpsNotMeasured || c.GbpsNotMeasured || c.FarGbps != 0 {
		t.Errorf("cell 2: far Gbps %v (not measured: %v), near not measured: %v", c.FarGbps, c.FarGbpsNotMeasured, c.GbpsNotMeasured)
	}
}

// A far forwarder in mac mode counts bytes: the far Gbps is measured.
func TestSweepThroughPeerFarMACCountsBytes(t *testing.T) {
	h := &twoHostLoop{capPPS: 1.5e6}
	sw, err := search.PlanSweep(search.SweepSpec{Base: bench.Config{Role: bench.RoleLoop, Duration: time.Second, Rate: "2000000pps"}, Peer: "far:7400"})
	if err != nil {
		t.Fatal(err)
	}
	search.RunSweep(context.Background(), sw, h.trial(t, bench.Config{VDevs: []string{"net_af_packet0,iface=dpa", "net_af_packet1,iface=dpb"}, NoHuge: true, Cores: 1, FwdMode: "mac"}), nil)
	var b strings.Builder
	sw.PrintTable(&b)
	if c := sw.Cells[0]; c.FarGbpsNotMeasured || c.FarGbps < 0.76 || c.FarGbps > 0.77 || !strings.Contains(b.String(), "1.500     0.768      ok") || strings.Contains(b.String(), "not measured") {
		t.Errorf("far mac: far Gbps %v (not measured: %v)\n%s", c.FarGbps, c.FarGbpsNotMeasured, b.String())
	}
}

// A generator's far side receives: a sweep --role gen --peer counts what
// the far host received as the cell's received, and refuses roles whose
// far side is not defined.
func TestSweepPeerRoles(t *testing.T) {
	for _, role := range []bench.Role{bench.RoleRx, bench.RoleFwd} {
		if _, err := search.PlanSweep(search.SweepSpec{Base: bench.Config{Role: role, Duration: time.Second, VDevs: []string{"net_null0"}}, Peer: "far:1"}); err == nil ||
			!strings.Contains(err.Error(), "--peer is for gen") {
			t.Errorf("sweep --role %s --peer: %v", role, err)
		}
	}
	far := &fakeFar{rx: 90000}
	srv := &Server{Token: []byte(testToken), Run: far.run, Log: &syncBuf{}, Timeouts: fastPeer, Policy: testPolicy}
	sw, err := search.PlanSweep(search.SweepSpec{Base: bench.Config{Role: bench.RoleGen, Duration: time.Second, VDevs: []string{"net_null0"}}, Peer: "far:7400"})
	if err != nil {
		t.Fatal(err)
	}
	search.RunSweep(context.Background(), sw, pipePeer(t, srv, testToken).Trial(nearGen(100000), farRx), nil)
	c := sw.Cells[0]
	// the far result's 2 s are scaled to the near side's 1 s
	if sw.FarRole != bench.RoleRx || c.Status != search.CellMeasured || c.Mpps != 0.1 || c.FarMpps != 0.09 || c.Sent != 100000 || c.Received != 90000 || c.Lost != 10000 {
		t.Errorf("gen cell: %+v", c)
	}
	var b strings.Builder
	sw.PrintTable(&b)
	if !strings.Contains(b.String(), "far Mpps what the far host received") || !strings.Contains(b.String(), "10000     0.090") {
		t.Errorf("table:\n%s", b.String())
	}
}

// The RFC 2544 search with the DUT on the far host: each trial starts a
// capped far forwarder through serve; the loss is near tx - near rx, the
// NDR is the cap, each trial carries the far counters, and the report
// says where the lowest lossy trial lost its frames.
func TestNDRThroughPeer(t *testing.T) {
	h := &twoHostLoop{capPPS: 50e3}
	spec := search.NDRSpec{Base: bench.Config{Role: bench.RoleLoop, VDevs: []string{"net_null0", "net_null1"}}, Sizes: []int{64}, TrialDuration: time.Second,
		Resolution: "500pps", MaxTrials: 20, SearchMax: "80kpps", Peer: "far:7400"}
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	rep := search.RunNDR(context.Background(), spec, h.trial(t, bench.Config{VDevs: []string{"net_af_packet0,iface=dpa", "net_af_packet1,iface=dpb"}, MaxRate: "50kpps", Cores: 1}), nil)
	s := rep.Sizes[0]
	if rep.Peer != "far:7400" || s.Error != "" || len(s.Invalid) > 0 || s.NDR.Mpps*1e6 < 49.5e3 || s.NDR.Mpps*1e6 > 50.01e3 || !s.NDR.Confirmed {
		t.Fatalf("ndr: %+v", s)
	}
	for i, tr := range s.Trials {
		f := h.farCfgs[i]
		if tr.Far == nil || tr.Far.Received != tr.Sent || tr.Far.Forwarded != tr.Received || tr.Far.Policed != tr.Sent-tr.Received ||
			f.Role != bench.RoleFwd || f.MaxRate != "50kpps" || f.Rate != "" || f.Count != 0 {
			t.Errorf("trial %d: %+v far %+v, far config %+v", tr.N, tr.TrialOutcome, tr.Far, f)
		}
	}
	var b strings.Builder
	rep.PrintTable(&b)
	for _, want := range []string{"two hosts: the tester here", "the forwarder of peer far:7400",
		"64 B: where the lowest lossy trial", "0 lost on the way to the far host", "in its forwarder (", "over its --max-rate, 0 on a full tx queue), 0 on the way back"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
}
