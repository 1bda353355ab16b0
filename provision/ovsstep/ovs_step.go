// Package ovsstep holds the ovs step: OvS-DPDK's other_config, its netdev
// bridges and DPDK ports, verified attached, and their undo for rig down.
package ovsstep

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"

	"rig/internal/cpuset"
	"rig/internal/devargs"
	"rig/internal/host"
	"rig/internal/labinfo"
	"rig/ovs"
	"rig/ovs/diagnose"
	"rig/playbooks"
	"rig/provision"
	"rig/smartnic"
)

// ovsStep applies the `ovs` section: DPDK other_config (restarting
// ovs-vswitchd when it changes), netdev bridges and their DPDK ports. Its
// check fails, naming the port and the likely cause, when a port that
// needs no change is not attached (ovs-vsctl exits 0 when a port fails).
type ovsStep struct {
	h    *host.Host
	spec *playbooks.OVSSpec
	c    *ovs.Client
	// restarted is set once Apply restarted ovs-vswitchd in this run, so
	// the re-check reports a DPDK init failure instead of asking for
	// another restart.
	restarted bool
	// applied names the writes this apply made so far (reset by Check)
	applied []string
	// fixture is --root when it names a fixture and no instance was given
	// (--rundir, --db): the system OvS is this machine's, not the
	// fixture's, so the step plans against an empty database and refuses
	// every write.
	fixture string
	state   provision.StateStore // rig's state file (what the ovs step changed)
}

// NewOVSStep builds the step. rundir (a private instance from `rig ovs
// daemon start`) or db (an ovsdb remote) select the instance; both empty
// means the system one, restarted through systemd.
func NewOVSStep(env *provision.Env, spec *playbooks.OVSSpec) (provision.Step, error) {
	h := env.Host
	s := &ovsStep{h: h, spec: spec, c: ovs.NewClient(h, ovs.TargetFor(h, env.OVSRunDir, env.OVSDB)), state: env.State()}
	if env.FixtureRoot != "" && env.OVSRunDir == "" && env.OVSDB == "" {
		s.fixture = env.FixtureRoot
	}
	return s, nil
}

func (s *ovsStep) Name() string { return "ovs" }

// Needs implements needer: ovs-vswitchd with DPDK takes its memory from
// hugepages, so a playbook's hugepages step must not be skipped.
func (s *ovsStep) Needs() []provision.Need {
	return []provision.Need{{Step: "hugepages", Why: "OvS-DPDK allocates its memory from the hugepages that step reserves and mounts"}}
}

// ovsAction is one planned write before the ops are put in phase order.
type ovsAction struct {
	phase   int // order of execution
	changes []provision.Change
	do      func(ctx context.Context) error
}

// op makes the action a plan op whose errors name the object and action
// (the last change's: the write that covers them all). An
// ovs.VswitchdDiedError keeps its cause and fix through the wrap.
func (s *ovsStep) op(a ovsAction) provision.Op {
	c := a.changes[len(a.changes)-1]
	do := func(ctx context.Context) error {
		if err := a.do(ctx); err != nil {
			return s.opFailed(c.Object, c.Action, err)
		}
		for _, ch := range a.changes {
			s.applied = append(s.applied, ch.Object+": "+ch.Action)
		}
		if a.phase == phaseRestart {
			s.restarted = true
		}
		return nil
	}
	return provision.Op{Changes: a.changes, Do: do}
}

// Phases order the writes: config and restart before bridges, ports
// deleted before they are added elsewhere, bridges deleted last.
const (
	phaseConfig = iota
	phaseRestart
	phaseBridge
	phasePortDel
	phasePortAdd
	phaseBridgeDel
)

func (s *ovsStep) Check(ctx context.Context) (provision.Plan, error) {
	s.applied = nil
	return s.diff(ctx)
}

func (s *ovsStep) unreachable(err error) error {
	// the same cause and fix `rig ovs status` gives
	d := diagnose.DiagnoseReadError(s.c, err)
	return &provision.Problem{Object: "ovs", Err: err, CauseText: d.Cause, FixText: d.Fix}
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func diagProblem(d ovs.Diagnosis) *provision.Problem {
	msg := d.Error
	if len(d.Evidence) > 0 {
		msg += " [vswitchd log: " + strings.Join(d.Evidence, " | ") + "]"
	}
	return &provision.Problem{Object: d.Object, Err: errors.New(msg), CauseText: d.Cause, FixText: d.Fix}
}

// ovsDiff collects one check's planned writes.
type ovsDiff struct {
	st           *ovs.State
	acts         []ovsAction
	restart      string            // why ovs-vswitchd restarts ("" = it does not)
	changedPorts map[string]bool   // ports with a planned write
	devargs      map[string]string // port -> devargs (given, or resolved from its netdev)
}

func (d *ovsDiff) add(phase int, do func(ctx context.Context) error, changes ...provision.Change) {
	d.acts = append(d.acts, ovsAction{phase: phase, changes: changes, do: do})
}

// diff compares the playbook with OvS and returns the plan (ops in phase
// order) or an explained error.
func (s *ovsStep) diff(ctx context.Context) (provision.Plan, error) {
	var plan provision.Plan
	if err := s.checkCPUMasks(&plan); err != nil {
		return plan, err
	}
	devargs, err := s.resolvePorts(&plan)
	if err != nil {
		return plan, err
	}
	st, resume, err := s.readState(ctx, &plan)
	if err != nil {
		return plan, err
	}
	if err := s.checkDOCA(st, &plan); err != nil {
		return plan, err
	}
	if err := s.checkByNames(&plan); err != nil {
		return plan, err
	}
	d := &ovsDiff{st: st, changedPorts: map[string]bool{}, devargs: devargs}
	if err := s.planConfig(ctx, d, resume); err != nil {
		return plan, err
	}
	s.planBridges(d)
	if s.spec.Prune {
		s.planPrune(d)
	}
	sort.SliceStable(d.acts, func(i, j int) bool { return d.acts[i].phase < d.acts[j].phase })
	for _, a := range d.acts {
		op := s.op(a)
		if s.fixture != "" {
			op.Refused = s.refuseFixture(a.changes[len(a.changes)-1])
		}
		plan.Ops = append(plan.Ops, op)
	}
	if err := s.checkAttached(ctx, d, &plan); err != nil {
		return plan, err
	}
	if plan.Satisfied() && s.fixture == "" {
		n := 0
		for _, b := range s.spec.Bridges {
			n += len(b.Ports)
		}
		plan.Notes = append(plan.Notes, fmt.Sprintf("ovs: dpdk_initialized=%v (%s), %d bridge(s), %d port(s) attached", st.DPDKInitialized, st.DPDKVersion, len(s.spec.Bridges), n))
	}
	return plan, nil
}

// readState reads OvS and whether ovs-vswitchd is down because rig was
// interrupted restarting it (resume says so). Under a fixture root with no
// instance given it reads nothing: the state is an empty database.
func (s *ovsStep) readState(ctx context.Context, plan *provision.Plan) (*ovs.State, string, error) {
	if s.fixture != "" {
		plan.Notes = append(plan.Notes, "ovs: --root "+s.fixture+" is a fixture, and the system Open vSwitch is this machine's, not the fixture's: "+
			"planned against an empty database; apply refuses (give --rundir or --db to plan and apply against an instance)")
		return &ovs.State{OtherConfig: map[string]string{}}, "", nil
	}
	st, err := s.c.ReadState(ctx)
	if err != nil {
		return nil, "", s.unreachable(err)
	}
	ps := s.c.VswitchdStatus()
	if ps.Alive {
		return st, "", nil
	}
	marker, ok := s.c.InterruptedRestart()
	if !ok {
		return nil, "", diagProblem(s.c.VswitchdDown(ps, st))
	}
	// rig itself stopped it and was interrupted before starting it
	// again: finish that restart rather than ask for a manual start
	return st, "ovs-vswitchd is down because an earlier rig run stopped it to restart it and was interrupted (" + marker + "); starting it finishes that restart", nil
}

// refuseFixture is the refusal of a write under a fixture root.
func (s *ovsStep) refuseFixture(c provision.Change) error {
	return provision.RefuseLiveWrite(c.Object, s.fixture, "write ("+c.Action+") would reach this machine's Open vSwitch",
		"or give --rundir DIR (a private instance from `rig ovs daemon start`) or --db to apply against that instance")
}

// resolvePorts returns every port's devargs: given, or resolved from its
// netdev (smartnic.ResolveNetdev: mlx5 devargs from sysfs, or the af_packet
// vdev a virtual lab puts in their place, which goes into the plan's
// notes and substitutions). Two ports on one device are refused.
func (s *ovsStep) resolvePorts(plan *provision.Plan) (map[string]string, error) {
	root := s.h.Root
	if root == "" {
		root = "/"
	}
	var lab *labinfo.Info
	out, owner := map[string]string{}, map[string]string{}
	for _, b := range s.spec.Bridges {
		for _, p := range b.Ports {
			d := p.Devargs
			if p.ByNetdevName() {
				continue // OVS-DOCA resolves it (checkByNames)
			}
			if p.Netdev != "" {
				if lab == nil {
					var err error
					if lab, err = labinfo.Read(root); err != nil {
						return nil, &provision.Problem{Object: "ovs port " + p.Name, Err: err, FixText: "recreate the lab: `rig lab down NAME`, `rig lab up KIND --name NAME`"}
					}
				}
				np, err := smartnic.ResolveNetdev(s.h, lab, smartnic.NetdevRequest{Netdev: p.Netdev, MLX5Args: p.MLX5Args, NRxq: p.NRxq, MTU: p.MTURequest})
				var ne *smartnic.NetdevError
				if errors.As(err, &ne) {
					return nil, &provision.Problem{Object: "ovs port " + p.Name, Err: err, CauseText: "sysfs shows " + ne.Cause(), FixText: ne.Fix()}
				} else if err != nil {
					return nil, fmt.Errorf("ovs port %s: %w", p.Name, err)
				}
				d = np.Devargs
				plan.Notes = append(plan.Notes, np.String())
				if np.Substituted {
					plan.Substitutions = append(plan.Substitutions, provision.Substitution{Object: "ovs port " + p.Name, Netdev: p.Netdev,
						Hardware: np.Hardware, Substitute: np.Devargs, Reason: np.Reason, Text: np.String()})
				}
			}
			if d == "" {
				continue
			}
			// a vdev's name is its identity in DPDK (a PCI function may
			// back several ports: the uplink and its representors)
			key := d
			if name := devargs.Device(d); !isPCI(name) {
				key = name
			}
			if other, dup := owner[key]; dup {
				return nil, &provision.Problem{Object: "ovs port " + p.Name, Err: fmt.Errorf("devargs %s name the device of port %s too", d, other),
					FixText: "one device cannot back two ports: name another netdev or devargs for one of them"}
			}
			owner[key], out[p.Name] = p.Name, d
		}
	}
	return out, nil
}

// planConfig plans the DPDK other_config keys (one write for all) and the
// ovs-vswitchd restart that makes them live (read only at start).
func (s *ovsStep) planConfig(ctx context.Context, d *ovsDiff, resume string) error {
	st := d.st
	want := s.spec.Config.OtherConfig()
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	kv := map[string]string{}
	before := map[string]*string{}
	var changes []provision.Change
	for _, k := range keys {
		if cur, ok := st.OtherConfig[k]; !ok || cur != want[k] {
			kv[k] = want[k]
			if ok {
				before[k] = &cur
			} else {
				before[k] = nil
			}
			changes = append(changes, provision.Change{Object: "ovs other_config", Action: "set " + k, From: cur, To: want[k]})
		}
	}
	relied, relyChanges, err := s.reliedKeys(st.OtherConfig, keys, kv)
	if err != nil {
		return err
	}
	if len(kv) > 0 {
		maps.Copy(before, relied)
		d.add(phaseConfig, func(ctx context.Context) error {
			if err := s.record(func(r *provision.OVSRecord) { recordConfig(r, before) }); err != nil {
				return err
			}
			return s.c.SetOtherConfig(ctx, kv)
		}, append(changes, relyChanges...)...)
	} else if len(relied) > 0 {
		d.add(phaseConfig, func(context.Context) error {
			return s.record(func(r *provision.OVSRecord) { recordConfig(r, relied) })
		}, relyChanges...)
	}
	if resume != "" {
		d.restart = resume
		if len(kv) > 0 {
			d.restart += "; DPDK settings changed too"
		}
	} else if len(kv) > 0 {
		d.restart = "DPDK settings changed (read only at start)"
	} else if dpdkRequested(st) && !st.DPDKInitialized {
		// the log may lag the database: wait (bounded) for the line
		// that ends DPDK's init before reading the cause from it
		dd := diagnose.DiagnoseDPDK(st, diagnose.EvidenceLog(ctx, s.c, st))
		switch {
		case dd.Kind == diagnose.ProblemNoHugepages && !s.restarted:
			// DPDK takes its memory only at start: once the pages
			// are free again, a restart is the fix
			ok, have := s.pagesFree(st)
			if !ok {
				dd.Fix = "free hugepages (" + have + "): stop what holds them (`rig hugepages status`), reserve more (hugepages section of the playbook) or lower ovs.config.dpdk-socket-mem; then `rig up` restarts ovs-vswitchd (DPDK takes its memory only at start)"
				return diagProblem(dd)
			}
			d.restart = "DPDK found too few free hugepages at ovs-vswitchd's last start; now " + have + ": a restart initialises DPDK"
		case s.restarted || len(dd.Evidence) > 0:
			return diagProblem(dd)
		default:
			d.restart = "dpdk_initialized is false; ovs-vswitchd started before dpdk-init was set"
		}
	}
	if d.restart != "" {
		how := "systemctl restart openvswitch-switch"
		if s.c.Target.Private {
			how = "private instance in " + s.c.Target.RunDir
		}
		d.add(phaseRestart, s.c.RestartVswitchd, provision.Change{Object: "ovs-vswitchd", Action: "restart (" + how + ")", To: d.restart})
	}
	return nil
}

// planBridges plans the wanted bridges and their ports.
func (s *ovsStep) planBridges(d *ovsDiff) {
	for _, b := range s.spec.Bridges {
		b := b
		obj := "ovs bridge " + b.Name
		cur, ok := d.st.Bridge(b.Name)
		switch {
		case !ok:
			d.add(phaseBridge, func(ctx context.Context) error {
				if err := s.record(func(r *provision.OVSRecord) { r.Bridges = appendNew(r.Bridges, b.Name) }); err != nil {
					return err
				}
				return s.c.AddBridge(ctx, b.Name, b.Datapath())
			},
				provision.Change{Object: obj, Action: "add bridge", To: "datapath_type=" + b.Datapath()})
		case orDefault(cur.DatapathType, "system") != b.Datapath():
			d.add(phaseBridge, func(ctx context.Context) error { return s.c.SetBridgeDatapath(ctx, b.Name, b.Datapath()) },
				provision.Change{Object: obj, Action: "set datapath_type", From: orDefault(cur.DatapathType, "system"), To: b.Datapath()})
		default:
			if pb, _ := s.reliedBridge(b.Name); pb != "" {
				d.add(phaseBridge, func(context.Context) error {
					return s.record(func(r *provision.OVSRecord) { r.Relied = appendNew(r.Relied, b.Name) })
				}, provision.Change{Object: "rig state", Action: fmt.Sprintf("record that %s relies on %s (made by playbook %s)", s.state.PlaybookName(), obj, pb)})
			}
		}
		for _, p := range b.Ports {
			s.planPort(d, b.Name, p)
		}
	}
}

// planPort plans one wanted port: add it, move it, or fix its columns.
func (s *ovsStep) planPort(d *ovsDiff, bridge string, p playbooks.OVSPort) {
	pobj := "ovs port " + p.Name
	devargs := d.devargs[p.Name]
	settings := ovs.IfaceSettings{Type: p.PortType(), Devargs: devargs, MTURequest: p.MTURequest, VhostServerPath: p.VhostServerPath}
	if p.NRxq > 0 {
		settings.NRxq = strconv.Itoa(p.NRxq)
	}
	addPort := func(ctx context.Context) error { return s.c.AddPort(ctx, bridge, p.Name, settings) }
	curBr, exists := d.st.PortBridge(p.Name)
	switch {
	case !exists:
		d.changedPorts[p.Name] = true
		d.add(phasePortAdd, func(ctx context.Context) error {
			if err := s.record(func(r *provision.OVSRecord) { recordPort(r, bridge, p.Name) }); err != nil {
				return err
			}
			return addPort(ctx)
		}, provision.Change{Object: pobj, Action: "add port to " + bridge, To: describePort(p, devargs)})
	case curBr != bridge:
		d.changedPorts[p.Name] = true
		d.add(phasePortDel, func(ctx context.Context) error { return s.c.DeletePort(ctx, curBr, p.Name) },
			provision.Change{Object: pobj, Action: "move port", From: curBr, To: bridge})
		d.add(phasePortAdd, addPort, provision.Change{Object: pobj, Action: "add port to " + bridge, To: describePort(p, devargs)})
	default:
		ifc, _ := d.st.Interface(p.Name)
		var cur ovs.Interface
		if ifc != nil {
			cur = *ifc
		}
		diffs, fix := ifaceDiff(cur, settings, p.ByNetdevName())
		if len(diffs) == 0 {
			return
		}
		d.changedPorts[p.Name] = true
		for i := range diffs {
			diffs[i].Object = pobj
		}
		// one write sets every differing column
		d.add(phasePortAdd, func(ctx context.Context) error { return s.c.SetInterface(ctx, p.Name, fix) }, diffs...)
	}
}

// planPrune plans deleting bridges and ports the playbook does not name.
func (s *ovsStep) planPrune(d *ovsDiff) {
	wantBridges := map[string]bool{}
	wantPorts := map[string]bool{}
	for _, b := range s.spec.Bridges {
		wantBridges[b.Name] = true
		for _, p := range b.Ports {
			wantPorts[p.Name] = true
		}
	}
	for _, b := range d.st.Bridges {
		b := b
		if !wantBridges[b.Name] {
			d.add(phaseBridgeDel, func(ctx context.Context) error { return s.c.DeleteBridge(ctx, b.Name) },
				provision.Change{Object: "ovs bridge " + b.Name, Action: "delete bridge (prune: true)"})
			continue
		}
		for _, p := range b.Ports {
			p := p
			if p.Name == b.Name || wantPorts[p.Name] {
				continue
			}
			d.add(phasePortDel, func(ctx context.Context) error { return s.c.DeletePort(ctx, b.Name, p.Name) },
				provision.Change{Object: "ovs port " + p.Name, Action: "delete port from " + b.Name + " (prune: true)"})
		}
	}
}

// checkAttached fails, naming the cause, for a port that needs no change
// but is not attached; while other changes are planned it only notes it.
func (s *ovsStep) checkAttached(ctx context.Context, d *ovsDiff, plan *provision.Plan) error {
	var failed []ovs.Interface
	for _, b := range s.spec.Bridges {
		for _, p := range b.Ports {
			if d.changedPorts[p.Name] || d.restart != "" {
				continue
			}
			if ifc, ok := d.st.Interface(p.Name); ok && !ifc.Attached() {
				failed = append(failed, *ifc)
			}
		}
	}
	if len(failed) == 0 {
		return nil
	}
	// the log may lag Interface.error: wait (bounded) for the lines that
	// carry the failed interfaces' errors, so the specific cause is there
	log := diagnose.EvidenceLog(ctx, s.c, d.st, failed...)
	var problems []error
	for _, ifc := range failed {
		dg := diagnose.Diagnose(s.h, d.st, ifc, log)
		if !plan.Satisfied() {
			plan.Notes = append(plan.Notes, dg.String())
			continue
		}
		problems = append(problems, diagProblem(dg))
	}
	return errors.Join(problems...)
}

// checkCPUMasks refuses, before OvS is touched, CPU masks naming CPUs the
// host does not have online: ovs-vswitchd accepts such a pmd-cpu-mask
// silently and runs no PMD thread on the missing CPUs.
func (s *ovsStep) checkCPUMasks(plan *provision.Plan) error {
	want := s.spec.Config.OtherConfig()
	for _, key := range []string{"pmd-cpu-mask", "dpdk-lcore-mask"} {
		mask, ok := want[key]
		if !ok {
			continue
		}
		obj := "ovs other_config:" + key
		why, err := cpuset.CheckMaskOnline(s.h, key, mask)
		if err != nil && s.fixture != "" {
			plan.Notes = append(plan.Notes, fmt.Sprintf("%s %s not checked against the online CPUs: %v (the fixture has no CPU list)", obj, mask, err))
			continue
		}
		if err != nil {
			return &provision.Problem{Object: obj, Err: fmt.Errorf("cannot check %s %s against the online CPUs: %w", key, mask, err),
				CauseText: "the host's online CPU list is unreadable", FixText: "check that " + s.h.Path(cpuset.OnlineFile) + " is readable (sysfs mounted)"}
		}
		if why == "" {
			continue
		}
		fix := "set ovs.config." + key + " in the playbook to a mask of online CPUs"
		if cpus, err := cpuset.ParseMask(mask); err == nil {
			if online, err := s.onlineCPUs(); err == nil {
				var keep []int
				for _, c := range cpus {
					if online[c] {
						keep = append(keep, c)
					}
				}
				if len(keep) > 0 {
					fix += fmt.Sprintf(" (e.g. %s keeps CPU(s) %s)", cpuset.Mask(keep), cpuset.FormatList(keep))
				} else {
					var all []int
					for c := range online {
						if c != 0 || len(online) == 1 { // leave CPU 0 to the system when there is another
							all = append(all, c)
						}
					}
					sort.Ints(all)
					fix += fmt.Sprintf(" (e.g. %s selects CPU(s) %s)", cpuset.Mask(all), cpuset.FormatList(all))
				}
			}
		}
		return &provision.Problem{Object: obj, Err: errors.New(why),
			CauseText: "the mask names CPUs that do not exist or are offline; ovs-vsctl accepts such a mask and ovs-vswitchd runs no thread on a CPU it does not have", FixText: fix}
	}
	return nil
}

func (s *ovsStep) onlineCPUs() (map[int]bool, error) {
	cpus, err := cpuset.Online(s.h)
	m := map[int]bool{}
	for _, c := range cpus {
		m[c] = true
	}
	return m, err
}

func describePort(p playbooks.OVSPort, devargs string) string {
	parts := []string{"type=" + p.PortType()}
	if devargs != "" {
		parts = append(parts, "devargs="+devargs)
	}
	if p.NRxq > 0 {
		parts = append(parts, "n_rxq="+strconv.Itoa(p.NRxq))
	}
	if p.MTURequest > 0 {
		parts = append(parts, "mtu_request="+strconv.Itoa(p.MTURequest))
	}
	if p.VhostServerPath != "" {
		parts = append(parts, "vhost-server-path="+p.VhostServerPath)
	}
	if p.Netdev != "" {
		parts = append(parts, "(netdev "+p.Netdev+")")
	}
	if p.ByNetdevName() {
		parts = append(parts, "(no devargs: OVS-DOCA resolves netdev "+p.Name+")")
	}
	return strings.Join(parts, " ")
}

// ifaceDiff returns one change per differing managed column and the
// settings that fix them (only the differing ones).
// byName: the port goes by its netdev name (OVS-DOCA), so devargs it
// holds are removed.
func ifaceDiff(cur ovs.Interface, want ovs.IfaceSettings, byName bool) ([]provision.Change, ovs.IfaceSettings) {
	var ch []provision.Change
	var fix ovs.IfaceSettings
	if want.Type != "" && cur.Type != want.Type {
		ch = append(ch, provision.Change{Action: "set type", From: cur.Type, To: want.Type})
		fix.Type = want.Type
	}
	if want.Devargs != "" && cur.Devargs() != want.Devargs {
		ch = append(ch, provision.Change{Action: "set options:dpdk-devargs", From: cur.Devargs(), To: want.Devargs})
		fix.Devargs = want.Devargs
	}
	if byName && cur.Devargs() != "" {
		ch = append(ch, provision.Change{Action: "remove options:dpdk-devargs", From: cur.Devargs(), To: "(none: OVS-DOCA resolves the port by its netdev name)"})
		fix.ClearDevargs = true
	}
	if want.NRxq != "" && cur.Options["n_rxq"] != want.NRxq {
		ch = append(ch, provision.Change{Action: "set options:n_rxq", From: cur.Options["n_rxq"], To: want.NRxq})
		fix.NRxq = want.NRxq
	}
	if want.VhostServerPath != "" && cur.Options["vhost-server-path"] != want.VhostServerPath {
		ch = append(ch, provision.Change{Action: "set options:vhost-server-path", From: cur.Options["vhost-server-path"], To: want.VhostServerPath})
		fix.VhostServerPath = want.VhostServerPath
	}
	if want.MTURequest > 0 && cur.MTURequest != int64(want.MTURequest) {
		from := ""
		if cur.MTURequest > 0 {
			from = strconv.FormatInt(cur.MTURequest, 10)
		}
		ch = append(ch, provision.Change{Action: "set mtu_request", From: from, To: strconv.Itoa(want.MTURequest)})
		fix.MTURequest = want.MTURequest
	}
	return ch, fix
}

func isPCI(dev string) bool { _, ok := devargs.PCI(dev); return ok }
