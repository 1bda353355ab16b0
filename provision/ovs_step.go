package provision

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"rig/internal/host"
	"rig/ovs"
	"rig/playbooks"
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
}

// NewOVSStep builds the step. rundir (a private instance from `rig ovs
// daemon start`) or db (an ovsdb remote) select the instance; both empty
// means the system one, restarted through systemd.
func NewOVSStep(h *host.Host, spec *playbooks.OVSSpec, rundir, db string) (Step, error) {
	return &ovsStep{h: h, spec: spec, c: ovs.NewClient(h, ovs.TargetFor(h, rundir, db))}, nil
}

func (s *ovsStep) Name() string { return "ovs" }

type ovsAction struct {
	phase  int // order of execution in Apply
	change Change
	do     func(ctx context.Context) error
}

const (
	phaseConfig = iota
	phaseRestart
	phaseBridge
	phasePortDel
	phasePortAdd
	phaseBridgeDel
)

func (s *ovsStep) Check(ctx context.Context) (Plan, error) {
	plan, _, err := s.diff(ctx)
	return plan, err
}

func (s *ovsStep) Apply(ctx context.Context, _ Plan) error {
	_, acts, err := s.diff(ctx)
	if err != nil {
		return err
	}
	for _, a := range acts {
		if err := a.do(ctx); err != nil {
			var died *ovs.VswitchdDiedError
			if errors.As(err, &died) {
				d := died.Diagnosis
				return &Problem{Object: a.change.Object, Err: fmt.Errorf("%s: %s", a.change.Action, err), Cause: d.Cause, Fix: d.Fix}
			}
			return fmt.Errorf("%s: %s: %w", a.change.Object, a.change.Action, err)
		}
		if a.phase == phaseRestart {
			s.restarted = true
		}
	}
	return nil
}

func (s *ovsStep) unreachable(err error) error {
	// the same cause and fix `rig ovs status` gives
	d := s.c.DiagnoseReadError(err)
	return &Problem{Object: "ovs", Err: err, Cause: d.Cause, Fix: d.Fix}
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func diagProblem(d ovs.Diagnosis) *Problem {
	msg := d.Error
	if len(d.Evidence) > 0 {
		msg += " [vswitchd log: " + strings.Join(d.Evidence, " | ") + "]"
	}
	return &Problem{Object: d.Object, Err: errors.New(msg), Cause: d.Cause, Fix: d.Fix}
}

// diff compares the playbook with OvS and returns the plan, the actions
// that carry it out (in order), or an explained error.
func (s *ovsStep) diff(ctx context.Context) (Plan, []ovsAction, error) {
	var plan Plan
	var acts []ovsAction
	if err := s.checkCPUMasks(); err != nil {
		return plan, nil, err
	}
	st, err := s.c.ReadState(ctx)
	if err != nil {
		return plan, nil, s.unreachable(err)
	}
	ps := s.c.VswitchdStatus()
	resume := ""
	if !ps.Alive {
		marker, ok := s.c.InterruptedRestart()
		if !ok {
			return plan, nil, diagProblem(s.c.VswitchdDown(ps, st))
		}
		// rig itself stopped it and was interrupted before starting it
		// again: finish that restart rather than ask for a manual start
		resume = "ovs-vswitchd is down because an earlier rig run stopped it to restart it and was interrupted (" + marker + "); starting it finishes that restart"
	}
	add := func(phase int, c Change, do func(ctx context.Context) error) {
		acts = append(acts, ovsAction{phase: phase, change: c, do: do})
	}

	// DPDK settings: read by ovs-vswitchd only at start.
	want := s.spec.Config.OtherConfig()
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	kv := map[string]string{}
	for _, k := range keys {
		if cur, ok := st.OtherConfig[k]; !ok || cur != want[k] {
			kv[k] = want[k]
			add(phaseConfig, Change{Object: "ovs other_config", Action: "set " + k, From: cur, To: want[k]}, nil)
		}
	}
	if len(kv) > 0 {
		// one write for all keys: replace the per-key no-op actions
		for i := range acts {
			acts[i].do = func(context.Context) error { return nil }
		}
		acts[len(acts)-1].do = func(ctx context.Context) error { return s.c.SetOtherConfig(ctx, kv) }
	}
	restart := ""
	if resume != "" {
		restart = resume
		if len(kv) > 0 {
			restart += "; DPDK settings changed too"
		}
	} else if len(kv) > 0 {
		restart = "DPDK settings changed (read only at start)"
	} else if init := st.OtherConfig["dpdk-init"]; (init == "true" || init == "try") && !st.DPDKInitialized {
		dd := ovs.DiagnoseDPDK(st, s.c.Log())
		if s.restarted || len(dd.Evidence) > 0 {
			return plan, nil, diagProblem(dd)
		}
		restart = "dpdk_initialized is false; ovs-vswitchd started before dpdk-init was set"
	}
	if restart != "" {
		how := "systemctl restart openvswitch-switch"
		if s.c.Target.Private {
			how = "private instance in " + s.c.Target.RunDir
		}
		add(phaseRestart, Change{Object: "ovs-vswitchd", Action: "restart (" + how + ")", To: restart}, s.c.RestartVswitchd)
	}

	// Bridges and ports.
	wantBridges := map[string]bool{}
	wantPorts := map[string]bool{}
	changedPorts := map[string]bool{}
	for _, b := range s.spec.Bridges {
		b := b
		wantBridges[b.Name] = true
		obj := "ovs bridge " + b.Name
		cur, ok := st.Bridge(b.Name)
		switch {
		case !ok:
			add(phaseBridge, Change{Object: obj, Action: "add bridge", To: "datapath_type=" + b.Datapath()},
				func(ctx context.Context) error { return s.c.AddBridge(ctx, b.Name, b.Datapath()) })
		case orDefault(cur.DatapathType, "system") != b.Datapath():
			add(phaseBridge, Change{Object: obj, Action: "set datapath_type", From: orDefault(cur.DatapathType, "system"), To: b.Datapath()},
				func(ctx context.Context) error { return s.c.SetBridgeDatapath(ctx, b.Name, b.Datapath()) })
		}
		for _, p := range b.Ports {
			p := p
			wantPorts[p.Name] = true
			pobj := "ovs port " + p.Name
			settings := ovs.IfaceSettings{Type: p.PortType(), Devargs: p.Devargs, MTURequest: p.MTURequest, VhostServerPath: p.VhostServerPath}
			if p.NRxq > 0 {
				settings.NRxq = strconv.Itoa(p.NRxq)
			}
			curBr, exists := st.PortBridge(p.Name)
			switch {
			case !exists:
				changedPorts[p.Name] = true
				add(phasePortAdd, Change{Object: pobj, Action: "add port to " + b.Name, To: describePort(p)},
					func(ctx context.Context) error { return s.c.AddPort(ctx, b.Name, p.Name, settings) })
			case curBr != b.Name:
				changedPorts[p.Name] = true
				add(phasePortDel, Change{Object: pobj, Action: "move port", From: curBr, To: b.Name},
					func(ctx context.Context) error { return s.c.DeletePort(ctx, curBr, p.Name) })
				add(phasePortAdd, Change{Object: pobj, Action: "add port to " + b.Name, To: describePort(p)},
					func(ctx context.Context) error { return s.c.AddPort(ctx, b.Name, p.Name, settings) })
			default:
				ifc, _ := st.Interface(p.Name)
				var cur ovs.Interface
				if ifc != nil {
					cur = *ifc
				}
				diffs, fix := ifaceDiff(cur, settings)
				if len(diffs) > 0 {
					changedPorts[p.Name] = true
					for i, d := range diffs {
						d.Object = pobj
						var do func(ctx context.Context) error
						if i == len(diffs)-1 {
							do = func(ctx context.Context) error { return s.c.SetInterface(ctx, p.Name, fix) }
						} else {
							do = func(context.Context) error { return nil }
						}
						add(phasePortAdd, d, do)
					}
				}
			}
		}
	}
	if s.spec.Prune {
		for _, b := range st.Bridges {
			b := b
			if !wantBridges[b.Name] {
				add(phaseBridgeDel, Change{Object: "ovs bridge " + b.Name, Action: "delete bridge (prune: true)"},
					func(ctx context.Context) error { return s.c.DeleteBridge(ctx, b.Name) })
				continue
			}
			for _, p := range b.Ports {
				p := p
				if p.Name == b.Name || wantPorts[p.Name] {
					continue
				}
				add(phasePortDel, Change{Object: "ovs port " + p.Name, Action: "delete port from " + b.Name + " (prune: true)"},
					func(ctx context.Context) error { return s.c.DeletePort(ctx, b.Name, p.Name) })
			}
		}
	}
	sort.SliceStable(acts, func(i, j int) bool { return acts[i].phase < acts[j].phase })
	for _, a := range acts {
		plan.Changes = append(plan.Changes, a.change)
	}

	// Ports that need no change must be attached.
	var problems []error
	log := ovs.LogTail(nil)
	logRead := false
	for _, b := range s.spec.Bridges {
		for _, p := range b.Ports {
			if changedPorts[p.Name] || restart != "" {
				continue
			}
			ifc, ok := st.Interface(p.Name)
			if !ok || ifc.Attached() {
				continue
			}
			if !logRead {
				log, logRead = s.c.Log(), true
			}
			d := ovs.Diagnose(s.h, st, *ifc, log)
			if len(plan.Changes) > 0 {
				plan.Notes = append(plan.Notes, d.String())
				continue
			}
			problems = append(problems, diagProblem(d))
		}
	}
	if len(problems) > 0 {
		return plan, nil, errors.Join(problems...)
	}
	if len(plan.Changes) == 0 {
		n := 0
		for _, b := range s.spec.Bridges {
			n += len(b.Ports)
		}
		plan.Notes = append(plan.Notes, fmt.Sprintf("ovs: dpdk_initialized=%v (%s), %d bridge(s), %d port(s) attached", st.DPDKInitialized, st.DPDKVersion, len(s.spec.Bridges), n))
	}
	return plan, acts, nil
}

// checkCPUMasks refuses, before OvS is touched, CPU masks naming CPUs the
// host does not have online: ovs-vswitchd accepts such a pmd-cpu-mask
// silently and runs no PMD thread on the missing CPUs.
func (s *ovsStep) checkCPUMasks() error {
	want := s.spec.Config.OtherConfig()
	for _, key := range []string{"pmd-cpu-mask", "dpdk-lcore-mask"} {
		mask, ok := want[key]
		if !ok {
			continue
		}
		obj := "ovs other_config:" + key
		why, err := ovs.CheckCPUMask(s.h, key, mask)
		if err != nil {
			return &Problem{Object: obj, Err: fmt.Errorf("cannot check %s %s against the online CPUs: %w", key, mask, err),
				Cause: "the host's online CPU list is unreadable", Fix: "check that " + s.h.Path(ovs.OnlineCPUsFile) + " is readable (sysfs mounted)"}
		}
		if why == "" {
			continue
		}
		fix := "set ovs.config." + key + " in the playbook to a mask of online CPUs"
		if cpus, err := ovs.ParseCPUMask(mask); err == nil {
			if online, err := s.onlineCPUs(); err == nil {
				var keep []int
				for _, c := range cpus {
					if online[c] {
						keep = append(keep, c)
					}
				}
				if len(keep) > 0 {
					fix += fmt.Sprintf(" (e.g. %s keeps CPU(s) %s)", ovs.MaskFor(keep), ovs.FormatCPUList(keep))
				} else {
					var all []int
					for c := range online {
						if c != 0 || len(online) == 1 { // leave CPU 0 to the system when there is another
							all = append(all, c)
						}
					}
					sort.Ints(all)
					fix += fmt.Sprintf(" (e.g. %s selects CPU(s) %s)", ovs.MaskFor(all), ovs.FormatCPUList(all))
				}
			}
		}
		return &Problem{Object: obj, Err: errors.New(why),
			Cause: "the mask names CPUs that do not exist or are offline; ovs-vsctl accepts such a mask and ovs-vswitchd runs no thread on a CPU it does not have", Fix: fix}
	}
	return nil
}

func (s *ovsStep) onlineCPUs() (map[int]bool, error) {
	raw, err := s.h.ReadString(ovs.OnlineCPUsFile)
	if err != nil {
		return nil, err
	}
	cpus, err := ovs.ParseCPUList(raw)
	m := map[int]bool{}
	for _, c := range cpus {
		m[c] = true
	}
	return m, err
}

func describePort(p playbooks.OVSPort) string {
	parts := []string{"type=" + p.PortType()}
	if p.Devargs != "" {
		parts = append(parts, "devargs="+p.Devargs)
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
	return strings.Join(parts, " ")
}

// ifaceDiff returns one change per differing managed column and the
// settings that fix them (only the differing ones).
func ifaceDiff(cur ovs.Interface, want ovs.IfaceSettings) ([]Change, ovs.IfaceSettings) {
	var ch []Change
	var fix ovs.IfaceSettings
	if want.Type != "" && cur.Type != want.Type {
		ch = append(ch, Change{Action: "set type", From: cur.Type, To: want.Type})
		fix.Type = want.Type
	}
	if want.Devargs != "" && cur.Devargs() != want.Devargs {
		ch = append(ch, Change{Action: "set options:dpdk-devargs", From: cur.Devargs(), To: want.Devargs})
		fix.Devargs = want.Devargs
	}
	if want.NRxq != "" && cur.Options["n_rxq"] != want.NRxq {
		ch = append(ch, Change{Action: "set options:n_rxq", From: cur.Options["n_rxq"], To: want.NRxq})
		fix.NRxq = want.NRxq
	}
	if want.VhostServerPath != "" && cur.Options["vhost-server-path"] != want.VhostServerPath {
		ch = append(ch, Change{Action: "set options:vhost-server-path", From: cur.Options["vhost-server-path"], To: want.VhostServerPath})
		fix.VhostServerPath = want.VhostServerPath
	}
	if want.MTURequest > 0 && cur.MTURequest != int64(want.MTURequest) {
		from := ""
		if cur.MTURequest > 0 {
			from = strconv.FormatInt(cur.MTURequest, 10)
		}
		ch = append(ch, Change{Action: "set mtu_request", From: from, To: strconv.Itoa(want.MTURequest)})
		fix.MTURequest = want.MTURequest
	}
	return ch, fix
}
