package peer

import (
	"net"
	"testing"
)

// addrConn is a connection from a given address (only RemoteAddr is used).
type addrConn struct {
	net.Conn
	from *net.TCPAddr
}

func (c *addrConn) RemoteAddr() net.Addr { return c.from }

func from(ip string, port int) *addrConn {
	return &addrConn{from: &net.TCPAddr{IP: net.ParseIP(ip), Port: port}}
}

// A flood from one source displaces only that source's oldest callers; a
// full set displaces the oldest of all; a caller is never refused.
func TestPendingSetDisplacesOldest(t *testing.T) {
	p := newPendingSet(4, 2)
	a1, a2, a3 := from("10.0.0.1", 1), from("10.0.0.1", 2), from("10.0.0.1", 3)
	b1, c1, d1 := from("10.0.0.2", 1), from("10.0.0.3", 1), from("10.0.0.4", 1)
	for _, c := range []net.Conn{a1, a2, b1} {
		if ev := p.admit(c); len(ev) != 0 {
			t.Fatalf("admit %v displaced %v", c.RemoteAddr(), ev)
		}
	}
	// a third from 10.0.0.1: over its share of 2, its oldest (a1) goes
	if ev := p.admit(a3); len(ev) != 1 || ev[0].conn != a1 {
		t.Fatalf("a3 displaced %+v, want a1", ev)
	}
	// 4 pending (a2, b1, a3 + c1): full; d1 displaces the oldest of all, a2
	if ev := p.admit(c1); len(ev) != 0 {
		t.Fatalf("c1 displaced %+v", ev)
	}
	if ev := p.admit(d1); len(ev) != 1 || ev[0].conn != a2 {
		t.Fatalf("d1 displaced %+v, want a2", ev)
	}
	// one that finishes its handshake frees its place
	p.done(b1)
	if ev := p.admit(from("10.0.0.5", 1)); len(ev) != 0 {
		t.Fatalf("after b1 was done, a new caller displaced %+v", ev)
	}
	if got := len(p.conns); got != 4 {
		t.Errorf("%d pending, want 4", got)
	}
}
