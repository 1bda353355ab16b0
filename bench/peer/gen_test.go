package peer

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"rig/bench"
)

// endingFar is a far generator: ready at once, sends for its config's
// duration and ends by itself (or dies after dieAfter).
type endingFar struct {
	sent     uint64
	dieAfter time.Duration
}

func (f *endingFar) run(ctx context.Context, cfg bench.Config, ready func()) (*bench.Result, error) {
	ready()
	d := cfg.Duration
	if f.dieAfter > 0 {
		d = f.dieAfter
	}
	select {
	case <-time.After(d):
	case <-ctx.Done():
		return &bench.Result{Role: cfg.Role, Interrupted: true, Sent: f.sent / 2}, nil
	}
	if f.dieAfter > 0 {
		return nil, bench.NewError("port net_af_packet0", errors.New("the PMD aborted"), "", "see the log")
	}
	return &bench.Result{SchemaVersion: bench.SchemaVersion, Role: cfg.Role, DurationS: d.Seconds(), Sent: f.sent,
		Ports: []bench.PortStats{{Name: "net_af_packet0", Driver: "net_af_packet", TxPkts: f.sent}}}, nil
}

// A probe checks the token and the far config and runs nothing; a far
// generator runs to its end and its result comes back without a stop.
func TestPeerProbeAndRunToEnd(t *testing.T) {
	far := &endingFar{sent: 5000}
	log := &syncBuf{}
	srv := &Server{Token: []byte(testToken), Run: far.run, Log: log, Timeouts: fastPeer, Policy: testPolicy}
	gen := bench.Config{Role: bench.RoleGen, VDevs: []string{"net_af_packet0,iface=dpa"}, NoHuge: true, Duration: 100 * time.Millisecond}
	if err := pipePeer(t, srv, testToken).Probe(context.Background(), gen); err != nil {
		t.Fatalf("probe: %v", err)
	}
	if !strings.Contains(log.String(), "probe: token and config accepted (gen on net_af_packet0); nothing run") || strings.Contains(log.String(), "running gen") {
		t.Errorf("serve log after a probe:\n%s", log)
	}
	var pe *PeerError
	if err := pipePeer(t, srv, "not-the-token-at-all").Probe(context.Background(), gen); !errors.As(err, &pe) || pe.Code != PeerCodeAuth {
		t.Errorf("probe with a wrong token: %v", err)
	}
	bad := gen
	bad.VDevs = []string{"net_af_packet0,iface=eth9"}
	if err := pipePeer(t, srv, testToken).Probe(context.Background(), bad); !errors.As(err, &pe) || pe.Code != PeerCodeConfig || !strings.Contains(err.Error(), "--allow-netdev") {
		t.Errorf("probe of a netdev serve does not allow: %v", err)
	}
	r, err := pipePeer(t, srv, testToken).RunToEnd(context.Background(), gen)
	if err != nil || r.Sent != 5000 || r.Role != bench.RoleGen || r.Interrupted {
		t.Fatalf("run to end: %+v %v", r, err)
	}
	if _, err := pipePeer(t, srv, testToken).RunToEnd(context.Background(), bench.Config{Role: bench.RoleGen, VDevs: gen.VDevs, NoHuge: true}); err == nil || !strings.Contains(err.Error(), "would not end by itself") {
		t.Errorf("a far generator without a duration: %v", err)
	}
	// the far run dies mid-run: its cause, naming the peer
	srv.Run = (&endingFar{dieAfter: 30 * time.Millisecond}).run
	if _, err := pipePeer(t, srv, testToken).RunToEnd(context.Background(), gen); !errors.As(err, &pe) || pe.Code != PeerCodeRun || !strings.Contains(err.Error(), "the PMD aborted") {
		t.Errorf("far run died: %v", err)
	}
	// cancelled: the far run is stopped and its partial result returned
	srv.Run = far.run
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	long := gen
	long.Duration = time.Minute
	if r, err := pipePeer(t, srv, testToken).RunToEnd(ctx, long); err != nil || !r.Interrupted {
		t.Errorf("cancelled: %+v %v", r, err)
	}
	if strings.Contains(log.String(), testToken) {
		t.Error("the token is in serve's log")
	}
}

// A near side on the Arm names the host's PF N as iface=hostpf:N; serve
// puts in the netdev it found for that PF among its allowed ones, and
// refuses a PF it knows none for.
func TestFarConfigHostPF(t *testing.T) {
	pol := &FarPolicy{Netdevs: []string{"ens1f0np0"}, HostPFs: map[int]string{0: "ens1f0np0"}}
	raw := func(iface string) []byte {
		b, _ := json.Marshal(bench.Config{Role: bench.RoleRx, VDevs: []string{"net_af_packet0,iface=" + iface + ",qpairs=1"}, NoHuge: true})
		return b
	}
	cfg, err := checkFarConfig(raw(HostPFIface(0)), pol)
	if err != nil || cfg.VDevs[0] != "net_af_packet0,iface=ens1f0np0,qpairs=1" {
		t.Fatalf("host PF 0: %v %q", err, cfg.VDevs)
	}
	if _, err := checkFarConfig(raw(HostPFIface(1)), pol); err == nil || !strings.Contains(err.Error(), "serve knows no host PF 1") || !strings.Contains(bench.ErrorWithFix(err), "--host-pf 1=NETDEV") {
		t.Errorf("host PF 1: %v", err)
	}
}
