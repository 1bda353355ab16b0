package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"
)

// ServeRunFunc runs one far-side dataplane with cfg and calls ready once it
// runs (ports up, lcores polling); a cancelled ctx stops it and returns
// its partial result. Serve uses Child.Run (a fresh EAL per run).
type ServeRunFunc func(ctx context.Context, cfg Config, ready func()) (*Result, error)

// Server is the far side of a two-host run (rig bench serve): it runs the
// receiver or forwarder a near side asks for, one at a time, and reports
// its result back. Only callers holding Token are served; only rx and fwd
// configurations that validate are run, and none that reads or writes the
// far host's files.
type Server struct {
	Token    []byte
	Run      ServeRunFunc
	Log      io.Writer // one line per connection and outcome; never the token
	Timeouts PeerTimeouts
	busy     sync.Mutex
}

// Serve accepts connections on ln until ctx ends, each in its own
// goroutine (a second caller while one runs is told the server is busy).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if len(s.Token) < MinTokenLen {
		return fmt.Errorf("bench serve: token of %d bytes: want at least %d", len(s.Token), MinTokenLen)
	}
	go func() {
		<-ctx.Done()
		_ = ln.Close()
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("bench serve: accept on %s: %w", ln.Addr(), err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Handle(ctx, c)
		}()
	}
}

func (s *Server) logf(format string, args ...any) {
	if s.Log != nil {
		fmt.Fprintf(s.Log, "rig bench serve: "+format+"\n", args...)
	}
}

// Handle serves one connection: handshake, one run, its result.
func (s *Server) Handle(ctx context.Context, c net.Conn) {
	defer c.Close()
	t := s.Timeouts.orDefault()
	pc := newPeerConn(c)
	who := "peer " + c.RemoteAddr().String()
	cfg, clientNonce, ok := s.handshake(pc, who, t)
	if !ok {
		return
	}
	if !s.busy.TryLock() {
		s.logf("%s: refused: busy with another run", who)
		s.refuse(pc, t, PeerCodeBusy, NewError("serve", errors.New("busy: another near side's run is in progress"), "", "wait for it to end; serve runs one trial at a time"))
		return
	}
	defer s.busy.Unlock()
	s.logf("%s: running %s on %s", who, cfg.Role, strings.Join(cfg.portNames(), ", "))
	s.runOne(ctx, pc, who, cfg, clientNonce, t)
}

// handshake sends hello and reads start: version, token and config are
// checked before anything runs. ok false: the caller was refused (told why).
func (s *Server) handshake(pc *peerConn, who string, t PeerTimeouts) (cfg Config, clientNonce string, ok bool) {
	nonce, err := newNonce()
	if err != nil {
		s.logf("%s: %v", who, err)
		return cfg, "", false
	}
	if err := pc.send(peerMsg{Type: peerHello, Version: PeerProtocol, Nonce: nonce}, t.Handshake); err != nil {
		s.logf("%s: hello: %v", who, err)
		return cfg, "", false
	}
	m, err := pc.recv(t.Handshake, maxPeerRequest)
	switch {
	case err != nil:
		s.logf("%s: no start: %v", who, err)
		return cfg, "", false
	case m.Type != peerStart:
		s.refuse(pc, t, PeerCodeProtocol, fmt.Errorf("bench serve: want a start message, got %q", m.Type))
		return cfg, "", false
	case m.Version != PeerProtocol:
		s.logf("%s: refused: protocol %q, this rig speaks %s", who, m.Version, PeerProtocol)
		s.refuse(pc, t, PeerCodeVersion, NewError("serve", fmt.Errorf("protocol %q: this rig speaks %s", m.Version, PeerProtocol), "", "run the same rig version on both hosts"))
		return cfg, "", false
	case !macEqual(m.MAC, peerMAC(s.Token, []byte(nonce), m.Config)):
		s.logf("%s: refused: authentication failed (the token does not match)", who)
		s.refuse(pc, t, PeerCodeAuth, NewError("serve", errors.New("authentication failed"), "", "give --peer-token-file the token file serve was started with (--token-file)"))
		return cfg, "", false
	}
	cfg, err = checkFarConfig(m.Config)
	if err != nil {
		s.logf("%s: refused config: %v", who, err)
		s.refuse(pc, t, PeerCodeConfig, err)
		return cfg, "", false
	}
	return cfg, m.ClientNonce, true
}

// refuse tells the caller why it gets nothing.
func (s *Server) refuse(pc *peerConn, t PeerTimeouts, code string, err error) {
	e := NewRunJSONError(err)
	_ = pc.send(peerMsg{Type: peerError, Code: code, Error: &e}, t.Handshake)
}

// checkFarConfig decodes and checks a far config before any EAL: the
// roles a far side plays (rx, fwd), nothing that reads or writes the far
// host's files (a pcap, net_pcap, a hugetlbfs dir, EAL's own options or
// file prefix), then Config.Validate as `rig bench run-json` does.
func checkFarConfig(raw json.RawMessage) (Config, error) {
	var cfg Config
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return cfg, NewError("far config", err, "", "run the same rig version on both hosts")
	}
	refuse := func(what string) (Config, error) {
		return cfg, NewError("far config", errors.New(what+" is not served"), "serve runs a receiver or forwarder on its ports, nothing that reads or writes its host's files",
			"run that part on the far host itself")
	}
	switch {
	case cfg.Role != RoleRx && cfg.Role != RoleFwd:
		return refuse(fmt.Sprintf("role %q (a far side receives or forwards)", cfg.Role))
	case cfg.Pcap != "":
		return refuse("--pcap")
	case cfg.HugeDir != "":
		return refuse("--huge-dir")
	case cfg.FilePrefix != "":
		return refuse("an EAL file prefix")
	case len(cfg.EAL) > 0:
		return refuse("--eal " + strings.Join(cfg.EAL, " "))
	}
	for _, v := range cfg.VDevs {
		if strings.HasPrefix(v, "net_pcap") {
			return refuse("--vdev " + v)
		}
	}
	v := cfg
	v.Defaults() // a zero field means its default, as in run-json
	if err := v.Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// runOne runs cfg until the caller says stop (or goes away, or the run
// ends by itself), telling it when the run is ready and what it measured.
func (s *Server) runOne(ctx context.Context, pc *peerConn, who string, cfg Config, clientNonce string, t PeerTimeouts) {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ready := make(chan struct{})
	var once sync.Once
	type outcome struct {
		r   *Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		r, err := s.Run(rctx, cfg, func() { once.Do(func() { close(ready) }) })
		done <- outcome{r, err}
	}()
	var out outcome
	select {
	case <-ready:
	case out = <-done:
		s.reply(pc, who, t, out.r, out.err, "ended before it was ready")
		return
	case <-time.After(t.Ready):
		cancel()
		<-done
		s.logf("%s: the run was not ready within %v; stopped", who, t.Ready)
		s.refuse(pc, t, PeerCodeRun, NewError("far "+string(cfg.Role), fmt.Errorf("not ready within %v", t.Ready), "", "see the serve host's log"))
		return
	}
	if err := pc.send(peerMsg{Type: peerReady, MAC: peerMAC(s.Token, []byte(peerReady), []byte(clientNonce))}, t.Handshake); err != nil {
		s.logf("%s: gone before the run started (%v); stopped", who, err)
		return
	}
	stop := s.watchCaller(pc, t)
	alive := time.NewTicker(t.Alive)
	defer alive.Stop()
	for {
		select {
		case out = <-done: // ended by itself (--count, --duration) or died
			s.reply(pc, who, t, out.r, out.err, "ended mid-run")
			return
		case why := <-stop:
			cancel()
			out = <-done
			if why != nil {
				s.logf("%s: the near side went away mid-run (%v); far run stopped", who, why)
				return
			}
			s.reply(pc, who, t, out.r, out.err, "failed")
			return
		case <-alive.C:
			_ = pc.send(peerMsg{Type: peerAlive}, t.Idle)
		}
	}
}

// watchCaller reads the caller's messages mid-run: nil on stop, the
// reason when it goes silent or away.
func (s *Server) watchCaller(pc *peerConn, t PeerTimeouts) <-chan error {
	stop := make(chan error, 1)
	go func() {
		for {
			m, err := pc.recv(t.Idle, maxPeerRequest)
			switch {
			case err != nil:
				stop <- err
				return
			case m.Type == peerStop:
				stop <- nil
				return
			case m.Type != peerAlive:
				stop <- fmt.Errorf("unexpected message %q", m.Type)
				return
			}
		}
	}()
	return stop
}

// reply sends the run's result, or its error.
func (s *Server) reply(pc *peerConn, who string, t PeerTimeouts, r *Result, err error, how string) {
	if err != nil {
		s.logf("%s: the run %s: %v", who, how, err)
		s.refuse(pc, t, PeerCodeRun, err)
		return
	}
	s.logf("%s: done: received %d, sent %d", who, portRx(r), portTx(r))
	if err := pc.send(peerMsg{Type: peerResult, Result: r}, t.Result); err != nil {
		s.logf("%s: result not delivered: %v", who, err)
	}
}

func portRx(r *Result) (n uint64) {
	for _, p := range r.Ports {
		n += p.RxPkts
	}
	return n
}

func portTx(r *Result) (n uint64) {
	for _, p := range r.Ports {
		n += p.TxPkts
	}
	return n
}
