package peer

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"rig/bench"
)

// The far config's allow-list: only net_null, net_ring, net_memif (its
// socket moved into serve's dir), net_af_packet on allowed netdevs and
// allowed PCI functions, each with its harmless options; aliases resolve
// to their driver first. What the attacker of a v1 serve sent is refused.
func TestFarConfigAllowList(t *testing.T) {
	dir := t.TempDir()
	pol := &FarPolicy{Netdevs: []string{"p0", "dpa"}, PCI: []string{"0000:03:00.0"}, MemifDir: dir}
	rx := func(vdevs []string, ports ...string) json.RawMessage {
		raw, _ := json.Marshal(bench.Config{Role: bench.RoleRx, VDevs: vdevs, Ports: ports, NoHuge: true})
		return raw
	}
	for _, c := range []struct {
		raw  json.RawMessage
		want []string // the vdevs serve runs
	}{
		{rx([]string{"net_null0,size=64,copy=1,no-rx=1"}), []string{"net_null0,size=64,copy=1,no-rx=1"}},
		{rx([]string{"eth_null3"}), []string{"eth_null3"}},
		{rx([]string{"net_ring0"}), []string{"net_ring0"}},
		{rx([]string{"eth_af_packet0,iface=p0,qpairs=2,framecnt=8192,qdisc_bypass=1"}), []string{"eth_af_packet0,iface=p0,qpairs=2,framecnt=8192,qdisc_bypass=1"}},
		{rx([]string{"net_memif0,role=server,id=3,socket=a.sock,socket-abstract=no,secret=s3"}), []string{"net_memif0,role=server,id=3,secret=s3,socket=" + dir + "/a.sock,socket-abstract=no"}},
		{rx([]string{"net_memif1"}), []string{"net_memif1,socket=" + dir + "/memif.sock,socket-abstract=no"}},
		{rx(nil, "0000:03:00.0,mprq_en=1,rxq_cqe_comp_en=1,representor=[65535]"), nil},
		{rx([]string{"net_null0"}, "net_null0"), []string{"net_null0"}},
	} {
		cfg, err := checkFarConfig(c.raw, pol)
		if err != nil || strings.Join(cfg.VDevs, " ") != strings.Join(c.want, " ") {
			t.Errorf("%s: %v %q, want %q", c.raw, err, cfg.VDevs, c.want)
		}
	}
	for _, c := range []struct {
		vdevs []string
		ports []string
		want  string
	}{
		// the attacks on v1: a vhost socket over an existing file, a pcap written through DPDK's alias
		{[]string{"net_vhost0,iface=/etc/passwd"}, nil, "driver net_vhost is not served"},
		{[]string{"eth_vhost0,iface=/tmp/x"}, nil, "driver net_vhost (eth_vhost is DPDK's alias of it) is not served"},
		{[]string{"eth_pcap0,tx_pcap=/tmp/x"}, nil, "driver net_pcap (eth_pcap is DPDK's alias of it) is not served"},
		{[]string{"virtio_user0,path=/dev/vhost-net"}, nil, "driver net_virtio_user (virtio_user is DPDK's alias of it) is not served"},
		{[]string{"net_tap0,iface=x"}, nil, "driver net_tap is not served"},
		{[]string{"net_nullx"}, nil, "driver net_nullx is not served"},
		{[]string{"Net_null0"}, nil, `device "Net_null0" is not a driver name and digits`},
		{[]string{"bus=vdev/class=eth"}, nil, "is not a driver name and digits"},
		{[]string{"net_ring0,nodeaction=r0:0:CREATE"}, nil, "option nodeaction of net_ring is not served (served: none)"},
		{[]string{"net_ring0,internal=0x1"}, nil, "option internal of net_ring is not served"},
		{[]string{"net_null0,driver=net_pcap"}, nil, "option driver of net_null is not served (served: copy, no-rx, size)"},
		{[]string{"net_null0,size=64,size=128"}, nil, "option size given twice"},
		{[]string{"net_null0,size=-1"}, nil, "size=-1: want a decimal number"},
		{[]string{"net_null0,,size=1"}, nil, "an empty option"},
		{[]string{"net_null0,size"}, nil, `option "size" is not key=value`},
		{[]string{"net_null0", "net_null0"}, nil, "--vdev net_null0 given twice"},
		{[]string{"net_af_packet0,iface=eth9"}, nil, "netdev eth9 is not one serve was started with (--allow-netdev)"},
		{[]string{"net_af_packet0"}, nil, "net_af_packet without iface="},
		{[]string{"net_af_packet0,iface=p0,fanout_mode=hash"}, nil, "option fanout_mode of net_af_packet is not served"},
		{[]string{"net_memif0,socket=/etc/x.sock"}, nil, "option socket=/etc/x.sock holds '/'"},
		{[]string{"net_memif0,socket=..x"}, nil, "want a socket name"},
		{[]string{"net_memif0,socket-abstract=yes"}, nil, "socket-abstract=yes: want no"},
		{[]string{"net_memif0,owner-uid=0"}, nil, "option owner-uid of net_memif is not served"},
		{[]string{"net_null0"}, []string{"0000:04:00.0"}, "PCI function 0000:04:00.0 is not one serve was started with (--allow-pci)"},
		{[]string{"net_null0"}, []string{"0000:03:00.0,class=crypto"}, "option class is not served on a PCI port"},
		{[]string{"net_null0"}, []string{"net_null1"}, "names neither a --peer-vdev nor a PCI address"},
		{[]string{"net_null0"}, []string{"net_null0,size=1"}, "names neither a --peer-vdev nor a PCI address"},
	} {
		_, err := checkFarConfig(rx(c.vdevs, c.ports...), pol)
		var e *bench.Error
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &e) || e.Fix() == "" {
			t.Errorf("%q %q: %v, want a refusal with a fix naming %q", c.vdevs, c.ports, err, c.want)
		}
	}
	// the fix says how to allow it on the far host
	_, err := checkFarConfig(rx([]string{"net_af_packet0,iface=eth9"}), pol)
	var e *bench.Error
	if !errors.As(err, &e) || !strings.Contains(e.Fix(), "start serve with --allow-netdev eth9") {
		t.Errorf("af_packet fix: %v", err)
	}
	// no memif dir: memif refused
	if _, err := checkFarConfig(rx([]string{"net_memif0"}), &FarPolicy{}); err == nil || !strings.Contains(err.Error(), "net_memif is not served here") {
		t.Errorf("memif without a dir: %v", err)
	}
}

// Before a run serve removes a stale socket of its memif dir (a run's
// server binds anew), and nothing else.
func TestRemoveStaleSocket(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "a.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	file := filepath.Join(dir, "b.sock")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := checkFarConfig(json.RawMessage(`{"role":"rx","noHuge":true,"vdevs":["net_memif0,socket=a.sock","net_memif1,socket=b.sock"]}`), &FarPolicy{MemifDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	socks := memifSocketsIn(cfg, dir)
	if len(socks) != 2 {
		t.Fatalf("sockets %q", socks)
	}
	for _, s := range socks {
		if err := removeStaleSocket(s); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Errorf("stale socket kept: %v", err)
	}
	if _, err := os.Stat(file); err != nil {
		t.Errorf("a regular file was removed: %v", err)
	}
}

// FuzzFarDevargs: what the allow-list accepts is a served driver with
// served options only; a memif socket lands in serve's dir; an
// af_packet port opens an allowed netdev; nothing else names a path.
func FuzzFarDevargs(f *testing.F) {
	for _, s := range []string{"net_null0,size=64", "eth_pcap0,tx_pcap=/x", "net_memif0,socket=a,role=server", "net_af_packet0,iface=p0",
		"net_ring0,nodeaction=a:0:CREATE", "net_vhost0,iface=/etc/passwd", "net_memif0,socket=../x", "eth_null0,copy=1", "0000:03:00.0,mprq_en=1"} {
		f.Add(s)
	}
	pol := &FarPolicy{Netdevs: []string{"p0"}, MemifDir: "/run/rig/serve-1"}
	f.Fuzz(func(t *testing.T, v string) {
		out, name, err := checkFarVdev(pol, v)
		if err != nil {
			return
		}
		dev, keys, vals, err := parseFarDevargs(out)
		_, driver, d := resolveVdevDriver(dev)
		if err != nil || d == nil || dev != name {
			t.Fatalf("%q accepted as %q: %v, driver %q", v, out, err, driver)
		}
		for _, k := range keys {
			if _, ok := d.opts[k]; !ok {
				t.Fatalf("%q accepted with option %s of %s", v, k, driver)
			}
			switch {
			case k == "socket":
				if filepath.Dir(vals[k]) != pol.MemifDir || vals["socket-abstract"] != "no" {
					t.Fatalf("%q: memif socket %q outside %s", v, out, pol.MemifDir)
				}
			case k == "iface" && vals[k] != "p0":
				t.Fatalf("%q: af_packet on %q", v, vals[k])
			case strings.Contains(vals[k], "/"):
				t.Fatalf("%q: a path in %s", v, k)
			}
		}
		if driver == "net_memif" && vals["socket"] == "" {
			t.Fatalf("%q: memif without its socket in serve's dir: %q", v, out)
		}
	})
}

// mitm relays the lines of a near↔far connection and lets edit change
// them: its return is what goes on (nil: dropped).
type mitm struct {
	edit func(from string, n int, line []byte) [][]byte
}

// pipe is the near side's end of a connection to srv through m.
func (m *mitm) pipe(srv *Server) net.Conn {
	near, mid1 := net.Pipe()
	mid2, far := net.Pipe()
	go srv.Handle(context.Background(), far)
	relay := func(from string, src, dst net.Conn) {
		defer dst.Close()
		r := bufio.NewReader(src)
		for n := 1; ; n++ {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return
			}
			for _, l := range m.edit(from, n, line) {
				if _, err := dst.Write(l); err != nil {
					return
				}
			}
		}
	}
	go relay(sideNear, mid1, mid2)
	go relay(sideFar, mid2, mid1)
	return near
}

// Every message after the handshake is sealed: an altered, replayed,
// dropped, forged or unsealed message ends the session with the reason,
// on either side; untouched, the run goes through.
func TestPeerSealedMessages(t *testing.T) {
	type edit = func(from string, n int, line []byte) [][]byte
	pass := func(_ string, _ int, l []byte) [][]byte { return [][]byte{l} }
	// line n of one direction (hello = far 1, start = near 1, ready = far 2)
	on := func(dir string, at int, f func(l []byte) [][]byte) edit {
		return func(from string, n int, l []byte) [][]byte {
			if from == dir && n == at {
				return f(l)
			}
			return [][]byte{l}
		}
	}
	// alter changes a sealed message's body, its seq and MAC kept: a
	// result's count, an alive into a stop, else a field added
	alter := func(l []byte) [][]byte {
		var sm peerSealed
		_ = json.Unmarshal(l, &sm)
		body := strings.Replace(string(sm.Body), `"rxPkts":99000`, `"rxPkts":99999`, 1)
		body = strings.Replace(body, `"type":"alive"`, `"type":"stop"`, 1)
		if body == string(sm.Body) {
			body = `{"code":"x",` + body[1:]
		}
		sm.Body = json.RawMessage(body)
		b, _ := json.Marshal(sm)
		return [][]byte{append(b, '\n')}
	}
	twice := func(l []byte) [][]byte { return [][]byte{l, l} }
	drop := func([]byte) [][]byte { return nil }
	plain := func(typ string) func([]byte) [][]byte {
		return func([]byte) [][]byte { return [][]byte{[]byte(`{"type":"` + typ + `"}` + "\n")} }
	}
	// the far side's result, found by its content (after the alives)
	findResult := func(f func(l []byte) [][]byte) edit {
		return func(from string, n int, l []byte) [][]byte {
			if from == sideFar {
				var sm peerSealed
				if json.Unmarshal(l, &sm) == nil && strings.Contains(string(sm.Body), `"type":"result"`) {
					return f(l)
				}
			}
			return [][]byte{l}
		}
	}
	slowNear := func(ctx context.Context, c bench.Config) (*bench.Result, error) {
		select {
		case <-time.After(150 * time.Millisecond):
		case <-ctx.Done():
			return nil, errors.New("near stopped")
		}
		return nearGen(100000)(ctx, c)
	}
	for _, c := range []struct {
		name    string
		edit    edit
		nearErr string // "" = the run goes through
		farLog  string
	}{
		{"untouched", pass, "", "done: received 99000"},
		{"ready altered", on(sideFar, 2, alter), "message 1 from the far side failed authentication: the path altered it, or the peer does not hold the token", ""},
		{"ready replaced by a plain ready", on(sideFar, 2, plain("ready")), `message 1 from the far side is not authenticated (a plain "ready" message)`, ""},
		{"far alive replayed", on(sideFar, 3, twice), "message 2 from the far side is out of sequence (want 3): replayed, dropped or reordered on the path", ""},
		{"far alive dropped", on(sideFar, 3, drop), "message 3 from the far side is out of sequence (want 2)", ""},
		{"near alive turned into stop", on(sideNear, 2, alter), "", "session ended: message 1 from the near side failed authentication"},
		{"near alive replayed", on(sideNear, 2, twice), "", "session ended: message 1 from the near side is out of sequence (want 2)"},
		{"plain stop forged", on(sideNear, 2, plain("stop")), "", `session ended: message 1 from the near side is not authenticated (not a sealed message)`},
		{"result altered", findResult(alter), "failed authentication: the path altered it", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			far := &fakeFar{rx: 99000}
			log := &syncBuf{}
			srv := &Server{Token: []byte(testToken), Run: far.run, Log: log, Timeouts: fastPeer, Policy: testPolicy}
			m := &mitm{edit: c.edit}
			p := &Peer{Addr: "far:7400", Token: []byte(testToken), Timeouts: fastPeer, Dial: func(context.Context, string) (net.Conn, error) { return m.pipe(srv), nil }}
			r, err := p.Trial(slowNear, farRx)(context.Background(), bench.Config{Role: bench.RoleGen})
			switch {
			case c.nearErr == "" && c.farLog == "done: received 99000":
				if err != nil || r.Received != 99000 {
					t.Fatalf("untouched: %v %+v", err, r)
				}
			case c.nearErr != "":
				if err == nil || !strings.Contains(err.Error(), c.nearErr) {
					t.Fatalf("near side: %v, want %q", err, c.nearErr)
				}
			}
			if c.farLog != "" {
				for deadline := time.Now().Add(2 * time.Second); !strings.Contains(log.String(), c.farLog) && time.Now().Before(deadline); {
					time.Sleep(10 * time.Millisecond)
				}
				if !strings.Contains(log.String(), c.farLog) {
					t.Fatalf("serve log lacks %q:\n%s", c.farLog, log.String())
				}
			}
		})
	}
	// a start whose client nonce was swapped on the path is refused: the
	// start's MAC covers both nonces
	srv := &Server{Token: []byte(testToken), Run: (&fakeFar{}).run, Timeouts: fastPeer, Policy: testPolicy}
	c, s := net.Pipe()
	go srv.Handle(context.Background(), s)
	pc := newPeerConn(c)
	raw, _ := json.Marshal(bench.Config{Role: bench.RoleRx, VDevs: []string{"net_af_packet0,iface=dpa"}, NoHuge: true})
	hello, _ := pc.recv(time.Second, maxPeerRequest)
	cn, other := strings.Repeat("a", 64), strings.Repeat("b", 64)
	_ = pc.send(peerMsg{Type: peerStart, Version: PeerProtocol, Config: raw, ClientNonce: other, MAC: startMAC([]byte(testToken), PeerProtocol, hello.Nonce, cn, raw)}, time.Second)
	if m, _ := pc.recv(time.Second, maxPeerRequest); m.Type != peerError || m.Code != PeerCodeAuth {
		t.Errorf("swapped client nonce: %+v", m)
	}
	c.Close()
}

// fakeListener returns its errors from Accept, then its connections,
// then blocks until closed.
type fakeListener struct {
	mu     sync.Mutex
	errs   []error
	conns  []net.Conn
	times  []time.Time
	closed chan struct{}
	once   sync.Once
}

func (l *fakeListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	l.times = append(l.times, time.Now())
	if len(l.errs) > 0 {
		e := l.errs[0]
		l.errs = l.errs[1:]
		l.mu.Unlock()
		return nil, e
	}
	if len(l.conns) > 0 {
		c := l.conns[0]
		l.conns = l.conns[1:]
		l.mu.Unlock()
		return c, nil
	}
	l.mu.Unlock()
	<-l.closed
	return nil, net.ErrClosed
}

func (l *fakeListener) Close() error   { l.once.Do(func() { close(l.closed) }); return nil }
func (l *fakeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7400} }

// A failed accept that may pass (out of file descriptors, memory, an
// aborted connection) is retried after 5 ms doubling up to 1 s, logged
// once per streak, and serve goes on serving; any other accept error
// ends Serve.
func TestServeAcceptBackoff(t *testing.T) {
	emfile := &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	var errs []error
	for _, e := range []syscall.Errno{syscall.EMFILE, syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED} {
		errs = append(errs, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", e)})
	}
	errs = append(errs, emfile)
	c, s := net.Pipe()
	l := &fakeListener{errs: errs, conns: []net.Conn{s}, closed: make(chan struct{})}
	log := &syncBuf{}
	srv := &Server{Token: []byte(testToken), Run: (&fakeFar{rx: 1}).run, Log: log, Timeouts: fastPeer, Policy: testPolicy}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()
	// the connection after the errors is served
	pc := newPeerConn(c)
	if hello, err := pc.recv(5*time.Second, maxPeerRequest); err != nil || hello.Type != peerHello {
		t.Fatalf("after the accept errors: %+v %v\n%s", hello, err, log.String())
	}
	c.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	l.mu.Lock()
	times := l.times
	l.mu.Unlock()
	// waits 5, 10, 20, 40, 80, 160, 320 ms between the 8 accepts
	for i, want := 0, acceptBackoffMin; i < 7; i, want = i+1, min(2*want, acceptBackoffMax) {
		if got := times[i+1].Sub(times[i]); got < want || got > want+time.Second {
			t.Errorf("wait %d: %v, want %v", i, got, want)
		}
	}
	if l := log.String(); strings.Count(l, "retrying") != 1 || !strings.Contains(l, "accept4: too many open files; retrying (waits from 5ms up to 1s), still serving") ||
		!strings.Contains(l, "accept on 127.0.0.1:7400 works again after 7 failed tries") {
		t.Errorf("log:\n%s", l)
	}
	// the backoff never passes 1 s
	d := acceptBackoffMin
	for i := 0; i < 20; i++ {
		d = min(2*d, acceptBackoffMax)
	}
	if d != time.Second {
		t.Errorf("backoff cap %v", d)
	}
	// a permanent error ends Serve
	l2 := &fakeListener{errs: []error{&net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EINVAL)}}, closed: make(chan struct{})}
	if err := srv.Serve(context.Background(), l2); err == nil || !strings.Contains(err.Error(), "invalid argument") {
		t.Errorf("EINVAL: %v", err)
	}
}

// At most MaxPending callers are in their handshake: a new one gets its
// hello and the oldest silent one is closed (logged, rate-limited); each
// has Timeouts.Handshake from its accept, however slowly it sends; a
// legitimate caller is served while the newest silent ones still wait.
func TestServePendingCap(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	log := &syncBuf{}
	to := fastPeer
	to.Handshake = 400 * time.Millisecond
	srv := &Server{Token: []byte(testToken), Run: (&fakeFar{rx: 5}).run, Log: log, Timeouts: to, MaxPending: 3, Policy: testPolicy}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		return c, bufio.NewReader(c)
	}
	hello := func(i int, c net.Conn, r *bufio.Reader) {
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if l, err := r.ReadString('\n'); err != nil || !strings.Contains(l, `"hello"`) {
			t.Fatalf("caller %d: %q %v", i, l, err)
		}
	}
	var conns []net.Conn
	var readers []*bufio.Reader
	for i := 0; i < 8; i++ {
		c, r := dial()
		defer c.Close()
		// every caller gets its hello: over the cap, the oldest silent one goes
		hello(i, c, r)
		conns, readers = append(conns, c), append(readers, r)
	}
	for i, r := range readers[:5] {
		_ = conns[i].SetReadDeadline(time.Now().Add(time.Second))
		if l, err := r.ReadString('\n'); l != "" || !errors.Is(err, io.EOF) {
			t.Errorf("caller %d, displaced by a newer one: %q %v, want closed", i, l, err)
		}
	}
	// one dribbling a byte at a time is cut at its deadline from the accept
	start := time.Now()
	c := conns[5]
	go func() {
		for i := 0; i < 50; i++ {
			if _, err := c.Write([]byte("{")); err != nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := readers[5].ReadString('\n'); err == nil || time.Since(start) > time.Second {
		t.Errorf("dribbling caller: %v after %v", err, time.Since(start))
	}
	// a legitimate caller is served while the newest silent ones are still open
	c6, r6 := dial()
	defer c6.Close()
	hello(8, c6, r6)
	p := &Peer{Addr: ln.Addr().String(), Token: []byte(testToken), Timeouts: fastPeer}
	r, err := p.Trial(nearGen(10), farRx)(context.Background(), bench.Config{Role: bench.RoleGen})
	if err != nil || r.Received != 5 {
		t.Fatalf("legitimate caller: %v %+v\n%s", err, r, log.String())
	}
	if l := log.String(); !strings.Contains(l, "without a start, for a newer caller: 3 callers were in their handshake (--max-pending)") ||
		!strings.Contains(l, "no start: nothing for 400ms") {
		t.Errorf("log:\n%s", l)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// rateLog: one line per period; the next says how many were held back.
func TestRateLog(t *testing.T) {
	log := &syncBuf{}
	s := &Server{Log: log}
	r := &rateLog{period: 100 * time.Millisecond}
	for i := 0; i < 5; i++ {
		r.logf(s, "closed %d", i)
	}
	time.Sleep(120 * time.Millisecond)
	r.logf(s, "closed %d", 5)
	want := "rig bench serve: closed 0\nrig bench serve: closed 5 (and 4 more like it in the last 0s)\n"
	if log.String() != want {
		t.Errorf("log %q, want %q", log.String(), want)
	}
}

// A representor list with a comma inside its brackets survives the far
// config whole: allowed on an allowed PCI function and run as written.
func TestRepresentorListSurvivesFarConfig(t *testing.T) {
	const d = "0000:03:00.0,representor=[0,65535]"
	raw, _ := json.Marshal(bench.Config{Role: bench.RoleRx, Ports: []string{d}, NoHuge: true})
	cfg, err := checkFarConfig(raw, &FarPolicy{PCI: []string{"0000:03:00.0"}})
	if err != nil || len(cfg.Ports) != 1 || cfg.Ports[0] != d {
		t.Fatalf("far config: %v, ports %q; want %q", err, cfg.Ports, d)
	}
	dev, keys, vals, err := parseFarDevargs(d)
	if err != nil || dev != "0000:03:00.0" || len(keys) != 1 || vals["representor"] != "[0,65535]" {
		t.Errorf("parseFarDevargs: %q %q %q %v", dev, keys, vals, err)
	}
}

// A token holder's far net_null with a size larger than the far side's
// mbufs is refused before any EAL (it crashed the far dataplane).
func TestFarConfigRefusesOversizedNull(t *testing.T) {
	raw, _ := json.Marshal(bench.Config{Role: bench.RoleRx, VDevs: []string{"net_null0,size=65535,copy=1"}, NoHuge: true})
	if _, err := checkFarConfig(raw, &FarPolicy{}); err == nil || !strings.Contains(err.Error(), "size=65535: want 1..2048") {
		t.Errorf("far net_null0,size=65535,copy=1: %v", err)
	}
}
