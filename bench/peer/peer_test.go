package peer

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"rig/bench"
	"rig/bench/child"
)

const testToken = "0123456789abcdef-test-token"

// testPolicy lets the tests' far configs run (net_af_packet on dpa, dpb).
var testPolicy = FarPolicy{Netdevs: []string{"dpa", "dpb"}}

// nearStart is a near side's handshake by hand: it reads hello, sends a
// start for raw (with mac, or the right one when mac is ""), and starts
// the session. It returns the start it sent.
func nearStart(t *testing.T, pc *peerConn, token string, raw json.RawMessage, mac string) peerMsg {
	t.Helper()
	hello, err := pc.recv(time.Second, maxPeerRequest)
	if err != nil || hello.Type != peerHello {
		t.Fatalf("hello: %+v %v", hello, err)
	}
	cn, _ := newNonce()
	if mac == "" {
		mac = startMAC([]byte(token), PeerProtocol, hello.Nonce, cn, raw)
	}
	m := peerMsg{Type: peerStart, Version: PeerProtocol, Config: raw, ClientNonce: cn, MAC: mac}
	if err := pc.send(m, time.Second); err != nil {
		t.Fatal(err)
	}
	pc.sess = newPeerSession([]byte(token), hello.Nonce, cn, sideNear)
	return m
}

// farStart is a far side's handshake by hand: hello, the start read, the
// session started (the start's MAC is not checked).
func farStart(pc *peerConn, token string) (peerMsg, error) {
	nonce, _ := newNonce()
	if err := pc.send(peerMsg{Type: peerHello, Version: PeerProtocol, Nonce: nonce}, time.Second); err != nil {
		return peerMsg{}, err
	}
	m, err := pc.recv(time.Second, maxPeerRequest)
	if err != nil {
		return m, err
	}
	pc.sess = newPeerSession([]byte(token), nonce, m.ClientNonce, sideFar)
	return m, nil
}

var fastPeer = PeerTimeouts{Dial: time.Second, Handshake: time.Second, Ready: 2 * time.Second, Idle: 500 * time.Millisecond,
	Alive: 20 * time.Millisecond, Result: 2 * time.Second, Drain: 10 * time.Millisecond}

// syncBuf is a log several goroutines write.
type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fakeFar is a far dataplane: ready at once, then counts until stopped,
// returning rx frames received (or fails when failAfter is set).
type fakeFar struct {
	rx        uint64
	unstamped uint64
	runs      atomic.Int32
	failAfter time.Duration
	stopped   chan struct{}
}

func (f *fakeFar) run(ctx context.Context, cfg bench.Config, ready func()) (*bench.Result, error) {
	f.runs.Add(1)
	ready()
	if f.failAfter > 0 {
		select {
		case <-time.After(f.failAfter):
			return nil, bench.NewError("port net_af_packet0", errors.New("the PMD aborted"), "", "see the log")
		case <-ctx.Done():
		}
	}
	<-ctx.Done()
	if f.stopped != nil {
		close(f.stopped)
	}
	return &bench.Result{SchemaVersion: bench.SchemaVersion, Role: cfg.Role, DurationS: 2, Received: f.rx, Unstamped: f.unstamped, Interrupted: true, Memory: "--no-huge", Cores: 1,
		Ports: []bench.PortStats{{Name: "net_af_packet0", Driver: "net_af_packet", RxPkts: f.rx, RxMpps: float64(f.rx) / 2 / 1e6}}}, nil
}

// pipePeer is a Peer whose connections are served in memory by srv.
func pipePeer(t *testing.T, srv *Server, token string) *Peer {
	t.Helper()
	return &Peer{Addr: "far:7400", Token: []byte(token), Timeouts: fastPeer, Dial: func(ctx context.Context, _ string) (net.Conn, error) {
		c, s := net.Pipe()
		go srv.Handle(context.Background(), s)
		return c, nil
	}}
}

func nearGen(sent uint64) bench.RunFunc {
	return func(ctx context.Context, c bench.Config) (*bench.Result, error) {
		return &bench.Result{SchemaVersion: bench.SchemaVersion, Role: c.Role, DurationS: 1, Sent: sent, Latency: &bench.Latency{Samples: 1},
			Ports: []bench.PortStats{{Name: "net_af_packet0", Driver: "net_af_packet", TxPkts: sent, TxMpps: float64(sent) / 1e6}}}, nil
	}
}

func farRx(near bench.Config) (bench.Config, error) {
	return FarTemplate(bench.Config{VDevs: []string{"net_af_packet0,iface=dpa"}, NoHuge: true})(near)
}

// One trial across two hosts: the far receiver's counters and the near
// generator's in one result, loss across hosts, the far rates over the
// near interval, no cross-host latency; the token never in the log.
func TestPeerTrialMergesBothSides(t *testing.T) {
	far := &fakeFar{rx: 99000}
	log := &syncBuf{}
	srv := &Server{Token: []byte(testToken), Run: far.run, Log: log, Timeouts: fastPeer, Policy: testPolicy}
	r, err := pipePeer(t, srv, testToken).Trial(nearGen(100000), farRx)(context.Background(), bench.Config{Role: bench.RoleGen})
	if err != nil {
		t.Fatal(err)
	}
	if r.Sent != 100000 || r.Received != 99000 || r.Lost != 1000 || len(r.Ports) != 2 || r.Ports[0].Host != "near" || r.Ports[1].Host != "far" ||
		r.Ports[1].RxPkts != 99000 || r.Ports[1].RxMpps != 0.099 || r.Latency != nil || r.Peer == nil || r.Peer.Addr != "far:7400" || r.Peer.RanS != 2 || len(r.Invalid) != 0 {
		t.Fatalf("merged: %+v peer %+v", r, r.Peer)
	}
	var b strings.Builder
	r.PrintSummary(&b)
	for _, want := range []string{"far: net_af_packet0", "near: net_af_packet0", "far side: peer far:7400 ran rx (1 core(s), memory --no-huge), measured 2.00 s there", "sent 100000, received 99000, lost 1000", "no latency across hosts"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
	if l := log.String(); strings.Contains(l, testToken) || !strings.Contains(l, "running rx on net_af_packet0") || !strings.Contains(l, "done: received 99000") {
		t.Errorf("serve log:\n%s", l)
	}
}

// A wrong token, an old protocol, a config serve does not run: refused
// with the reason, before anything runs; the token is never logged.
func TestPeerRefusals(t *testing.T) {
	far := &fakeFar{}
	log := &syncBuf{}
	srv := &Server{Token: []byte(testToken), Run: far.run, Log: log, Timeouts: fastPeer, Policy: testPolicy}
	_, err := pipePeer(t, srv, "not-the-token-at-all").Trial(nearGen(1), farRx)(context.Background(), bench.Config{Role: bench.RoleGen})
	var pe *PeerError
	if !errors.As(err, &pe) || pe.Code != PeerCodeAuth || !strings.Contains(err.Error(), "peer far:7400: refused (auth): serve: authentication failed") {
		t.Errorf("wrong token: %v", err)
	}
	for _, c := range []struct {
		far  bench.Config
		want string
	}{
		{bench.Config{Role: bench.RoleRx, VDevs: []string{"net_null0"}, FrameSize: 10}, "--size 10"},
		{bench.Config{Role: bench.RoleRx, VDevs: []string{"net_null0"}, Cores: 500}, "--cores 500"},
		{bench.Config{Role: bench.Role("txonly"), VDevs: []string{"net_null0"}}, `role "txonly"`},
		{bench.Config{Role: bench.RoleRx, VDevs: []string{"net_pcap0,tx_pcap=/etc/passwd"}}, `--vdev "net_pcap0,tx_pcap=/etc/passwd": driver net_pcap is not served`},
		{bench.Config{Role: bench.RoleRx, VDevs: []string{"eth_pcap0,tx_pcap=/etc/passwd"}}, "driver net_pcap (eth_pcap is DPDK's alias of it) is not served"},
		{bench.Config{Role: bench.RoleRx, VDevs: []string{"net_af_packet0,iface=eth9"}}, "netdev eth9 is not one serve was started with (--allow-netdev)"},
		{bench.Config{Role: bench.RoleFwd, VDevs: []string{"net_null0"}, EAL: []string{"--log-file", "/x"}}, "--eal --log-file"},
		{bench.Config{Role: bench.RoleRx, VDevs: []string{"net_null0"}, Pcap: "/etc/shadow"}, "--pcap is not served"},
		{bench.Config{Role: bench.RoleRx, VDevs: []string{"net_null0"}, HugeDir: "/"}, "--huge-dir is not served"},
	} {
		_, err := pipePeer(t, srv, testToken).Trial(nearGen(1), func(bench.Config) (bench.Config, error) { return c.far, nil })(context.Background(), bench.Config{Role: bench.RoleGen})
		if !errors.As(err, &pe) || pe.Code != PeerCodeConfig || !strings.Contains(err.Error(), c.want) {
			t.Errorf("far %+v: %v, want a config refusal naming %q", c.far, err, c.want)
		}
	}
	if n := far.runs.Load(); n != 0 {
		t.Errorf("%d runs started for refused callers", n)
	}
	if l := log.String(); strings.Contains(l, testToken) || strings.Contains(l, "not-the-token") || !strings.Contains(l, "refused: authentication failed") {
		t.Errorf("serve log:\n%s", l)
	}
	// a caller of another protocol version
	c, s := net.Pipe()
	go srv.Handle(context.Background(), s)
	pc := newPeerConn(c)
	hello, _ := pc.recv(time.Second, maxPeerRequest)
	raw, _ := json.Marshal(bench.Config{Role: bench.RoleRx, VDevs: []string{"net_af_packet0,iface=dpa"}, NoHuge: true})
	cn, _ := newNonce()
	_ = pc.send(peerMsg{Type: peerStart, Version: "rig.bench.peer/v1", Config: raw, ClientNonce: cn, MAC: startMAC([]byte(testToken), "rig.bench.peer/v1", hello.Nonce, cn, raw)}, time.Second)
	m, _ := pc.recv(time.Second, maxPeerRequest)
	if m.Type != peerError || m.Code != PeerCodeVersion || !strings.Contains(m.Error.Fix, "same rig version") {
		t.Errorf("old protocol: %+v", m)
	}
	c.Close()
}

// A replayed start (an earlier connection's start, its MAC and client
// nonce) is refused: the server's nonce is new each time.
func TestPeerReplayRefused(t *testing.T) {
	srv := &Server{Token: []byte(testToken), Run: (&fakeFar{}).run, Timeouts: fastPeer, Policy: testPolicy}
	raw, _ := json.Marshal(bench.Config{Role: bench.RoleRx, VDevs: []string{"net_af_packet0,iface=dpa"}, NoHuge: true})
	var first peerMsg
	for i := 0; i < 2; i++ {
		c, s := net.Pipe()
		go srv.Handle(context.Background(), s)
		pc := newPeerConn(c)
		if i == 0 {
			first = nearStart(t, pc, testToken, raw, "")
			if m, err := pc.recv(time.Second, maxPeerRequest); m.Type != peerReady {
				t.Errorf("connection 0: %+v %v", m, err)
			}
		} else {
			if _, err := pc.recv(time.Second, maxPeerRequest); err != nil {
				t.Fatal(err)
			}
			_ = pc.send(first, time.Second)
			if m, err := pc.recv(time.Second, maxPeerRequest); m.Type != peerError || m.Code != PeerCodeAuth {
				t.Errorf("replayed start: %+v %v", m, err)
			}
		}
		c.Close()
	}
}

// One run at a time: a second caller is told the server is busy.
func TestPeerBusy(t *testing.T) {
	far := &fakeFar{rx: 1}
	srv := &Server{Token: []byte(testToken), Run: far.run, Timeouts: fastPeer, Policy: testPolicy}
	started := make(chan struct{})
	release := make(chan struct{})
	slowNear := func(ctx context.Context, c bench.Config) (*bench.Result, error) {
		close(started)
		<-release
		return nearGen(1)(ctx, c)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := pipePeer(t, srv, testToken).Trial(slowNear, farRx)(context.Background(), bench.Config{Role: bench.RoleGen})
		errc <- err
	}()
	<-started
	_, err := pipePeer(t, srv, testToken).Trial(nearGen(1), farRx)(context.Background(), bench.Config{Role: bench.RoleGen})
	var pe *PeerError
	if !errors.As(err, &pe) || pe.Code != PeerCodeBusy {
		t.Errorf("second caller: %v", err)
	}
	close(release)
	if err := <-errc; err != nil {
		t.Errorf("first caller: %v", err)
	}
}

// A far side that dies mid-run, or goes away, is an error naming the
// peer, and the near run is stopped.
func TestPeerFarDiesMidRun(t *testing.T) {
	waitNear := func(ctx context.Context, c bench.Config) (*bench.Result, error) {
		select {
		case <-ctx.Done():
			return nil, errors.New("near stopped")
		case <-time.After(5 * time.Second):
			return nil, errors.New("the near run was not stopped")
		}
	}
	srv := &Server{Token: []byte(testToken), Run: (&fakeFar{failAfter: 50 * time.Millisecond}).run, Timeouts: fastPeer, Policy: testPolicy}
	_, err := pipePeer(t, srv, testToken).Trial(waitNear, farRx)(context.Background(), bench.Config{Role: bench.RoleGen})
	var pe *PeerError
	if !errors.As(err, &pe) || pe.Code != PeerCodeRun || !strings.Contains(err.Error(), "peer far:7400: the far run failed (run): port net_af_packet0: the PMD aborted") {
		t.Errorf("far died: %v", err)
	}
	// the connection drops (serve killed, host gone)
	p := &Peer{Addr: "far:7400", Token: []byte(testToken), Timeouts: fastPeer, Dial: func(ctx context.Context, _ string) (net.Conn, error) {
		c, s := net.Pipe()
		go func() {
			pc := newPeerConn(s)
			if _, err := farStart(pc, testToken); err == nil {
				_ = pc.send(peerMsg{Type: peerReady}, time.Second)
			}
			time.Sleep(50 * time.Millisecond)
			s.Close()
		}()
		return c, nil
	}}
	_, err = p.Trial(waitNear, farRx)(context.Background(), bench.Config{Role: bench.RoleGen})
	if err == nil || !strings.Contains(err.Error(), "bench: peer far:7400: the far side went away mid-run: the connection closed") {
		t.Errorf("far gone: %v", err)
	}
	// a far side that never answers start: the ready wait ends
	p.Timeouts.Ready = 100 * time.Millisecond
	p.Dial = func(ctx context.Context, _ string) (net.Conn, error) {
		c, s := net.Pipe()
		go func() {
			_, _ = farStart(newPeerConn(s), testToken)
			time.Sleep(time.Second)
			s.Close()
		}()
		return c, nil
	}
	_, err = p.Trial(waitNear, farRx)(context.Background(), bench.Config{Role: bench.RoleGen})
	if err == nil || !strings.Contains(err.Error(), "waiting for the far rx to start: nothing for 100ms: timed out") {
		t.Errorf("silent far: %v", err)
	}
}

// A near side that goes away mid-run stops the far run.
func TestPeerNearGoneStopsFar(t *testing.T) {
	far := &fakeFar{stopped: make(chan struct{})}
	log := &syncBuf{}
	srv := &Server{Token: []byte(testToken), Run: far.run, Log: log, Timeouts: fastPeer, Policy: testPolicy}
	c, s := net.Pipe()
	done := make(chan struct{})
	go func() {
		srv.Handle(context.Background(), s)
		close(done)
	}()
	pc := newPeerConn(c)
	raw, _ := json.Marshal(bench.Config{Role: bench.RoleRx, VDevs: []string{"net_af_packet0,iface=dpa"}, NoHuge: true})
	nearStart(t, pc, testToken, raw, "")
	if m, _ := pc.recv(time.Second, maxPeerRequest); m.Type != peerReady {
		t.Fatalf("want ready, got %+v", m)
	}
	c.Close()
	select {
	case <-far.stopped:
	case <-time.After(3 * time.Second):
		t.Fatal("the far run still runs after its caller went away")
	}
	<-done
	if !strings.Contains(log.String(), "the near side went away mid-run") {
		t.Errorf("log:\n%s", log.String())
	}
}

// Across hosts the receiver's rules hold: more received than sent, or
// frames without rig's stamp, are no measurement; far invalid reasons
// stay, said to be the far side's.
func TestMergePeerValidity(t *testing.T) {
	near := &bench.Result{Role: bench.RoleGen, DurationS: 1, Sent: 100, Ports: []bench.PortStats{{Name: "a", TxPkts: 100}}}
	far := &bench.Result{Role: bench.RoleRx, DurationS: 3, Received: 150, Unstamped: 50, Invalid: []string{"a link lost"}, Ports: []bench.PortStats{{Name: "b", RxPkts: 150, RxMpps: 0.00005}}}
	r := MergePeer(bench.Config{Role: bench.RoleGen}, near, far, "x:1")
	inv := strings.Join(r.Invalid, "\n")
	if r.Lost != -50 || !strings.Contains(inv, "far side: a link lost") || !strings.Contains(inv, "the far side received 150 frames but the near side sent 100") ||
		!strings.Contains(inv, "50 frames received on the far side carry no rig stamp") || math.Abs(r.Ports[1].RxMpps-0.00015) > 1e-12 {
		t.Errorf("merged: %+v\n%s", r, inv)
	}
	// frames that are not rig's (a real link's ND, LLDP) on the far side:
	// counted apart and said, never received, never a reason for invalid
	far = &bench.Result{Role: bench.RoleRx, DurationS: 1, Received: 100, Foreign: 6, Ports: []bench.PortStats{{Name: "b", RxPkts: 100}}}
	r = MergePeer(bench.Config{Role: bench.RoleGen}, near, far, "x:1")
	var sum strings.Builder
	r.PrintSummary(&sum)
	if r.Foreign != 6 || r.Received != 100 || r.Lost != 0 || len(r.Invalid) != 0 || !strings.Contains(sum.String(), "6 foreign frames ignored") {
		t.Errorf("far side with foreign frames: %+v\n%s", r, sum.String())
	}
	// loop: the near side's own receiver, its latency (one clock) kept
	ln := &bench.Result{Role: bench.RoleLoop, DurationS: 1, Sent: 10, Received: 10, Latency: &bench.Latency{Samples: 10}}
	if r := MergePeer(bench.Config{Role: bench.RoleLoop}, ln, &bench.Result{Role: bench.RoleFwd, DurationS: 1}, "x:1"); r.Latency == nil || r.Received != 10 || len(r.Invalid) != 0 {
		t.Errorf("loop merge: %+v", r)
	}
	if _, err := FarConfig(bench.Config{Role: bench.RoleRx}, bench.Config{}); err == nil {
		t.Error("rx --peer: want an error")
	}
	f, err := FarConfig(bench.Config{Role: bench.RoleLoop, RxQ: 2, TxQ: 2, Burst: 64, Count: 5, Duration: time.Second, Profile: "mlx5-no-inline"}, bench.Config{VDevs: []string{"net_null0"}, Cores: 2})
	if err != nil || f.Role != bench.RoleFwd || f.RxQ != 2 || f.Burst != 64 || f.Count != 0 || f.Duration != 0 || f.Cores != 2 || f.FwdMode != "io" || f.Profile != "mlx5-no-inline" {
		t.Errorf("far config: %+v %v", f, err)
	}
}

// FuzzPeerMessage: a message line from the network never panics the
// decoder, nor the far-config check a start goes through; what the check
// accepts is a receiver or forwarder that validates.
func FuzzPeerMessage(f *testing.F) {
	raw, _ := json.Marshal(bench.Config{Role: bench.RoleRx, VDevs: []string{"net_af_packet0,iface=dpa"}, NoHuge: true})
	for _, m := range []peerMsg{
		{Type: peerStart, Version: PeerProtocol, Config: raw, MAC: "00", ClientNonce: "ab"},
		{Type: peerResult, Result: &bench.Result{Role: bench.RoleRx, Ports: []bench.PortStats{{Name: "x"}}}},
		{Type: peerError, Code: PeerCodeAuth, Error: &child.RunJSONError{Error: "e"}},
	} {
		b, _ := json.Marshal(m)
		f.Add(append(b, '\n'))
	}
	f.Add([]byte(`{"type":"start","config":{"role":"fwd","vdevs":["net_pcap0"]}}`))
	f.Add([]byte(`{"type":"start","config":{"role":"rx","cores":-1,"eal":["-l","0"]}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := decodePeerMsg(line)
		if err != nil || len(m.Config) == 0 {
			return
		}
		if c, err := checkFarConfig(m.Config, &testPolicy); err == nil {
			if (c.Role != bench.RoleRx && c.Role != bench.RoleFwd) || c.Pcap != "" || len(c.EAL) > 0 || c.HugeDir != "" {
				t.Errorf("accepted %+v", c)
			}
		}
	})
}
