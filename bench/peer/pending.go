package peer

import (
	"net"
	"strconv"
	"sync"
	"time"
)

// DefaultMaxPendingPerSource is how many callers from one source address
// may be in their handshake at once (--max-pending-per-source).
const DefaultMaxPendingPerSource = 8

// pendingSet holds the connections accepted and not yet through their
// handshake. It never refuses a new caller: when the set is full, or the
// caller's source already holds its share, the oldest pending connection
// (of that source first) is closed to make room, as a listen queue under a
// SYN flood drops its oldest half-open entries. A flood of silent
// connections therefore delays an authenticated caller by nothing: its
// handshake starts at once, and only those that send no start lose their
// place (serve kept them at most their handshake timeout before).
type pendingSet struct {
	mu        sync.Mutex
	max       int // at most this many pending in all
	perSource int // at most this many from one source address
	seq       uint64
	conns     map[net.Conn]pendingConn
}

type pendingConn struct {
	source string
	since  time.Time
	seq    uint64
}

func newPendingSet(max, perSource int) *pendingSet {
	return &pendingSet{max: max, perSource: perSource, conns: map[net.Conn]pendingConn{}}
}

// sourceOf is the address part of a connection's remote address.
func sourceOf(c net.Conn) string {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.IP.String()
	}
	host, _, err := net.SplitHostPort(c.RemoteAddr().String())
	if err != nil {
		return c.RemoteAddr().String()
	}
	return host
}

// admit adds c and returns the pending connections it displaced (the
// caller closes them), oldest first.
func (p *pendingSet) admit(c net.Conn) []evicted {
	src := sourceOf(c)
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []evicted
	for p.count(src) >= p.perSource {
		out = append(out, p.evictOldest(src, "its source "+src+" already had "+strconv.Itoa(p.perSource)+" callers in their handshake (--max-pending-per-source)"))
	}
	for len(p.conns) >= p.max {
		out = append(out, p.evictOldest("", strconv.Itoa(p.max)+" callers were in their handshake (--max-pending)"))
	}
	p.seq++
	p.conns[c] = pendingConn{source: src, since: time.Now(), seq: p.seq}
	return out
}

// evicted is a pending connection displaced by a newer caller, and why.
type evicted struct {
	conn net.Conn
	age  time.Duration
	why  string
}

// evictOldest removes the oldest pending connection (of source src, or of
// any source when src is "") and returns it.
func (p *pendingSet) evictOldest(src, why string) evicted {
	var oldest net.Conn
	var o pendingConn
	for c, pc := range p.conns {
		if (src == "" || pc.source == src) && (oldest == nil || pc.seq < o.seq) {
			oldest, o = c, pc
		}
	}
	delete(p.conns, oldest)
	return evicted{conn: oldest, age: time.Since(o.since), why: why}
}

// count is how many pending connections come from src.
func (p *pendingSet) count(src string) int {
	n := 0
	for _, pc := range p.conns {
		if pc.source == src {
			n++
		}
	}
	return n
}

// done removes c once its handshake is over (or it was displaced).
func (p *pendingSet) done(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// closeAll closes every pending connection (serve is stopping).
func (p *pendingSet) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
		delete(p.conns, c)
	}
}
