package peer

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
	"strconv"
	"sync"
	"time"

	"rig/bench"
	"rig/bench/child"
)

// PeerProtocol is the version of the two-host protocol (rig bench serve
// and --peer): newline-delimited JSON messages over TCP. Both sides must
// speak the same version.
//
//	far (serve)                       near (--peer)
//	hello {version, nonce}      →
//	                            ←     start {version, config, clientNonce, mac}
//	                                  (or error {code, error}: auth, version, protocol)
//	--- from here on every message is sealed: {seq, body, mac} ---
//	ready                       →     (or error {code, error}: config, busy, run)
//	alive (each second)         ↔     alive (each second)
//	                            ←     stop  (the near run ended)
//	result {result}             →     (or error: the far run failed)
//
// A probe (rig plan, the check's preflight) is a start of type "probe":
// the same MAC (over its own type), the far config checked as a start's,
// then one sealed "probed" (or the error a start would get) and the end
// of the connection; nothing runs. A far run of role gen or loop with a
// duration ends by itself: its result comes without a stop.
//
// mac (start) is HMAC-SHA256, keyed by the shared token, over the
// version, the server's nonce, the client's nonce and the exact config
// bytes: the caller proves it holds the token without sending it, and a
// recorded start cannot be replayed (the server's nonce is new each
// connection). Both sides then derive a session key, HMAC-SHA256(token,
// "rig.bench.peer/v2 session" ‖ serverNonce ‖ clientNonce), and every
// later message is sealed: body is the message, seq counts each
// direction's messages from 1, and mac is HMAC-SHA256(session key,
// direction ("far" or "near") ‖ seq ‖ body). A receiver ends the session
// on a wrong mac (the path altered the message, or the peer does not
// hold the token: a far side proves it holds it with its first sealed
// message) and on a seq that is not the next one (replayed, dropped or
// reordered on the path). Nothing is encrypted: run serve on a
// management network.
const PeerProtocol = "rig.bench.peer/v2"

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
	peerProbe  = "probe"  // a start that runs nothing: the config is checked, "probed" answers
	peerProbed = "probed" // the answer to a probe: the token and the config are accepted
	peerReady  = "ready"
	peerAlive  = "alive"
	peerStop   = "stop"
	peerResult = "result"
	peerError  = "error"
)

// peerMsg is one protocol message.
type peerMsg struct {
	Type        string              `json:"type"`
	Version     string              `json:"version,omitempty"`
	Nonce       string              `json:"nonce,omitempty"`
	ClientNonce string              `json:"clientNonce,omitempty"`
	Config      json.RawMessage     `json:"config,omitempty"`
	MAC         string              `json:"mac,omitempty"`
	Result      *bench.Result       `json:"result,omitempty"`
	Code        string              `json:"code,omitempty"`
	Error       *child.RunJSONError `json:"error,omitempty"`
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
// seconds on a loaded host; the far child gets child.DefaultChildGrace to stop.
func DefaultPeerTimeouts() PeerTimeouts {
	return PeerTimeouts{Dial: 10 * time.Second, Handshake: 10 * time.Second, Ready: 90 * time.Second, Idle: 10 * time.Second,
		Alive: time.Second, Result: child.DefaultChildGrace + 20*time.Second, Drain: 500 * time.Millisecond}
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
// read under a deadline and a size limit. Once sess is set (after the
// start message) every message is sealed (peerSealed).
type peerConn struct {
	c    net.Conn
	r    *bufio.Reader
	mu   sync.Mutex // send: the write and sess.sendSeq
	sess *peerSession
}

func newPeerConn(c net.Conn) *peerConn { return &peerConn{c: c, r: bufio.NewReaderSize(c, 64<<10)} }

// peerSealed is a message after the handshake: the message (body), its
// direction's sequence number and their MAC under the session key.
type peerSealed struct {
	Seq  uint64          `json:"seq"`
	Body json.RawMessage `json:"body"`
	MAC  string          `json:"mac"`
}

// The two directions, as the MAC of a sealed message names its sender.
const (
	sideFar  = "far"
	sideNear = "near"
)

// peerSession is one connection's session key and sequence numbers.
type peerSession struct {
	key      []byte
	self     string // sideFar or sideNear: the direction this side sends
	peer     string
	sendSeq  uint64 // under peerConn.mu
	recvSeq  uint64 // the reader's alone
	received int    // sealed messages received (for errors)
}

// newPeerSession derives the session key from the token and both nonces.
func newPeerSession(token []byte, serverNonce, clientNonce, self string) *peerSession {
	key := hmacParts(token, []byte(PeerProtocol+" session"), []byte(serverNonce), []byte(clientNonce))
	peer := sideFar
	if self == sideFar {
		peer = sideNear
	}
	return &peerSession{key: key, self: self, peer: peer}
}

// sealMAC is the MAC of a sealed message from side.
func (s *peerSession) sealMAC(side string, seq uint64, body []byte) string {
	return peerMAC(s.key, []byte(side), []byte(strconv.FormatUint(seq, 10)), body)
}

// PeerAuthError is a sealed message the receiver rejected: altered on
// the path, from a peer without the token, replayed, dropped or
// reordered. The session ends.
type PeerAuthError struct {
	From string // "far" or "near": the side the message claims to come from
	N    uint64 // its seq (0: not a sealed message)
	Want uint64 // the seq expected
	Why  string
}

func (e *PeerAuthError) Error() string {
	switch {
	case e.Why == "mac":
		return fmt.Sprintf("message %d from the %s side failed authentication: the path altered it, or the peer does not hold the token", e.N, e.From)
	case e.Why == "seq":
		return fmt.Sprintf("message %d from the %s side is out of sequence (want %d): replayed, dropped or reordered on the path", e.N, e.From, e.Want)
	}
	return fmt.Sprintf("message %d from the %s side is not authenticated (%s): forged or altered on the path", e.Want, e.From, e.Why)
}

// send writes one message (within timeout), sealed once the session is set.
func (p *peerConn) send(m peerMsg, timeout time.Duration) error {
	return p.sendBy(m, time.Now().Add(timeout))
}

// sendBy writes one message before deadline.
func (p *peerConn) sendBy(m peerMsg, deadline time.Time) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.sess; s != nil {
		s.sendSeq++
		b, err = json.Marshal(peerSealed{Seq: s.sendSeq, Body: b, MAC: s.sealMAC(s.self, s.sendSeq, b)})
		if err != nil {
			return err
		}
	}
	_ = p.c.SetWriteDeadline(deadline)
	_, err = p.c.Write(append(b, '\n'))
	return err
}

// errPeerTimeout: nothing arrived in time.
var errPeerTimeout = errors.New("timed out")

// recv reads one message of at most limit bytes within timeout; once the
// session is set, only a sealed message with the next seq and a good MAC.
func (p *peerConn) recv(timeout time.Duration, limit int) (peerMsg, error) {
	line, err := p.readLine(time.Now().Add(timeout), timeout, limit)
	if err != nil {
		return peerMsg{}, err
	}
	if p.sess == nil {
		return decodePeerMsg(line)
	}
	return p.open(line)
}

// recvBy reads one plain message before deadline (the handshake); budget
// is the time the deadline allowed from its start (the accept), which a
// timeout names: not what was left when this read began.
func (p *peerConn) recvBy(deadline time.Time, budget time.Duration, limit int) (peerMsg, error) {
	line, err := p.readLine(deadline, budget, limit)
	if err != nil {
		return peerMsg{}, err
	}
	return decodePeerMsg(line)
}

// recvAfterStart is the near side's read of the answer to start: sealed
// (ready, or a refusal after authentication), or a plain refusal the far
// side sends before it (auth, version, protocol: it cannot seal those).
func (p *peerConn) recvAfterStart(timeout time.Duration, limit int) (m peerMsg, sealed bool, err error) {
	line, err := p.readLine(time.Now().Add(timeout), timeout, limit)
	if err != nil {
		return peerMsg{}, false, err
	}
	if m, err := decodePeerMsg(line); err == nil {
		if m.Type == peerError && (m.Code == PeerCodeAuth || m.Code == PeerCodeVersion || m.Code == PeerCodeProtocol) {
			return m, false, nil
		}
		return peerMsg{}, false, &PeerAuthError{From: p.sess.peer, Want: p.sess.recvSeq + 1, Why: fmt.Sprintf("a plain %q message", m.Type)}
	}
	m, err = p.open(line)
	return m, true, err
}

// open checks and unwraps a sealed message.
func (p *peerConn) open(line []byte) (peerMsg, error) {
	s := p.sess
	var sm peerSealed
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sm); err != nil || sm.Seq == 0 || len(sm.Body) == 0 {
		return peerMsg{}, &PeerAuthError{From: s.peer, Want: s.recvSeq + 1, Why: "not a sealed message"}
	}
	if !macEqual(sm.MAC, s.sealMAC(s.peer, sm.Seq, sm.Body)) {
		return peerMsg{}, &PeerAuthError{From: s.peer, N: sm.Seq, Want: s.recvSeq + 1, Why: "mac"}
	}
	if sm.Seq != s.recvSeq+1 {
		return peerMsg{}, &PeerAuthError{From: s.peer, N: sm.Seq, Want: s.recvSeq + 1, Why: "seq"}
	}
	s.recvSeq = sm.Seq
	m, err := decodePeerMsg(sm.Body)
	if err != nil {
		return peerMsg{}, err
	}
	if m.Type == peerHello || m.Type == peerStart || m.Type == peerProbe {
		return peerMsg{}, fmt.Errorf("a %q message inside the session", m.Type)
	}
	return m, nil
}

// readLine reads one line of at most limit bytes before deadline (wait
// is how long that was, for the error).
func (p *peerConn) readLine(deadline time.Time, wait time.Duration, limit int) ([]byte, error) {
	_ = p.c.SetReadDeadline(deadline)
	var line []byte
	for {
		chunk, err := p.r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > limit {
			return nil, fmt.Errorf("a message longer than %d bytes", limit)
		}
		if err == nil {
			return line, nil
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, fmt.Errorf("nothing for %v: %w", wait.Round(time.Millisecond), errPeerTimeout)
		}
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the connection closed")
		}
		return nil, err
	}
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

// startMAC is the start message's MAC: version, both nonces and the
// exact config bytes under the token.
func startMAC(token []byte, version, serverNonce, clientNonce string, config []byte) string {
	return startMACOf(peerStart, token, version, serverNonce, clientNonce, config)
}

// startMACOf is the MAC of a start (typ peerStart) or a probe (peerProbe):
// the type is under the MAC, so a probe cannot be turned into a run.
func startMACOf(typ string, token []byte, version, serverNonce, clientNonce string, config []byte) string {
	return peerMAC(token, []byte(typ), []byte(version), []byte(serverNonce), []byte(clientNonce), config)
}

// newNonce is 32 random bytes, hex.
func newNonce() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// validNonce: 32 bytes, hex (newNonce's form).
func validNonce(n string) bool {
	b, err := hex.DecodeString(n)
	return err == nil && len(b) == 32
}

// peerMAC is hex HMAC-SHA256(token, parts joined by NUL).
func peerMAC(token []byte, parts ...[]byte) string {
	return hex.EncodeToString(hmacParts(token, parts...))
}

// hmacParts is HMAC-SHA256(key, parts joined by NUL).
func hmacParts(key []byte, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, key)
	for i, p := range parts {
		if i > 0 {
			m.Write([]byte{0})
		}
		m.Write(p)
	}
	return m.Sum(nil)
}

// macEqual compares two hex MACs in constant time.
func macEqual(a, b string) bool {
	x, err1 := hex.DecodeString(a)
	y, err2 := hex.DecodeString(b)
	return err1 == nil && err2 == nil && hmac.Equal(x, y)
}

// MinTokenLen is the shortest shared token rig accepts (bytes).
const MinTokenLen = 16
