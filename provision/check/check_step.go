// Package check holds the check step: rig's own traffic through the OvS
// bridge the playbook configured, the loss per stage of the path and the
// verdict per threshold (schema rig.check/v2), and its metrics file.
package check

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"rig/bench"
	"rig/bench/peer"
	"rig/bench/search"
	"rig/internal/labinfo"
	"rig/ovs"
	"rig/playbooks"
	"rig/provision"
)

// Dataplane runs one dataplane configuration and returns what it measured:
// child.Child (a `rig bench run-json` child process, optionally inside a
// network namespace) in rig, a fake in tests.
type Dataplane interface {
	Run(ctx context.Context, cfg bench.Config) (*bench.Result, error)
}

// Env is what the check step is built with: the steps' Env and the
// dataplane it runs its traffic with.
type Env struct {
	provision.Env
	// Dataplane runs the check's dataplane in a network namespace ("" =
	// rig's own); nil: the check step cannot run traffic.
	Dataplane func(netns string) Dataplane
	// Progress receives the check's progress lines while it runs (a line
	// per run and per search trial); nil: none
	Progress io.Writer
}

// checkStep is the `check` section: it runs last, sends rig's own traffic
// through the bridge the playbook configured and reports what went
// through, where frames were lost, and pass/fail per threshold. Its plan
// holds only cleanup: a killed check's leftover rig-chk- ports and
// cookie flows. The traffic itself is no change: it runs (Measure) after
// every apply and re-check, and leaves the bridge as it found it.
type checkStep struct {
	env    *Env
	spec   *playbooks.CheckSpec
	pbOVS  *playbooks.OVSSpec // the playbook's ovs section (nil: none)
	bridge string
	o      checkOVS
	// dataplane builds the runner for a network namespace ("" = rig's own).
	dataplane func(netns string) Dataplane
	// trialGap is the pause between a search's trials (search: ndr)
	trialGap time.Duration
	// lab: the check runs inside a virtual lab with check.lab's load and
	// thresholds (spec is then the lab's check)
	lab      bool
	progress io.Writer
	// farTimeouts bound the waits on far ends served by rig bench serve
	// (zero: the protocol's defaults)
	farTimeouts peer.PeerTimeouts
}

// NewCheckStep builds the check step; pbOVS is the playbook's ovs section
// (the bridge it creates, the default bridge, the ovs step it needs).
func NewCheckStep(env *Env, spec *playbooks.CheckSpec, pbOVS *playbooks.OVSSpec) (provision.Step, error) {
	bridge := spec.BridgeIn(pbOVS)
	if bridge == "" {
		return nil, &provision.UsageError{Msg: "check: bridge: no bridge to check; name it (check: bridge: br0)"}
	}
	h := env.Host
	c := ovs.NewClient(h, ovs.TargetFor(h, env.OVSRunDir, env.OVSDB))
	s := &checkStep{env: env, spec: spec, pbOVS: pbOVS, bridge: bridge, o: c, dataplane: env.Dataplane, trialGap: search.DefaultTrialGap, progress: env.Progress}
	if spec.Lab != nil {
		in, err := labinfo.Read(h.Root)
		if err != nil {
			return nil, err
		}
		if in != nil {
			s.spec, s.lab = spec.InLab(), true
		}
	}
	return s, nil
}

func (s *checkStep) Name() string { return "check" }

// Needs implements needer: the check measures the bridge the ovs step
// configures.
func (s *checkStep) Needs() []provision.Need {
	if s.pbOVS == nil {
		return nil
	}
	return []provision.Need{{Step: "ovs", Why: "the check sends traffic through the bridge and ports the ovs step configures"}}
}

// inPlaybook reports whether the playbook's ovs section creates bridge.
func (s *checkStep) inPlaybook(bridge string) bool {
	if s.pbOVS == nil {
		return false
	}
	for _, b := range s.pbOVS.Bridges {
		if b.Name == bridge {
			return true
		}
	}
	return false
}

// Check plans the removal of a killed check's leftovers on every bridge
// (ports named rig-chk-*, flows with rig's cookie) and refuses a check
// that cannot run (no such bridge, no such port). Read-only.
func (s *checkStep) Check(ctx context.Context) (provision.Plan, error) {
	var plan provision.Plan
	st, err := s.o.ReadState(ctx)
	if err != nil {
		return plan, &provision.Problem{Object: "check", Err: err, CauseText: "OvS's database cannot be read",
			FixText: "start OvS (rig ovs daemon start --rundir DIR for a private one) and give the same --rundir/--db"}
	}
	if err := s.planLeftovers(ctx, st, &plan); err != nil {
		return plan, err
	}
	b, ok := st.Bridge(s.bridge)
	switch {
	case !ok && s.inPlaybook(s.bridge):
		plan.Notes = append(plan.Notes, fmt.Sprintf("check: bridge %s does not exist yet; the ovs step creates it before the check runs", s.bridge))
	case !ok:
		return plan, &provision.Problem{Object: "check: bridge " + s.bridge, Err: errors.New("no such bridge"),
			FixText: "name an existing bridge in check.bridge, or add it to the playbook's ovs section"}
	case s.spec.TopologyOrDefault() == playbooks.TopologyThroughPorts:
		if err := s.checkPorts(b); err != nil {
			return plan, err
		}
	}
	if s.spec.TopologyOrDefault() == playbooks.TopologyThroughPorts {
		plan.Notes = append(plan.Notes, s.planFarEnds(ctx, st)...)
	}
	plan.Notes = append(plan.Notes, "check: "+s.describe()+" (runs after every apply; traffic is not a change)")
	return plan, nil
}

// planLeftovers adds one op per leftover port and one per bridge with
// cookie flows.
func (s *checkStep) planLeftovers(ctx context.Context, st *ovs.State, plan *provision.Plan) error {
	for _, b := range st.Bridges {
		for _, p := range b.Ports {
			if !strings.HasPrefix(p.Name, CheckPortPrefix) {
				continue
			}
			br, port := b.Name, p.Name
			plan.Add(func(ctx context.Context) error { return s.o.DeletePort(ctx, br, port) },
				provision.Change{Object: "bridge " + br, Action: "remove leftover port " + port + " (a check that did not finish)"})
		}
		if b.DatapathType != "netdev" && b.Name != s.bridge {
			continue // the check only ever adds flows to netdev bridges under test
		}
		flows, err := s.o.FlowsByCookie(ctx, b.Name, CheckCookie)
		if err != nil {
			return &provision.Problem{Object: "check: bridge " + b.Name, Err: err, CauseText: "ovs-ofctl cannot read the bridge's flows",
				FixText: "check that ovs-vswitchd runs (rig ovs status) and that ovs-ofctl is installed"}
		}
		if len(flows) > 0 {
			br := b.Name
			plan.Add(func(ctx context.Context) error { return s.o.DelFlowsByCookie(ctx, br, CheckCookie) },
				provision.Change{Object: "bridge " + br, Action: fmt.Sprintf("remove %d leftover flow(s) with rig's cookie %#x", len(flows), CheckCookie)})
		}
	}
	return nil
}

// checkPorts: through-ports needs both ports on the bridge.
func (s *checkStep) checkPorts(b *ovs.Bridge) error {
	have := map[string]bool{}
	for _, p := range b.Ports {
		have[p.Name] = true
	}
	for _, p := range s.spec.Ports {
		if !have[p] && !s.inPlaybook(b.Name) {
			return &provision.Problem{Object: "check: port " + p, Err: fmt.Errorf("not a port of bridge %s", b.Name),
				FixText: "name two of the bridge's ports in check.ports (ovs-vsctl list-ports " + b.Name + ")"}
		}
	}
	return nil
}

func (s *checkStep) describe() string {
	sp := s.spec
	d := fmt.Sprintf("%s on bridge %s", sp.TopologyOrDefault(), s.bridge)
	if sp.TopologyOrDefault() == playbooks.TopologyThroughBridge {
		d += " over " + sp.TransportOrDefault()
	} else {
		d += fmt.Sprintf(", in %s out %s", sp.Ports[0], sp.Ports[1])
	}
	rate := sp.DescribeLoad()
	if s.lab {
		rate += " (check.lab: lab figures)"
	}
	return fmt.Sprintf("%s, frames %v B, %v after %v warm-up, %s, %d flow(s), %d core(s)", d, sp.Sizes(), sp.DurationOrDefault(),
		sp.WarmupOrDefault(), rate, sp.FlowsOrDefault(), sp.CoresOrDefault())
}

// BelowThresholdError is a check that ran and measured less than a
// threshold (exit code 4), or whose traffic was not offloaded with
// check.offload: required (Offload: its causes and fixes).
type BelowThresholdError struct {
	Failed  []ThresholdVerdict
	Offload *CheckOffload
}

// Cause and Fix are a failed required offload's (empty otherwise: the
// thresholds speak for themselves).
func (e *BelowThresholdError) Cause() string {
	if e.Offload == nil || e.Offload.Pass {
		return ""
	}
	return e.Offload.causeText()
}

func (e *BelowThresholdError) Fix() string {
	if e.Offload == nil || e.Offload.Pass {
		return ""
	}
	return e.Offload.fixText()
}

func (e *BelowThresholdError) Error() string {
	parts := make([]string, len(e.Failed))
	for i, t := range e.Failed {
		parts[i] = t.String()
	}
	return "check: below threshold: " + strings.Join(parts, "; ")
}

// BelowThreshold marks the error for the exit code.
func (e *BelowThresholdError) BelowThreshold() bool { return true }
