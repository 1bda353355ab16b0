package peer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	"rig/bench"
	"rig/bench/child"
)

// ServeRunFunc runs one far-side dataplane with cfg and calls ready once it
// runs (ports up, lcores polling); a cancelled ctx stops it and returns
// its partial result. Serve uses child.Child.Run (a fresh EAL per run).
type ServeRunFunc func(ctx context.Context, cfg bench.Config, ready func()) (*bench.Result, error)

// Server is the far side of a two-host run (rig bench serve): it runs the
// receiver or forwarder a near side asks for, one at a time, and reports
// its result back. Only callers holding Token are served; only rx and fwd
// configurations that validate and use the devices Policy allows are
// run, and none that reads or writes the far host's files.
type Server struct {
	Token    []byte
	Run      ServeRunFunc
	Log      io.Writer // one line per connection and outcome; never the token
	Timeouts PeerTimeouts
	Policy   FarPolicy
	// MaxPending caps the connections not yet through their handshake
	// (0: DefaultMaxPending), MaxPendingPerSource those from one source
	// address (0: DefaultMaxPendingPerSource). A new caller is never
	// refused for them: the oldest pending connection (of its source
	// first) is closed to make room. Each has Timeouts.Handshake from its
	// accept to finish the handshake.
	MaxPending          int
	MaxPendingPerSource int
	busy                sync.Mutex
	noStart             rateLog // callers that sent no start: a flood of them is one line per period
	overCap             rateLog // pending connections closed to make room for a newer caller
	acceptErr           rateLog // streaks of failed accepts (fds freed and exhausted again: many short streaks)
	acceptOK            rateLog
}

// rateLog writes at most one line per period, saying how many it held back.
type rateLog struct {
	mu     sync.Mutex
	last   time.Time
	held   int
	period time.Duration
}

// logf logs through s at most once per r.period (0: overCapLogEvery).
func (r *rateLog) logf(s *Server, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	period := r.period
	if period == 0 {
		period = overCapLogEvery
	}
	if !r.last.IsZero() && time.Since(r.last) < period {
		r.held++
		return
	}
	msg := fmt.Sprintf(format, args...)
	if r.held > 0 {
		msg += fmt.Sprintf(" (and %d more like it in the last %v)", r.held, time.Since(r.last).Round(time.Second))
	}
	s.logf("%s", msg)
	r.last, r.held = time.Now(), 0
}

// DefaultMaxPending is how many callers serve lets do their handshake at
// once: one near side at a time runs, a few more may be told busy.
const DefaultMaxPending = 32

// acceptBackoff bounds the wait after a failed accept (net/http's
// Server.Serve waits 5 ms doubling up to 1 s).
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// overCapLogEvery: closing connections over MaxPending, callers that
// sent no start and streaks of failed accepts are logged at most this
// often, with how many.
const overCapLogEvery = 10 * time.Second

// temporaryAccept reports an accept error serve outlives: out of file
// descriptors or memory, a connection aborted before it was accepted, a
// timeout. Anything else (a closed listener) ends Serve.
func temporaryAccept(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED, syscall.EINTR} {
		if errors.Is(err, e) {
			return true
		}
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Serve accepts connections on ln until ctx ends, each in its own
// goroutine (a second caller while one runs is told the server is busy).
// A failed accept that may pass (out of file descriptors) is retried
// after a backoff, logged once per streak; at most MaxPending callers
// (MaxPendingPerSource from one address) do their handshake at once, each
// within Timeouts.Handshake of its accept, a new one displacing the oldest.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if len(s.Token) < MinTokenLen {
		return fmt.Errorf("bench serve: token of %d bytes: want at least %d", len(s.Token), MinTokenLen)
	}
	pending := newPendingSet(cmp.Or(max(s.MaxPending, 0), DefaultMaxPending), cmp.Or(max(s.MaxPendingPerSource, 0), DefaultMaxPendingPerSource))
	go func() {
		<-ctx.Done()
		_ = ln.Close()
		pending.closeAll() // a caller that sent no start does not hold serve's exit
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	var delay time.Duration
	failed := 0
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if !temporaryAccept(err) {
				return fmt.Errorf("bench serve: accept on %s: %w", ln.Addr(), err)
			}
			if delay == 0 {
				delay = acceptBackoffMin
				s.acceptErr.logf(s, "accept on %s: %v; retrying (waits from %v up to %v), still serving", ln.Addr(), err, acceptBackoffMin, acceptBackoffMax)
			} else {
				delay = min(2*delay, acceptBackoffMax)
			}
			failed++
			select {
			case <-time.After(delay):
			case <-ctx.Done():
				return nil
			}
			continue
		}
		if failed > 0 {
			s.acceptOK.logf(s, "accept on %s works again after %d failed tries", ln.Addr(), failed)
			delay, failed = 0, 0
		}
		for _, e := range pending.admit(c) {
			_ = e.conn.Close()
			s.overCap.logf(s, "closed the connection from %s after %v without a start, for a newer caller: %s", e.conn.RemoteAddr(), e.age.Round(time.Millisecond), e.why)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.handle(ctx, c, func() { pending.done(c) })
		}()
	}
}

func (s *Server) logf(format string, args ...any) {
	if s.Log != nil {
		fmt.Fprintf(s.Log, "rig bench serve: "+format+"\n", args...)
	}
}

// Handle serves one connection: handshake, one run, its result.
func (s *Server) Handle(ctx context.Context, c net.Conn) { s.handle(ctx, c, func() {}) }

// handle serves c; handshaken is called once its handshake is over
// (authenticated or not).
func (s *Server) handle(ctx context.Context, c net.Conn, handshaken func()) {
	defer c.Close()
	defer handshaken()
	t := s.Timeouts.orDefault()
	deadline := time.Now().Add(t.Handshake) // the whole handshake, from the accept
	pc := newPeerConn(c)
	who := "peer " + c.RemoteAddr().String()
	cfg, probe, ok := s.handshake(pc, who, deadline, t.Handshake)
	handshaken()
	if !ok {
		return
	}
	if probe {
		s.logf("%s: probe: token and config accepted (%s on %s); nothing run", who, cfg.Role, strings.Join(cfg.PortNames(), ", "))
		_ = pc.send(peerMsg{Type: peerProbed}, t.Handshake)
		return
	}
	if !s.busy.TryLock() {
		s.logf("%s: refused: busy with another run", who)
		s.refuse(pc, t.Handshake, PeerCodeBusy, bench.NewError("serve", errors.New("busy: another near side's run is in progress"), "", "wait for it to end; serve runs one trial at a time"))
		return
	}
	// free once the run has ended, before its result goes out: the near
	// side may start its next trial (a sweep's cell, a search's trial) at once
	var once sync.Once
	release := func() { once.Do(s.busy.Unlock) }
	defer release()
	for _, sock := range memifSocketsIn(cfg, s.Policy.MemifDir) {
		if err := removeStaleSocket(sock); err != nil {
			s.logf("%s: %v", who, err)
		}
	}
	s.logf("%s: running %s on %s", who, cfg.Role, strings.Join(cfg.PortNames(), ", "))
	s.runOne(ctx, pc, who, cfg, t, release)
}

// handshake sends hello and reads start (or probe) before deadline:
// version, token and config are checked before anything runs, and the
// session starts; budget: the handshake's whole time, from the accept. ok
// false: the caller was refused (told why).
func (s *Server) handshake(pc *peerConn, who string, deadline time.Time, budget time.Duration) (cfg bench.Config, probe, ok bool) {
	nonce, err := newNonce()
	if err != nil {
		s.logf("%s: %v", who, err)
		return cfg, false, false
	}
	if err := pc.sendBy(peerMsg{Type: peerHello, Version: PeerProtocol, Nonce: nonce}, deadline); err != nil {
		if !errors.Is(err, net.ErrClosed) { // serve closed it (a newer caller, a stop) and said so
			s.logf("%s: hello: %v", who, err)
		}
		return cfg, false, false
	}
	m, err := pc.recvBy(deadline, budget, maxPeerRequest)
	refuse := func(code string, err error) { s.refuseBy(pc, deadline, code, err) }
	switch {
	case err != nil:
		if !errors.Is(err, net.ErrClosed) { // serve closed it (a newer caller, a stop) and said so
			s.noStart.logf(s, "%s: no start: %v", who, err)
		}
		return cfg, false, false
	case m.Type != peerStart && m.Type != peerProbe:
		refuse(PeerCodeProtocol, fmt.Errorf("bench serve: want a start message, got %q", m.Type))
		return cfg, false, false
	case m.Version != PeerProtocol:
		s.logf("%s: refused: protocol %q, this rig speaks %s", who, m.Version, PeerProtocol)
		refuse(PeerCodeVersion, bench.NewError("serve", fmt.Errorf("protocol %q: this rig speaks %s", m.Version, PeerProtocol), "", "run the same rig version on both hosts"))
		return cfg, false, false
	case !validNonce(m.ClientNonce) || !macEqual(m.MAC, startMACOf(m.Type, s.Token, m.Version, nonce, m.ClientNonce, m.Config)):
		s.logf("%s: refused: authentication failed (the token does not match)", who)
		refuse(PeerCodeAuth, bench.NewError("serve", errors.New("authentication failed"), "", "give --peer-token-file the token file serve was started with (--token-file)"))
		return cfg, false, false
	}
	pc.sess = newPeerSession(s.Token, nonce, m.ClientNonce, sideFar)
	cfg, err = checkFarConfig(m.Config, &s.Policy)
	if err != nil {
		s.logf("%s: refused config: %v", who, err)
		refuse(PeerCodeConfig, err) // sealed: the session has started
		return cfg, false, false
	}
	return cfg, m.Type == peerProbe, true
}

// refuse tells the caller why it gets nothing, within timeout.
func (s *Server) refuse(pc *peerConn, timeout time.Duration, code string, err error) {
	s.refuseBy(pc, time.Now().Add(timeout), code, err)
}

// refuseBy tells the caller why it gets nothing, before deadline.
func (s *Server) refuseBy(pc *peerConn, deadline time.Time, code string, err error) {
	e := child.NewRunJSONError(err)
	_ = pc.sendBy(peerMsg{Type: peerError, Code: code, Error: &e}, deadline)
}

// runOne runs cfg until the caller says stop (or goes away, or the run
// ends by itself), telling it when the run is ready and what it measured;
// release is called once the run has ended, before the reply.
func (s *Server) runOne(ctx context.Context, pc *peerConn, who string, cfg bench.Config, t PeerTimeouts, release func()) {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ready := make(chan struct{})
	var once sync.Once
	type outcome struct {
		r   *bench.Result
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
		release()
		s.reply(pc, who, t, out.r, out.err, "ended before it was ready")
		return
	case <-time.After(t.Ready):
		cancel()
		<-done
		release()
		s.logf("%s: the run was not ready within %v; stopped", who, t.Ready)
		s.refuse(pc, t.Result, PeerCodeRun, bench.NewError("far "+string(cfg.Role), fmt.Errorf("not ready within %v", t.Ready), "", "see the serve host's log"))
		return
	}
	if err := pc.send(peerMsg{Type: peerReady}, t.Handshake); err != nil {
		s.logf("%s: gone before the run started (%v); stopped", who, err)
		return
	}
	stop := s.watchCaller(pc, t)
	alive := time.NewTicker(t.Alive)
	defer alive.Stop()
	for {
		select {
		case out = <-done: // ended by itself (--count, --duration) or died
			release()
			s.reply(pc, who, t, out.r, out.err, "ended mid-run")
			return
		case why := <-stop:
			cancel()
			out = <-done
			release()
			var ae *PeerAuthError
			switch {
			case errors.As(why, &ae):
				s.logf("%s: session ended: %v; far run stopped", who, why)
				return
			case why != nil:
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
func (s *Server) reply(pc *peerConn, who string, t PeerTimeouts, r *bench.Result, err error, how string) {
	if err != nil {
		s.logf("%s: the run %s: %v", who, how, err)
		s.refuse(pc, t.Result, PeerCodeRun, err)
		return
	}
	s.logf("%s: done: received %d, sent %d", who, portRx(r), portTx(r))
	if err := pc.send(peerMsg{Type: peerResult, Result: r}, t.Result); err != nil {
		s.logf("%s: result not delivered: %v", who, err)
	}
}

func portRx(r *bench.Result) (n uint64) {
	for _, p := range r.Ports {
		n += p.RxPkts
	}
	return n
}

func portTx(r *bench.Result) (n uint64) {
	for _, p := range r.Ports {
		n += p.TxPkts
	}
	return n
}
