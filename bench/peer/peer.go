// Package peer is a run across two hosts: `rig bench serve` on the far
// host (Server, its far config allow-list FarPolicy, the token file), the
// near side's Peer and its Trial, the protocol between them, and the
// merge of both sides' results (MergePeer).
package peer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"rig/bench"
	"rig/bench/child"
)

// The near side of a trial is a bench.RunFunc: one trial (a run, a sweep cell, an NDR step) with the
// near host's config and returns its result. A local trial is child.Child.Run
// (or dataplane.Run, once per process); Peer.Trial makes one that also runs the far
// side on a peer and returns both sides in one result.

// FarFunc is the far side's config for a trial's near config.
type FarFunc func(near bench.Config) (bench.Config, error)

// FarTemplate is the FarFunc of FarConfig with tmpl: the far side's
// ports, cores and memory fixed, the rest following each trial's near
// config (a sweep's queues, burst...).
func FarTemplate(tmpl bench.Config) FarFunc {
	return func(near bench.Config) (bench.Config, error) { return FarConfig(near, tmpl) }
}

// Peer is the near side's handle on a far host running `rig bench serve`.
type Peer struct {
	Addr     string // HOST:PORT
	Token    []byte
	Timeouts PeerTimeouts
	// Dial connects (nil: a TCP dialer with Timeouts.Dial).
	Dial func(ctx context.Context, addr string) (net.Conn, error)
}

// Trial returns a RunFunc that runs each trial's far side (far(near))
// on the peer and, once it is ready, the near side with local; the result
// holds both sides (MergePeer). The near side's drain waits for frames
// that stopped coming back for up to peerDrainQuiet.
func (p *Peer) Trial(local bench.RunFunc, far FarFunc) bench.RunFunc {
	return func(ctx context.Context, near bench.Config) (*bench.Result, error) {
		fc, err := far(near)
		if err != nil {
			return nil, err
		}
		near.DrainQuiet = max(near.DrainQuiet, peerDrainQuiet)
		nr, fr, err := p.Run(ctx, fc, func(ctx context.Context) (*bench.Result, error) { return local(ctx, near) })
		if err != nil {
			return nil, err
		}
		return MergePeer(near, nr, fr, p.Addr), nil
	}
}

// peerDrainQuiet: a loop's frames come back through the far host's
// forwarder, which may stall (descheduled, its tx ring kicked late):
// TestPrivilegedBenchSweepNDRTwoHosts lost the generator's last burst of
// 32 frames in a trial and its retry at half the cap (the far forwarder
// had counted them forwarded) and found NDR at 54 % of the cap; the
// likely cause (not proven) is the near drain giving up after 50 ms
// without a frame. RFC 2544 section 23 waits 2 s for residual frames;
// lossy trials wait this long instead.
const peerDrainQuiet = 500 * time.Millisecond

// authFail: a message from the far side failed its check; the session
// (and the near run) ended.
func (p *Peer) authFail(ae *PeerAuthError) error {
	return p.fail(ae, "the session ended: its messages can no longer be trusted",
		"check the path between the hosts (a proxy or middlebox rewriting TCP), and that both hosts use the same token file")
}

// fail is an error naming the peer.
func (p *Peer) fail(err error, cause, fix string) error {
	return bench.NewError("peer "+p.Addr, err, cause, fix)
}

// Run asks the peer to run farCfg, runs local once the far side is ready,
// then stops the far side and returns both results. A far side that
// refuses, fails or goes away is an error naming the peer; the near run
// is stopped then.
func (p *Peer) Run(ctx context.Context, farCfg bench.Config, local func(context.Context) (*bench.Result, error)) (near, far *bench.Result, err error) {
	t := p.Timeouts.orDefault()
	pc, err := p.connect(ctx, farCfg, t)
	if err != nil {
		return nil, nil, err
	}
	defer pc.c.Close()
	farDone := p.watchFar(pc, t)
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type outcome struct {
		r   *bench.Result
		err error
	}
	localDone := make(chan outcome, 1)
	go func() {
		r, err := local(lctx)
		localDone <- outcome{r, err}
	}()
	alive := time.NewTicker(t.Alive)
	defer alive.Stop()
	for {
		select {
		case o := <-localDone:
			if o.err != nil {
				return nil, nil, o.err // the far side sees the connection close and stops
			}
			far, err := p.finish(pc, farDone, t)
			return o.r, far, err
		case fm := <-farDone:
			cancel()
			<-localDone
			return nil, nil, p.midRunError(fm)
		case <-alive.C:
			_ = pc.send(peerMsg{Type: peerAlive}, t.Idle)
		}
	}
}

// connect dials, checks hello, sends start and waits for ready.
func (p *Peer) connect(ctx context.Context, farCfg bench.Config, t PeerTimeouts) (*peerConn, error) {
	return p.connectAs(ctx, peerStart, farCfg, t)
}

// connectAs dials, checks hello, sends a start or a probe (typ) and
// waits for its answer: ready (a start), probed (a probe).
func (p *Peer) connectAs(ctx context.Context, typ string, farCfg bench.Config, t PeerTimeouts) (*peerConn, error) {
	dial := p.Dial
	if dial == nil {
		d := net.Dialer{Timeout: t.Dial}
		dial = func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
	}
	c, err := dial(ctx, p.Addr)
	if err != nil {
		return nil, p.fail(err, "", "start `rig bench serve --listen ADDR:PORT --token-file F` on the far host and check the address and any firewall between")
	}
	pc := newPeerConn(c)
	ok := false
	defer func() {
		if !ok {
			c.Close()
		}
	}()
	// SIGINT while the far side starts: stop waiting (each message sets
	// its own deadline again later)
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })
	defer stop()
	hello, err := pc.recv(t.Handshake, maxPeerRequest)
	if err != nil || hello.Type != peerHello {
		return nil, p.fail(fmt.Errorf("no hello: %v", orType(err, hello)), "", "is `rig bench serve` listening there (not another service)?")
	}
	if hello.Version != PeerProtocol {
		return nil, p.fail(fmt.Errorf("it speaks %q, this rig %s", hello.Version, PeerProtocol), "", "run the same rig version on both hosts")
	}
	if !validNonce(hello.Nonce) {
		return nil, p.fail(errors.New("hello without a valid nonce"), "", "is `rig bench serve` listening there (not another service)?")
	}
	raw, err := json.Marshal(farCfg)
	if err != nil {
		return nil, err
	}
	cn, err := newNonce()
	if err != nil {
		return nil, err
	}
	start := peerMsg{Type: typ, Version: PeerProtocol, Config: raw, ClientNonce: cn, MAC: startMACOf(typ, p.Token, PeerProtocol, hello.Nonce, cn, raw)}
	if err := pc.send(start, t.Handshake); err != nil {
		return nil, p.fail(fmt.Errorf("start: %w", err), "", "")
	}
	pc.sess = newPeerSession(p.Token, hello.Nonce, cn, sideNear)
	want := peerReady
	if typ == peerProbe {
		want = peerProbed
	}
	m, sealed, err := pc.recvAfterStart(t.Ready, maxPeerResult)
	var ae *PeerAuthError
	switch {
	case errors.As(err, &ae):
		return nil, p.authFail(ae)
	case err != nil:
		return nil, p.fail(fmt.Errorf("waiting for the far %s to start: %w", farCfg.Role, err), "", "see the serve host's log")
	case m.Type == peerError:
		return nil, p.refused(m, sealed)
	case m.Type != want:
		return nil, p.fail(fmt.Errorf("want %s, got %q", want, m.Type), "", "run the same rig version on both hosts")
	}
	ok = true
	return pc, nil
}

func orType(err error, m peerMsg) any {
	if err != nil {
		return err
	}
	return fmt.Sprintf("got %q", m.Type)
}

// refused is the far side's error message as an error naming the peer;
// sealed false: a refusal before the session (the far side could not
// prove it holds the token; anyone on the path could have sent it).
func (p *Peer) refused(m peerMsg, sealed bool) error {
	e := child.RunJSONError{Error: "refused"}
	if m.Error != nil {
		e = *m.Error
	}
	what := "refused"
	if m.Code == PeerCodeRun {
		what = "the far run failed"
	}
	msg, cause, fix := farText(strings.TrimPrefix(e.Error, "bench: ")), farText(e.Cause), farText(e.Fix)
	if !sealed {
		// anyone on the path could have sent it: its text is shown
		// escaped, and its fix is not given as rig's advice
		msg += " (an unauthenticated answer, shown escaped)"
		cause = "an unauthenticated answer (the far side had not proven it holds the token); it says: " + orDefault(cause, msg) + "; its fix: " + orDefault(fix, "none")
		fix = "check that " + p.Addr + " is your `rig bench serve` and that both hosts use the same token file"
	}
	return &PeerError{Addr: p.Addr, Code: farText(m.Code), Err: fmt.Errorf("%s (%s): %s", what, farText(m.Code), msg), cause: cause, fix: fix}
}

// PeerError is what the far side answered instead of a result.
type PeerError struct {
	Addr       string
	Code       string // PeerCode*
	Err        error
	cause, fix string
}

func (e *PeerError) Error() string { return "bench: peer " + e.Addr + ": " + e.Err.Error() }
func (e *PeerError) Unwrap() error { return e.Err }

// Cause is the far side's reason.
func (e *PeerError) Cause() string {
	if e.cause != "" {
		return e.cause
	}
	return e.Err.Error()
}

// Fix is the far side's fix.
func (e *PeerError) Fix() string { return e.fix }

// watchFar reads the far side's messages mid-run: the first that is not
// alive (a result, an error) or the reason it went silent.
func (p *Peer) watchFar(pc *peerConn, t PeerTimeouts) <-chan farMsg {
	ch := make(chan farMsg, 1)
	go func() {
		for {
			m, err := pc.recv(t.Idle, maxPeerResult)
			if err != nil || m.Type != peerAlive {
				ch <- farMsg{m, err}
				return
			}
		}
	}()
	return ch
}

// farMsg is a message (or read error) from the far side.
type farMsg struct {
	m   peerMsg
	err error
}

// finish lets the wire drain, stops the far side and reads its result.
func (p *Peer) finish(pc *peerConn, farDone <-chan farMsg, t PeerTimeouts) (*bench.Result, error) {
	var fm farMsg
	select {
	case fm = <-farDone: // ended by itself, or died
	case <-time.After(t.Drain):
		if err := pc.send(peerMsg{Type: peerStop}, t.Idle); err != nil {
			return nil, p.fail(fmt.Errorf("stop: %w", err), "the far side went away at the end of the run", "see the serve host's log")
		}
		select {
		case fm = <-farDone:
		case <-time.After(t.Result):
			return nil, p.fail(fmt.Errorf("no result within %v of stop", t.Result), "", "see the serve host's log")
		}
	}
	var ae *PeerAuthError
	switch {
	case errors.As(fm.err, &ae):
		return nil, p.authFail(ae)
	case fm.err != nil:
		return nil, p.fail(fmt.Errorf("the far side went away before its result: %w", fm.err), "", "see the serve host's log")
	case fm.m.Type == peerError:
		return nil, p.refused(fm.m, true)
	case fm.m.Type != peerResult || fm.m.Result == nil:
		return nil, p.fail(fmt.Errorf("want a result, got %q", fm.m.Type), "", "run the same rig version on both hosts")
	}
	return fm.m.Result, nil
}

// midRunError: the far side ended (or went silent) while the near run ran.
func (p *Peer) midRunError(fm farMsg) error {
	var ae *PeerAuthError
	switch {
	case errors.As(fm.err, &ae):
		return p.authFail(ae)
	case fm.err != nil:
		return p.fail(fmt.Errorf("the far side went away mid-run: %w", fm.err), "the serve process, its host or the network between ended",
			"see the serve host's log; the near run was stopped and its numbers discarded")
	case fm.m.Type == peerError:
		return p.refused(fm.m, true)
	}
	return p.fail(fmt.Errorf("the far run ended mid-run (%q)", fm.m.Type), "the far config has its own --count or --duration",
		"leave the far side's count and duration unset: the near side stops it")
}
