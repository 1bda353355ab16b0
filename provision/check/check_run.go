package check

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"rig/bench"
	"rig/internal/devargs"
	"rig/ovs"
	"rig/playbooks"
	"rig/provision"
	"rig/smartnic"
)

// checkPath is what a check sends through: the two bridge ports, their
// OpenFlow numbers, the dataplane's vdevs and where it runs, and what the
// check added (removed by teardown).
type checkPath struct {
	in, out     string
	kind        pathKind
	inOF, outOF int64
	vdevs       []string
	netns       string
	added       []string            // ports rig added
	settings    []ovs.IfaceSettings // of the added ports, to add them again (memif)
	closed      bool                // memif: the ports were deleted after a run (closeMemif)
	flows       bool                // flows with rig's cookie added
	notes       []string
	far         *farTraffic // far ends on rig bench serve (nil: rig's own dataplane in netns)
	ends        [2]farEnd   // through-ports: the far ends of in and out
}

// noLatency says why no latency can be measured on p ("": it can): its
// far ends on two machines' serves, a generator on one clock and a
// receiver on another.
func (p *checkPath) noLatency() string {
	if p == nil || p.far == nil || p.far.in.Serve == p.far.out.Serve {
		return ""
	}
	return fmt.Sprintf("no latency: the far ends are on two machines (%s, %s) whose clocks differ", p.far.in.Serve, p.far.out.Serve)
}

// pathKind is what the path's OvS ports are: how their counters behave.
type pathKind int

const (
	pathVhost pathKind = iota // rig-chk- dpdkvhostuserclient ports
	pathMemif                 // rig-chk- memif server vdevs
	pathPorts                 // the bridge's own ports (through-ports)
)

// portWait bounds how long a port the check adds may take to attach.
const portWait = 15 * time.Second

// Measure runs the check: set up the path, one run per frame size, tear
// down what it added (also when a run fails or rig is interrupted), and
// judge the figures. It returns the result also when the check fails.
func (s *checkStep) Measure(ctx context.Context) (any, error) {
	if !s.env.Host.IsRealRoot() {
		return nil, &provision.Problem{Object: "check", Err: errors.New("refused under --root: it adds ports and flows to a live OvS"), FixText: "run the check without --root"}
	}
	if s.dataplane == nil {
		return nil, &provision.Problem{Object: "check", Err: bench.ErrNoDataplane, FixText: "build rig with cgo and libdpdk-dev (make build)"}
	}
	sp := s.spec
	res := &CheckResult{SchemaVersion: CheckSchemaVersion, Topology: sp.TopologyOrDefault(), Bridge: s.bridge}
	if res.Topology == playbooks.TopologyThroughBridge {
		res.Transport = sp.TransportOrDefault()
	}
	path, err := s.setup(ctx)
	if path != nil {
		defer func() {
			tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			if terr := s.teardown(tctx, path); terr != nil && err == nil {
				err = terr
			}
		}()
	}
	if err != nil {
		return res, err
	}
	res.Ingress, res.Egress, res.NetNS, res.Notes = path.in, path.out, path.netns, path.notes
	res.FarEnds = path.farEndReport()
	lcores, note, err := s.lcores(ctx)
	if err != nil {
		return res, err
	}
	if note != "" {
		res.Notes = append(res.Notes, note)
	}
	res.Load = loadOf(sp, s.lab)
	s.progressf("check: load: %s", sp.DescribeLoad())
	if sp.IsSearch() {
		if err := s.measureSearch(ctx, path, lcores, res); err != nil {
			return res, err
		}
		if err := s.measureLatency(ctx, path, lcores, res); err != nil {
			return res, err
		}
		res.Offload = s.offload(ctx, path)
		return res, judgeSearch(res)
	}
	for _, size := range sp.Sizes() {
		s.progressf("check: %d B at %s: %v after %v warm-up", size, orElseStr(sp.Rate, "max"), sp.DurationOrDefault(), sp.WarmupOrDefault())
		run, rerr := s.measureSize(ctx, path, size, lcores)
		if run != nil {
			res.Runs = append(res.Runs, *run)
		}
		if rerr != nil {
			return res, rerr
		}
	}
	if err := s.measureLatency(ctx, path, lcores, res); err != nil {
		return res, err
	}
	if sp.DirectionOrDefault() == playbooks.DirectionBoth {
		if err := s.runBack(ctx, path, lcores, res); err != nil {
			return res, err
		}
	}
	res.Offload = s.offload(ctx, path) // the flows of the traffic just sent, before they expire
	err = judge(res)
	return res, err
}

func orElseStr(v, d string) string {
	if v == "" {
		return d
	}
	return v
}

// measureSize is one frame size's judged run: a fixed-rate run whose
// generator fell short is repeated once; its drops named, its load judged.
func (s *checkStep) measureSize(ctx context.Context, path *checkPath, size int, lcores string) (*CheckRun, error) {
	sp := s.spec
	run, rerr := s.runOne(ctx, path, size, lcores)
	if rerr == nil && generatorShort(run) {
		// a rate the generator did not reach is no run at that rate
		// (invalid); once, the run is repeated (a CPU that other work
		// took from rig's generator for more than 50 ms)
		s.progressf("check: %d B: %s; running it again once", size, run.Invalid)
		first := run.Invalid
		if run, rerr = s.runOne(ctx, path, size, lcores); run != nil {
			run.Warnings = append(run.Warnings, "the first run was invalid and is not counted: "+first)
		}
	}
	if run != nil {
		run.Drops = portDrops(run.OVS, run.Ports)
		farDropRoles(path, run.Drops)
		run.Loss.Verdict = dropsVerdict(run.Loss, run.Drops)
		judgeRunLoad(sp, run, path.noLatency())
		s.progressf("check: %d B: %.3f Mpps received, loss %.4g%% (budget %g%%)", size, run.RxMpps, run.LossPct, sp.LossBudgetPct())
	}
	return run, rerr
}

// judge sets Pass and returns why the check failed: an invalid
// measurement (failure), else the thresholds below their limits (exit 4).
func judge(res *CheckResult) error {
	res.Pass = true
	var invalid []string
	var below []ThresholdVerdict
	for _, runs := range []struct {
		list []CheckRun
		dir  string
	}{{res.Runs, ""}, {res.Reverse, ", back"}} {
		for i := range runs.list {
			r := &runs.list[i]
			r.Pass = r.Invalid == ""
			if r.Invalid != "" {
				invalid = append(invalid, fmt.Sprintf("%d B%s: %s", r.FrameSize, runs.dir, r.Invalid))
			}
			for _, t := range r.Thresholds {
				if !t.Pass {
					r.Pass = false
					t.Name = fmt.Sprintf("%s (%d B%s)", t.Name, r.FrameSize, runs.dir)
					below = append(below, t)
				}
			}
			res.Pass = res.Pass && r.Pass
		}
	}
	lb, li := latencyFailures(res)
	below, invalid = append(below, lb...), append(invalid, li...)
	if len(lb)+len(li) > 0 {
		res.Pass = false
	}
	if len(invalid) > 0 {
		return &InvalidMeasurementError{provision.Problem{Object: "check", Err: errors.New("invalid measurement: " + strings.Join(invalid, "; ")),
			CauseText: "the dataplane's figures cannot be right, so they are neither a pass nor a fail",
			FixText:   "see the run's warnings; rerun the check (rig check -p PLAYBOOK)"}}
	}
	if o := res.Offload; o != nil && !o.Pass {
		res.Pass = false
		below = append(below, offloadFailure(o))
	}
	if len(below) > 0 {
		return &BelowThresholdError{Failed: below, Offload: res.Offload}
	}
	return nil
}

// InvalidMeasurementError is a check whose figures cannot be right (exit
// code 5): never a pass, never a below-threshold.
type InvalidMeasurementError struct{ provision.Problem }

// InvalidMeasurement marks the error for the exit code.
func (e *InvalidMeasurementError) InvalidMeasurement() bool { return true }

// setup adds the path's ports (through-bridge) or finds them
// (through-ports), waits until they are attached, and adds the flows.
func (s *checkStep) setup(ctx context.Context) (*checkPath, error) {
	var p *checkPath
	var err error
	if s.spec.TopologyOrDefault() == playbooks.TopologyThroughPorts {
		p, err = s.setupPorts(ctx)
	} else {
		p, err = s.setupBridge(ctx)
	}
	if err != nil {
		return p, err
	}
	return p, s.addFlows(ctx, p)
}

// addFlows adds the flow in -> out (by the ports' OpenFlow numbers) with
// rig's cookie.
func (s *checkStep) addFlows(ctx context.Context, p *checkPath) error {
	p.flows = true // also after a partial add: the teardown removes by cookie
	if err := s.o.AddFlows(ctx, s.bridge, flowInOut(p.inOF, p.outOF)); err != nil {
		return fmt.Errorf("check: bridge %s: add flow %s -> %s: %w", s.bridge, p.in, p.out, err)
	}
	return nil
}

// addPorts adds rig-chk-in and rig-chk-out with p.settings, each recorded
// in p.added before its add (a half-added port is removed too).
func (s *checkStep) addPorts(ctx context.Context, p *checkPath) error {
	for i, port := range []string{p.in, p.out} {
		if !slices.Contains(p.added, port) {
			p.added = append(p.added, port)
		}
		if err := s.o.AddPort(ctx, s.bridge, port, p.settings[i]); err != nil {
			return fmt.Errorf("check: bridge %s: add port %s: %w", s.bridge, port, err)
		}
	}
	return nil
}

// sockDir is where the check's vhost-user and memif sockets live: the
// private instance's rundir, else /run/rig/check.
func (s *checkStep) sockDir() string {
	if s.env.OVSRunDir != "" {
		if d, err := filepath.Abs(s.env.OVSRunDir); err == nil {
			return filepath.Join(d, "rig-chk")
		}
	}
	return "/run/rig/check"
}

// setupBridge adds rig-chk-in and rig-chk-out to the bridge: vhost-user
// client ports whose server is rig's virtio_user (server=1), or memif
// server vdevs whose client is rig's memif.
func (s *checkStep) setupBridge(ctx context.Context) (*checkPath, error) {
	dir := s.sockDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("check: socket directory: %w", err)
	}
	p := &checkPath{in: CheckPortPrefix + "in", out: CheckPortPrefix + "out"}
	for i, port := range []string{p.in, p.out} {
		sock := filepath.Join(dir, strings.TrimPrefix(port, CheckPortPrefix)+".sock")
		if len(sock) > playbooks.MaxSocketPathLen {
			return p, &provision.Problem{Object: "check: socket " + sock, Err: errors.New("path longer than a unix socket path may be"), FixText: "use a shorter --rundir"}
		}
		_ = os.Remove(sock) // a killed check's socket; rig's side is the server
		set, vdev := ovs.IfaceSettings{Type: "dpdkvhostuserclient", VhostServerPath: sock},
			fmt.Sprintf("net_virtio_user%d,path=%s,server=1,queues=1", i, sock)
		if s.spec.TransportOrDefault() == playbooks.TransportMemif {
			set = ovs.IfaceSettings{Type: "dpdk", Devargs: fmt.Sprintf("net_memif_rigchk%d,role=server,id=0,socket=%s,socket-abstract=no", i, sock)}
			vdev = fmt.Sprintf("net_memif%d,role=client,id=0,socket=%s,socket-abstract=no", i, sock)
			p.kind = pathMemif
		}
		p.settings = append(p.settings, set)
		p.vdevs = append(p.vdevs, vdev)
	}
	if err := s.addPorts(ctx, p); err != nil {
		return p, err
	}
	var err error
	p.inOF, p.outOF, err = s.waitAttached(ctx, p.in, p.out)
	return p, err
}

// setupPorts finds the bridge's two ports, their OpenFlow numbers and
// their far ends: netdevs rig's af_packet ports open in a local netns, or
// ports of other machines that rig bench serve runs (check_far.go), every
// one of which must answer before any traffic.
func (s *checkStep) setupPorts(ctx context.Context) (*checkPath, error) {
	p := &checkPath{in: s.spec.Ports[0], out: s.spec.Ports[1], kind: pathPorts}
	var err error
	if p.inOF, p.outOF, err = s.waitAttached(ctx, p.in, p.out); err != nil {
		return p, err
	}
	st, err := s.o.ReadState(ctx)
	if err != nil {
		return p, err
	}
	ends, err := s.farEnds(st)
	if err != nil {
		return p, err
	}
	p.ends = ends
	if ends[0].Remote() {
		if err := s.setupFar(ctx, p, ends); err != nil {
			return p, err
		}
	} else {
		p.netns = ends[0].NetNS
		for i, e := range ends {
			p.vdevs = append(p.vdevs, afPacketVdev(i, e.Netdev))
			p.notes = append(p.notes, fmt.Sprintf("port %s: far end is netdev %s in netns %s", e.Port, e.Netdev, e.NetNS))
		}
	}
	return p, nil
}

// afPacketVdev is rig's port i on the far end netdev of a through-ports
// path.
func afPacketVdev(i int, netdev string) string {
	return fmt.Sprintf("net_af_packet%d,iface=%s,qpairs=1,framecnt=%d", i, netdev, smartnic.AFPacketRingFrames(2048))
}

// FarEndNetdev is the netdev at the far end of a port's cable: the same
// name as the port's own netdev, which is the iface= of its devargs (an
// af_packet port) or else the port's name (a lab's p0 is netdev p0).
func FarEndNetdev(port, args string) string {
	if v, ok := devargs.Lookup(args, "iface"); ok && v != "" {
		return v
	}
	return port
}

// waitAttached polls OvS until both ports have an ofport and no error;
// a port that fails names itself and OvS's error.
func (s *checkStep) waitAttached(ctx context.Context, ports ...string) (int64, int64, error) {
	now, sleep := s.env.NowFunc(), s.env.SleepFunc()
	deadline := now().Add(portWait)
	for {
		st, err := s.o.ReadState(ctx)
		if err != nil {
			return 0, 0, err
		}
		var of []int64
		var waiting error
		for _, port := range ports {
			ifc, ok := st.Interface(port)
			switch {
			case !ok:
				waiting = fmt.Errorf("check: port %s: not in OvS's database", port)
			case ifc.Error != "":
				return 0, 0, &provision.Problem{Object: "check: port " + port, Err: fmt.Errorf("OvS: %s", ifc.Error),
					FixText: "see the port's error and ovs-vswitchd's log (rig ovs status)"}
			case ifc.OFPort <= 0:
				waiting = fmt.Errorf("check: port %s: no ofport after %v (ofport %d)", port, portWait, ifc.OFPort)
			default:
				of = append(of, ifc.OFPort)
			}
		}
		if waiting == nil {
			return of[0], of[1], nil
		}
		if !now().Before(deadline) || ctx.Err() != nil {
			return 0, 0, waiting
		}
		sleep(200 * time.Millisecond)
	}
}

// teardown removes exactly what setup added: the flows by rig's cookie,
// the ports by name.
func (s *checkStep) teardown(ctx context.Context, p *checkPath) error {
	var errs []error
	if p.flows {
		if err := s.o.DelFlowsByCookie(ctx, s.bridge, CheckCookie); err != nil {
			errs = append(errs, fmt.Errorf("check: bridge %s: remove flows with cookie %#x: %w", s.bridge, CheckCookie, err))
		}
	}
	for _, port := range p.added {
		// after closeMemif the ports are gone (an error is expected)
		if err := s.o.DeletePort(ctx, s.bridge, port); err != nil && !p.closed {
			errs = append(errs, fmt.Errorf("check: bridge %s: remove port %s: %w", s.bridge, port, err))
		}
	}
	return errors.Join(errs...)
}
