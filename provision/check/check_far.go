package check

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"rig/bench"
	"rig/bench/peer"
	"rig/internal/labinfo"
	"rig/ovs"
	"rig/playbooks"
	"rig/provision"
)

// A through-ports check sends from the far end of its ingress port and
// receives at the far end of its egress port. Each far end is a netdev in
// a network namespace on this machine (far_end_netns, a lab's wire netns:
// rig's own dataplane runs there, one loop over both) or a port of
// another machine that `rig bench serve` runs: the x86 host across
// tmfifo_net0 (the default far end of a host-PF representor), the peer
// across the wire. Those rig asks to generate and to receive (one serve
// for both: a loop there, with latency; two: a generator on one and a
// receiver on the other), and it reads OvS's counters itself.

// farEnd is one port's far end as the check uses it.
type farEnd struct {
	playbooks.FarEnd
	Port   string // the bridge port whose far end this is
	Source string // where it came from, for the plan and errors
	// hostPF is the host PF number of a host-PF representor's default far
	// end (-1: none): its far port, which the Arm cannot name, is serve's
	// --allow-netdev of that PF (peer.HostPFIface).
	hostPF int
}

// where says where the far end is, in words.
func (f farEnd) where() string {
	if !f.Remote() {
		return fmt.Sprintf("netdev %s in netns %s", f.Netdev, f.NetNS)
	}
	return fmt.Sprintf("%s on the machine of rig bench serve %s", f.portWords(), f.Serve)
}

func (f farEnd) portWords() string {
	switch {
	case f.PCI != "":
		return "PCI function " + f.PCI
	case f.Netdev != "":
		return "netdev " + f.Netdev
	}
	return fmt.Sprintf("the host's PF%d netdev", f.hostPF)
}

// farPort is the far end's port as a far config names it: a vdev (af_packet
// on its netdev) and the port name, or a PCI function.
func (f farEnd) farPort(i int) (vdev, port string) {
	switch {
	case f.PCI != "":
		return "", f.PCI
	case f.Netdev == "" && f.hostPF >= 0:
		return afPacketVdev(i, peer.HostPFIface(f.hostPF)), fmt.Sprintf("net_af_packet%d", i)
	}
	return afPacketVdev(i, f.Netdev), fmt.Sprintf("net_af_packet%d", i)
}

// serveCommand is what to run on the far end's machine so that it answers.
func (f farEnd) serveCommand() string { return serveCommand(f) }

// serveCommand is what to run on the machine of ends (one serve) so that
// it answers for all of them.
func serveCommand(ends ...farEnd) string {
	cmd := fmt.Sprintf("rig bench serve --listen %s --token-file %s", ends[0].Serve, ends[0].TokenFileOrDefault())
	for _, f := range ends {
		switch {
		case f.PCI != "":
			cmd += " --allow-pci " + f.PCI
		case f.Netdev == "":
			cmd += fmt.Sprintf(" --allow-netdev <the host's PF%d netdev, e.g. ens1f%dnp%d>", f.hostPF, f.hostPF, f.hostPF)
		default:
			cmd += " --allow-netdev " + f.Netdev
		}
	}
	return cmd
}

// farEnds resolves both ports' far ends: check.far_ends (and --far-end),
// else far_end_netns, else the lab's wire netns, else a host-PF
// representor's default (the x86 host across tmfifo_net0). st is OvS's
// state (nil: not readable yet): a local far end's netdev defaults to the
// port's own netdev name.
func (s *checkStep) farEnds(st *ovs.State) ([2]farEnd, error) {
	var out [2]farEnd
	var lab *labinfo.Info
	labRead := false
	for i, port := range s.spec.Ports {
		f := farEnd{Port: port, hostPF: -1}
		if e, ok := s.spec.FarEnds[port]; ok {
			f.FarEnd, f.Source = e, "check.far_ends / --far-end"
			if n, hostPF := playbooks.HostPFRepresentor(port); hostPF && e.Remote() && e.Netdev == "" && e.PCI == "" {
				f.hostPF = n // serve's host PF N, as by default (playbooks validated the others)
			}
		} else if s.spec.FarEndNetNS != "" {
			f.NetNS, f.Source = s.spec.FarEndNetNS, "check.far_end_netns"
		} else {
			if !labRead {
				var err error
				if lab, err = labinfo.Read(s.env.Host.Root); err != nil {
					return out, err
				}
				labRead = true
			}
			n, hostPF := playbooks.HostPFRepresentor(port)
			switch {
			case lab != nil && lab.WireNetNS != "" && (lab.Machine == "" || !onHostOrPeer(port)):
				f.NetNS, f.Source = lab.WireNetNS, "the virtual lab's wire netns"
			case hostPF:
				f.Serve = fmt.Sprintf("%s:%d", playbooks.DefaultHostAddr, playbooks.DefaultServePort)
				f.hostPF, f.Source = n, "default: the x86 host across tmfifo_net0"
			default:
				return out, missingFarEnd(port)
			}
		}
		if !f.Remote() && f.Netdev == "" {
			args := ""
			if st != nil {
				if ifc, ok := st.Interface(port); ok {
					args = ifc.Devargs()
				}
			}
			f.Netdev = FarEndNetdev(port, args)
		}
		out[i] = f
	}
	if out[0].Remote() != out[1].Remote() || (!out[0].Remote() && out[0].NetNS != out[1].NetNS) {
		return out, &provision.Problem{Object: "check: far ends", Err: fmt.Errorf("port %s's far end is %s, port %s's is %s", out[0].Port, out[0].where(), out[1].Port, out[1].where()),
			CauseText: "rig runs both far ends of a through-ports check in one local namespace (one loop), or asks rig bench serve for each",
			FixText:   "put both far ends in one netns, or run rig bench serve where each is (`ip netns exec NS rig bench serve --listen ADDR:PORT --token-file F --allow-netdev NETDEV` for a namespace) and give --far-end PORT:serve=ADDR:PORT,netdev=NETDEV"}
	}
	return out, nil
}

// onHostOrPeer: in a lab of the three machines (labinfo.Machine set),
// the far end of a host-PF representor is on the lab's x86 host and an
// uplink's on its peer, not in the wire netns: as on a card, their serves
// are given (or defaulted) like any other machine's.
func onHostOrPeer(port string) bool {
	_, hostPF := playbooks.HostPFRepresentor(port)
	return hostPF || uplinkRe.MatchString(port)
}

var uplinkRe = regexp.MustCompile(`^p[0-9]$`)

// missingFarEnd: an uplink's far end is another machine rig cannot guess.
func missingFarEnd(port string) error {
	return &provision.Problem{Object: "check: port " + port, Err: errors.New("no far end: rig does not know where the other end of this port's cable is"),
		CauseText: "through-ports sends from the far end of its ingress port and receives at the far end of its egress port; an uplink's far end (a switch port, another server) must be given",
		FixText: fmt.Sprintf("on the far machine run `rig bench serve --listen ADDR:%d --token-file %s --allow-netdev NETDEV` (NETDEV: the port cabled to %s), then give rig --far-end %s:serve=ADDR:%d,netdev=NETDEV "+
			"(or check.far_ends.%s in a playbook of your own; far_end_netns for a namespace on this machine)", playbooks.DefaultServePort, playbooks.DefaultTokenFile, port, port, playbooks.DefaultServePort, port)}
}

// farTraffic runs one trial's traffic between far ends on rig bench serve:
// a loop on one serve (both far ends there: latency is measured, the
// stamps share a clock), else a receiver on the egress far end's serve
// and, once it runs, a generator on the ingress far end's. It is the
// check's Dataplane for such a path: the trial's config is the loop the
// local path would run; its ports become the far ends'.
type farTraffic struct {
	in, out  farEnd
	inPeer   *peer.Peer
	outPeer  *peer.Peer
	timeouts peer.PeerTimeouts
}

// newFarTraffic reads the far ends' token files and builds their peers.
func newFarTraffic(in, out farEnd, t peer.PeerTimeouts) (*farTraffic, error) {
	ft := &farTraffic{in: in, out: out, timeouts: t}
	for _, x := range []struct {
		f farEnd
		p **peer.Peer
	}{{in, &ft.inPeer}, {out, &ft.outPeer}} {
		tok, err := peer.ReadTokenFile(x.f.TokenFileOrDefault())
		if err != nil {
			return nil, &provision.Problem{Object: "check: far end of port " + x.f.Port, Err: fmt.Errorf("token file: %w", err),
				CauseText: "rig proves to the far machine's rig bench serve that it holds the token serve was started with",
				FixText: fmt.Sprintf("copy the token file serve uses to %s here (mode 0600), or name it: --far-end %s:%s,token_file=FILE; on the far machine: %s",
					x.f.TokenFileOrDefault(), x.f.Port, x.f.FarEnd.String(), x.f.serveCommand())}
		}
		*x.p = &peer.Peer{Addr: x.f.Serve, Token: tok, Timeouts: t}
	}
	return ft, nil
}

// sameServe: both far ends on one serve (one machine, one clock).
func (f *farTraffic) sameServe() bool { return f.in.Serve == f.out.Serve }

// reversed is the same far ends the other way round (direction: both).
func (f *farTraffic) reversed() *farTraffic {
	return &farTraffic{in: f.out, out: f.in, inPeer: f.outPeer, outPeer: f.inPeer, timeouts: f.timeouts}
}

// farBase is cfg as a far config: no local placement, hold or release
// (those are this machine's), no ports yet.
func farBase(cfg bench.Config) bench.Config {
	c := cfg
	c.VDevs, c.Ports, c.Lcores, c.Hold, c.Release, c.HoldReleasable, c.Settle, c.PortOrigins = nil, nil, "", 0, nil, false, 0, nil
	return c
}

// configs are the far configs of a trial: a loop on one serve (rx zero),
// else the generator and the receiver.
func (f *farTraffic) configs(cfg bench.Config) (gen, rx bench.Config) {
	base := farBase(cfg)
	if f.sameServe() {
		gen = base
		gen.Role = bench.RoleLoop
		for i, e := range []farEnd{f.in, f.out} {
			v, p := e.farPort(i)
			if v != "" {
				gen.VDevs = append(gen.VDevs, v)
			}
			gen.Ports = append(gen.Ports, p)
		}
		return gen, bench.Config{}
	}
	gen, rx = base, base
	gen.Role, rx.Role = bench.RoleGen, bench.RoleRx
	rx.Duration, rx.Count, rx.Rate, rx.DrainQuiet = 0, 0, "", 0 // the receiver runs until rig stops it
	for _, x := range []struct {
		c *bench.Config
		e farEnd
	}{{&gen, f.in}, {&rx, f.out}} {
		v, p := x.e.farPort(0)
		if v != "" {
			x.c.VDevs = []string{v}
		}
		x.c.Ports = []string{p}
	}
	return gen, rx
}

// Run runs one trial (the loop config cfg of the check) on the far ends.
func (f *farTraffic) Run(ctx context.Context, cfg bench.Config) (*bench.Result, error) {
	gen, rx := f.configs(cfg)
	if f.sameServe() {
		r, err := f.inPeer.RunToEnd(ctx, gen)
		if err != nil {
			return nil, fmt.Errorf("far ends on %s: %w", f.in.Serve, err)
		}
		return r, nil
	}
	var genErr error
	near, far, err := f.outPeer.Run(ctx, rx, func(ctx context.Context) (*bench.Result, error) {
		r, err := f.inPeer.RunToEnd(ctx, gen)
		if err != nil {
			genErr = fmt.Errorf("the generator at port %s's far end (%s): %w", f.in.Port, f.in.Serve, err)
		}
		return r, genErr
	})
	if genErr != nil {
		return nil, genErr
	}
	if err != nil {
		return nil, fmt.Errorf("the receiver at port %s's far end (%s): %w", f.out.Port, f.out.Serve, err)
	}
	r := peer.MergePeer(gen, near, far, f.out.Serve)
	r.Role = bench.RoleLoop
	r.Peer = nil // no near side here: a search must not read the receiver as a far forwarder
	for i, addr := range []string{f.in.Serve, f.out.Serve} {
		if i < len(r.Ports) {
			r.Ports[i].Host = addr // not near and far: both are far ends
		}
	}
	var warn []string
	for _, w := range r.Warnings {
		if !strings.HasPrefix(w, "no latency across hosts") {
			warn = append(warn, w)
		}
	}
	r.Warnings = append(warn, fmt.Sprintf("no latency: the far ends are on two machines (%s, %s) whose clocks differ; latency needs both far ends on one", f.in.Serve, f.out.Serve))
	return r, nil
}

// probe asks each far end's serve whether it would run this check's
// configs (cfg: a trial's loop config; both: the reverse too), nothing
// running: the address answers, the token matches, the far port is one
// serve allows. The first refusal, naming the far end and the command to
// run there.
func (f *farTraffic) probe(ctx context.Context, cfg bench.Config, both bool) error {
	type job struct {
		ends []farEnd // the far ends the config uses on that serve
		p    *peer.Peer
		cfg  bench.Config
	}
	var jobs []job
	for _, ft := range []*farTraffic{f, f.reversed()} {
		gen, rx := ft.configs(cfg)
		if gen.Duration <= 0 {
			gen.Duration = time.Second
		}
		if ft.sameServe() {
			jobs = append(jobs, job{[]farEnd{ft.in, ft.out}, ft.inPeer, gen})
			break // the way back is the same loop over the same ports
		}
		jobs = append(jobs, job{[]farEnd{ft.in}, ft.inPeer, gen}, job{[]farEnd{ft.out}, ft.outPeer, rx})
		if !both {
			break
		}
	}
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := j.p.Probe(ctx, j.cfg); err != nil {
				errs[i] = farEndProblem(j.ends, err)
			}
		}()
	}
	wg.Wait()
	return joinErrs(errs)
}

// farEndProblem is far ends (on one serve) that did not answer as the
// check needs.
func farEndProblem(ends []farEnd, err error) error {
	cause := "its rig bench serve does not answer, or refused"
	var pe *peer.PeerError
	if errors.As(err, &pe) {
		switch pe.Code {
		case peer.PeerCodeAuth:
			cause = "the token file differs from the one serve was started with (--token-file)"
		case peer.PeerCodeConfig:
			cause = "serve does not allow that port (--allow-netdev / --allow-pci), or refused the config"
		case peer.PeerCodeBusy:
			cause = "serve runs another caller's trial"
		}
	}
	obj := fmt.Sprintf("check: far end of port %s (%s, %s)", ends[0].Port, ends[0].where(), ends[0].Source)
	if len(ends) == 2 {
		obj = fmt.Sprintf("check: far ends of ports %s and %s (%s and %s on the machine of rig bench serve %s, %s)", ends[0].Port, ends[1].Port,
			ends[0].portWords(), ends[1].portWords(), ends[0].Serve, ends[0].Source)
	}
	return &provision.Problem{Object: obj, Err: err, CauseText: cause,
		FixText: "on that machine run: " + serveCommand(ends...) + " (the same token file on both machines; rig plan shows whether each far end answers)"}
}

// setupFar prepares a path whose far ends are on serves: their peers,
// then a probe of every far end before any traffic.
func (s *checkStep) setupFar(ctx context.Context, p *checkPath, ends [2]farEnd) error {
	ft, err := newFarTraffic(ends[0], ends[1], s.farTimeouts)
	if err != nil {
		return err
	}
	cfg := checkConfig(s.spec, pathPorts, nil, "", 0)
	cfg.FrameSize, cfg.Rate, cfg.Duration = s.spec.Sizes()[0], s.spec.Rate, s.spec.DurationOrDefault()
	if err := ft.probe(ctx, cfg, s.spec.DirectionOrDefault() == playbooks.DirectionBoth); err != nil {
		return err
	}
	p.far = ft
	for _, e := range ends {
		p.notes = append(p.notes, fmt.Sprintf("port %s: far end is %s (%s)", e.Port, e.where(), e.Source))
	}
	if ft.sameServe() {
		p.notes = append(p.notes, fmt.Sprintf("both far ends on %s: one loop there, latency measured on that machine's clock", ends[0].Serve))
	}
	return nil
}

// traffic is the dataplane that sends a path's trials: its far ends'
// serves, else rig's own dataplane in the path's netns.
func (s *checkStep) traffic(p *checkPath) Dataplane {
	if p.far != nil {
		return p.far
	}
	return s.dataplane(p.netns)
}

// planFarEnds is the plan's note per far end: where it is, and whether
// its serve answers (a probe: nothing runs). Not probed under --root.
func (s *checkStep) planFarEnds(ctx context.Context, st *ovs.State) []string {
	ends, err := s.farEnds(st)
	if err != nil {
		return []string{"check: far ends: " + provisionText(err)}
	}
	var notes []string
	for _, e := range ends {
		notes = append(notes, fmt.Sprintf("check: port %s's far end: %s (%s)", e.Port, e.where(), e.Source))
	}
	if !ends[0].Remote() {
		return notes
	}
	if !s.env.Host.IsRealRoot() {
		return append(notes, "check: far ends not probed under --root")
	}
	t := s.farTimeouts
	t.Dial, t.Handshake, t.Ready = min(orDur(t.Dial, planProbeWait), planProbeWait), min(orDur(t.Handshake, planProbeWait), planProbeWait), min(orDur(t.Ready, planProbeWait), planProbeWait)
	ft, err := newFarTraffic(ends[0], ends[1], t)
	if err == nil {
		cfg := checkConfig(s.spec, pathPorts, nil, "", 0)
		cfg.FrameSize, cfg.Rate, cfg.Duration = s.spec.Sizes()[0], s.spec.Rate, s.spec.DurationOrDefault()
		err = ft.probe(ctx, cfg, s.spec.DirectionOrDefault() == playbooks.DirectionBoth)
	}
	if err != nil {
		return append(notes, "check: far ends do not answer: "+provisionText(err))
	}
	return append(notes, "check: far ends answer (token and ports accepted by rig bench serve)")
}

// planProbeWait bounds each wait of the plan's probe of a far end.
const planProbeWait = 3 * time.Second

func orDur(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// provisionText is an error (its cause and fix included) on one line.
func provisionText(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }

// joinErrs is nil, the one error (its cause and fix stay readable), or
// all of them.
func joinErrs(errs []error) error {
	var out []error
	for _, e := range errs {
		if e != nil {
			out = append(out, e)
		}
	}
	if len(out) == 1 {
		return out[0]
	}
	return errors.Join(out...)
}

// runBack is direction: both's way back: the path turned round (in at
// the egress port, from its far end; out at the ingress port), its flow
// replaced, one run per frame size into res.Reverse. The teardown removes
// the flow by rig's cookie as for the way there.
func (s *checkStep) runBack(ctx context.Context, p *checkPath, lcores string, res *CheckResult) error {
	p.in, p.out, p.inOF, p.outOF = p.out, p.in, p.outOF, p.inOF
	p.ends[0], p.ends[1] = p.ends[1], p.ends[0]
	if p.far != nil {
		p.far = p.far.reversed()
	} else {
		p.vdevs = []string{afPacketVdev(0, p.ends[0].Netdev), afPacketVdev(1, p.ends[1].Netdev)}
	}
	if err := s.o.DelFlowsByCookie(ctx, s.bridge, CheckCookie); err != nil {
		return fmt.Errorf("check: bridge %s: remove flows with cookie %#x: %w", s.bridge, CheckCookie, err)
	}
	if err := s.addFlows(ctx, p); err != nil {
		return err
	}
	for _, size := range s.spec.Sizes() {
		run, err := s.measureSize(ctx, p, size, lcores)
		if run != nil {
			res.Reverse = append(res.Reverse, *run)
		}
		if err != nil {
			return fmt.Errorf("check: the way back (in %s, out %s): %w", p.in, p.out, err)
		}
	}
	return nil
}

// farDropRoles: far ends on rig bench serve are not rig's ports on this
// machine: their drops are the far host's port's (the role says whose).
func farDropRoles(p *checkPath, drops []PortDrop) {
	if p.far == nil {
		return
	}
	for i := range drops {
		switch drops[i].Role {
		case "rig's generator":
			drops[i].Role = fmt.Sprintf("the far host's generator port (%s, port %s's far end)", p.far.in.Serve, p.far.in.Port)
		case "rig's receiver":
			drops[i].Role = fmt.Sprintf("the far host's receiver port (%s, port %s's far end)", p.far.out.Serve, p.far.out.Port)
		}
	}
}

// FarEndReport is one port's far end in the check's result.
type FarEndReport struct {
	Port   string `json:"port"`
	NetNS  string `json:"netns,omitempty"`
	Serve  string `json:"serve,omitempty"` // HOST:PORT of rig bench serve
	Netdev string `json:"netdev,omitempty"`
	PCI    string `json:"pci,omitempty"`
	HostPF *int   `json:"hostPF,omitempty"` // the far host's PF N, named there by serve
	Source string `json:"source"`
}

// farEndReport is the path's far ends as reported (nil: through-bridge).
func (p *checkPath) farEndReport() []FarEndReport {
	if p.kind != pathPorts {
		return nil
	}
	var out []FarEndReport
	for _, e := range p.ends {
		r := FarEndReport{Port: e.Port, NetNS: e.NetNS, Serve: e.Serve, Netdev: e.Netdev, PCI: e.PCI, Source: e.Source}
		if e.Remote() && e.Netdev == "" && e.PCI == "" && e.hostPF >= 0 {
			n := e.hostPF
			r.HostPF = &n
		}
		out = append(out, r)
	}
	return out
}
