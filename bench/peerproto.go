package bench

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// PeerProtocol is the version of the two-host protocol (rig bench serve
// and --peer): newline-delimited JSON messages over TCP. Both sides must
// speak the same version.
//
//	far (serve)                       near (--peer)
//	hello {version, nonce}      →
//	                            ←     start {version, config, clientNonce, mac}
//	ready {mac}                 →     (or error {code, error})
//	alive (each second)         ↔     alive (each second)
//	                            ←     stop  (the near run ended)
//	result {result}             →     (or error: the far run failed)
//
// mac (start) is HMAC-SHA256 over the server's nonce and the exact config
// bytes, keyed by the shared token; mac (ready) is HMAC-SHA256 over
// "ready" and the client's nonce: each side proves it holds the token
// without sending it, and a recorded start cannot be replayed (the nonce
// is new each connection). Nothing is encrypted: run serve on a
// management network.
const PeerProtocol = "rig.bench.peer/v1"

// Peer error codes (peerMsg.Code).
const (
	PeerCodeAuth     = "auth"     // the token did not match
	PeerCodeVersion  = "version"  // the other side speaks another PeerProtocol
	PeerCodeConfig   = "config"   // the far config is not one serve runs
	PeerCodeBusy     = "busy"     // serve runs one trial at a time
	PeerCodeRun      = "run"      // the far run failed
	PeerCodeProtocol = "protocol" // a message out of order or malformed
)

// Message types.
const (
	peerHello  = "hello"
	peerStart  = "start"
	peerReady  = "ready"
	peerAlive  = "alive"
	peerStop   = "stop"
	peerResult = "result"
	peerError  = "error"
)

// peerMsg is one protocol message.
type peerMsg struct {
	Type        string          `json:"type"`
	Version     string          `json:"version,omitempty"`
	Nonce       string          `json:"nonce,omitempty"`
	ClientNonce string          `json:"clientNonce,omitempty"`
	Config      json.RawMessage `json:"config,omitempty"`
	MAC         string          `json:"mac,omitempty"`
	Result      *Result         `json:"result,omitempty"`
	Code        string          `json:"code,omitempty"`
	Error       *RunJSONError   `json:"error,omitempty"`
}

// Message size limits: a start (a config) is small; a result carries the
// per-interval samples of a long run.
const (
	maxPeerRequest = 1 << 20
	maxPeerResult  = 64 << 20
)

// PeerTimeouts bound every wait of the protocol.
type PeerTimeouts struct {
	Dial      time.Duration // connecting
	Handshake time.Duration // hello and start
	Ready     time.Duration // the far dataplane's start (EAL, ports, links)
	Idle      time.Duration // the longest silence mid-run (alive comes each Alive)
	Alive     time.Duration
	Result    time.Duration // the far result after stop
	Drain     time.Duration // after the near run, before stop: frames on the wire arrive
}

// DefaultPeerTimeouts: EAL, a memif server's wait and the link wait take
// seconds on a loaded host; the far child gets DefaultChildGrace to stop.
func DefaultPeerTimeouts() PeerTimeouts {
	return PeerTimeouts{Dial: 10 * time.Second, Handshake: 10 * time.Second, Ready: 90 * time.Second, Idle: 10 * time.Second,
		Alive: time.Second, Result: DefaultChildGrace + 20*time.Second, Drain: 500 * time.Millisecond}
}

// orDefault fills zero fields.
func (t PeerTimeouts) orDefault() PeerTimeouts {
	d := DefaultPeerTimeouts()
	for _, f := range []struct{ p, def *time.Duration }{
		{&t.Dial, &d.Dial}, {&t.Handshake, &d.Handshake}, {&t.Ready, &d.Ready}, {&t.Idle, &d.Idle},
		{&t.Alive, &d.Alive}, {&t.Result, &d.Result}, {&t.Drain, &d.Drain},
	} {
		if *f.p <= 0 {
			*f.p = *f.def
		}
	}
	return t
}

// peerConn frames messages on a connection: one writer at a time, each
// read under a deadline and a size limit.
type peerConn struct {
	c  net.Conn
	r  *bufio.Reader
	mu sync.Mutex
}

func newPeerConn(c net.Conn) *peerConn { return &peerConn{c: c, r: bufio.NewReaderSize(c, 64<<10)} }

// send writes one message (within timeout).
func (p *peerConn) send(m peerMsg, timeout time.Duration) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.c.SetWriteDeadline(time.Now().Add(timeout))
	_, err = p.c.Write(append(b, '\n'))
	return err
}

// errPeerTimeout: nothing arrived in time.
var errPeerTimeout = errors.New("timed out")

// recv reads one message of at most limit bytes within timeout.
func (p *peerConn) recv(timeout time.Duration, limit int) (peerMsg, error) {
	_ = p.c.SetReadDeadline(time.Now().Add(timeout))
	var line []byte
	for {
		chunk, err := p.r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > limit {
			return peerMsg{}, fmt.Errorf("a message longer than %d bytes", limit)
		}
		if err == nil {
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return peerMsg{}, fmt.Errorf("nothing for %v: %w", timeout, errPeerTimeout)
		}
		if errors.Is(err, io.EOF) {
			return peerMsg{}, errors.New("the connection closed")
		}
		return peerMsg{}, err
	}
	return decodePeerMsg(line)
}

// decodePeerMsg reads one message line (known fields only).
func decodePeerMsg(line []byte) (peerMsg, error) {
	var m peerMsg
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return peerMsg{}, fmt.Errorf("a malformed message: %w", err)
	}
	return m, nil
}

// newNonce is 32 random bytes, hex.
func newNonce() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// peerMAC is hex HMAC-SHA256(token, parts joined by NUL).
func peerMAC(token []byte, parts ...[]byte) string {
	m := hmac.New(sha256.New, token)
	for i, p := range parts {
		if i > 0 {
			m.Write([]byte{0})
		}
		m.Write(p)
	}
	return hex.EncodeToString(m.Sum(nil))
}

// macEqual compares two hex MACs in constant time.
func macEqual(a, b string) bool {
	x, err1 := hex.DecodeString(a)
	y, err2 := hex.DecodeString(b)
	return err1 == nil && err2 == nil && hmac.Equal(x, y)
}

// MinTokenLen is the shortest shared token rig accepts (bytes).
const MinTokenLen = 16
