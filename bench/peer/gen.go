package peer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"rig/bench"
)

// Probe asks the far side whether it would run farCfg: the connection,
// the protocol version, the token and the far config (its role, its
// devices against serve's allow-list) are checked, and nothing runs. An
// error names the peer and what it refused, as a start would.
func (p *Peer) Probe(ctx context.Context, farCfg bench.Config) error {
	t := p.Timeouts.orDefault()
	pc, err := p.connectAs(ctx, peerProbe, farCfg, t)
	if err != nil {
		return err
	}
	return pc.c.Close()
}

// RunToEnd runs farCfg on the peer until it ends by itself (a generator
// or loop with a duration or count, a check's far ends) and returns its
// result. The near side only waits, sending alive; a cancelled ctx stops
// the far run and returns its partial result. A far side that refuses,
// fails or goes away is an error naming the peer.
func (p *Peer) RunToEnd(ctx context.Context, farCfg bench.Config) (*bench.Result, error) {
	if farCfg.Duration <= 0 && farCfg.Count == 0 {
		return nil, fmt.Errorf("bench: peer %s: a far %s without a duration or count would not end by itself", p.Addr, farCfg.Role)
	}
	t := p.Timeouts.orDefault()
	pc, err := p.connect(ctx, farCfg, t)
	if err != nil {
		return nil, err
	}
	defer pc.c.Close()
	farDone := p.watchFar(pc, t)
	alive := time.NewTicker(t.Alive)
	defer alive.Stop()
	for {
		select {
		case fm := <-farDone:
			return p.endResult(fm)
		case <-ctx.Done():
			if err := pc.send(peerMsg{Type: peerStop}, t.Idle); err != nil {
				return nil, p.fail(fmt.Errorf("stop: %w", err), "the far side went away when rig stopped", "see the serve host's log")
			}
			select {
			case fm := <-farDone:
				return p.endResult(fm)
			case <-time.After(t.Result):
				return nil, p.fail(fmt.Errorf("no result within %v of stop", t.Result), "", "see the serve host's log")
			}
		case <-alive.C:
			_ = pc.send(peerMsg{Type: peerAlive}, t.Idle)
		}
	}
}

// endResult is the far side's last message of a run that ends by itself:
// its result, or why there is none.
func (p *Peer) endResult(fm farMsg) (*bench.Result, error) {
	var ae *PeerAuthError
	switch {
	case errors.As(fm.err, &ae):
		return nil, p.authFail(ae)
	case fm.err != nil:
		return nil, p.fail(fmt.Errorf("the far side went away mid-run: %w", fm.err), "the serve process, its host or the network between ended",
			"see the serve host's log; its numbers are discarded")
	case fm.m.Type == peerError:
		return nil, p.refused(fm.m, true)
	case fm.m.Type != peerResult || fm.m.Result == nil:
		return nil, p.fail(fmt.Errorf("want a result, got %q", fm.m.Type), "", "run the same rig version on both hosts")
	}
	return fm.m.Result, nil
}
