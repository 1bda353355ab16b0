package playbooks

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// CheckSpec is the `check` section: the throughput check through the path
// the playbook just configured. It runs last in `rig up` (and alone in
// `rig check`).
//
//	check:
//	  topology: through-bridge     # through-bridge (default) | through-ports
//	  bridge: br0                  # default: the playbook's only ovs bridge
//	  transport: vhost-user        # through-bridge: vhost-user (default) | memif
//	  ports: [p0, pf0hpf]          # through-ports: ingress, egress (bridge port names)
//	  far_end_netns: wire          # through-ports: netns holding the cables' far ends
//	  far_ends:                    # through-ports: per port, a netns or another machine's
//	    p0: {serve: 10.0.0.2:7400, netdev: ens1f0np0, token_file: /etc/rig/peer.token}
//	  direction: one               # one (in at ports[0], out at ports[1]) | both (and back)
//	  frame_size: 64               # or frame_sizes: [64, 1518] (one run per size)
//	  duration: 5s
//	  warmup: 1s                   # traffic before the measured interval, not counted
//	  rate: ""                     # "" = as fast as possible; 1Mpps | 10Gbps | 50%
//	  flows: 1                     # distinct 5-tuples (source ports)
//	  cores: 1
//	  thresholds: {min_mpps: 1, min_linerate_pct: 0, max_loss_pct: 0.1, max_p99_us: 0}
//	  search: ndr                  # instead of one run per size: the RFC 2544 zero-loss
//	                               # search (trials of duration); thresholds judge its NDR
//	  offload: preferred           # off | preferred (default: report whether the datapath
//	                               # flows of its traffic were offloaded) | required (fail,
//	                               # exit 4, with the cause, unless every one was)
//	  ndr: {resolution: 0.5%, max_trials: 20, pdr_loss_pct: 0.5, max: 1Mpps, loss_retries: 0}
type CheckSpec struct {
	Topology    string            `yaml:"topology"`
	Bridge      string            `yaml:"bridge"`
	Transport   string            `yaml:"transport"`
	Ports       []string          `yaml:"ports"`
	FarEndNetNS string            `yaml:"far_end_netns"`
	FarEnds     map[string]FarEnd `yaml:"far_ends"`
	Direction   string            `yaml:"direction"`
	FrameSize   int               `yaml:"frame_size"`
	FrameSizes  []int             `yaml:"frame_sizes"`
	Duration    string            `yaml:"duration"`
	Warmup      string            `yaml:"warmup"`
	Rate        string            `yaml:"rate"`
	Flows       int               `yaml:"flows"`
	Cores       int               `yaml:"cores"`
	Thresholds  CheckThresholds   `yaml:"thresholds"`
	Search      string            `yaml:"search"`
	NDR         CheckNDR          `yaml:"ndr"`
	Offload     string            `yaml:"offload"`
	LatencyLoad string            `yaml:"latency_load"`
	Lab         *CheckLab         `yaml:"lab"`
}

// What the check does with hardware offload (CheckSpec.Offload): after
// its traffic it reads OvS's datapath flows and says whether the ones
// that carried it were offloaded to the NIC (preferred, the default:
// reported only), fails unless every one was (required), or reads
// nothing (off).
const (
	OffloadOff       = "off"
	OffloadPreferred = "preferred"
	OffloadRequired  = "required"
)

// OffloadOrDefault is the offload mode (default preferred).
func (s *CheckSpec) OffloadOrDefault() string { return orElse(s.Offload, OffloadPreferred) }

// CheckThresholds are the pass/fail limits; 0 (or absent) = not checked.
type CheckThresholds struct {
	MinMpps        float64 `yaml:"min_mpps"`
	MinLineRatePct float64 `yaml:"min_linerate_pct"`
	MaxLossPct     float64 `yaml:"max_loss_pct"`
	MaxP99Us       float64 `yaml:"max_p99_us"`
}

// Topologies and transports of the check.
const (
	TopologyThroughBridge = "through-bridge"
	TopologyThroughPorts  = "through-ports"
	TransportVhostUser    = "vhost-user"
	TransportMemif        = "memif"
)

// Defaults of the check section's fields.
const (
	DefaultCheckFrameSize = 64
	DefaultCheckDuration  = 5 * time.Second
	DefaultCheckWarmup    = time.Second
	MaxCheckDuration      = time.Hour
	MaxCheckFlows         = 64512 // source ports 1024..65535
	MaxCheckCores         = 64
)

var (
	rateRe  = regexp.MustCompile(`^(?i)([0-9]+(\.[0-9]+)?)(pps|kpps|mpps|kbps|mbps|gbps|%)$`)
	netnsRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
)

// TopologyOrDefault is the topology (default through-bridge).
func (s *CheckSpec) TopologyOrDefault() string { return orElse(s.Topology, TopologyThroughBridge) }

// TransportOrDefault is the through-bridge transport (default vhost-user).
func (s *CheckSpec) TransportOrDefault() string { return orElse(s.Transport, TransportVhostUser) }

// Sizes are the frame sizes, one run each (default 64).
func (s *CheckSpec) Sizes() []int {
	switch {
	case len(s.FrameSizes) > 0:
		return s.FrameSizes
	case s.FrameSize > 0:
		return []int{s.FrameSize}
	}
	return []int{DefaultCheckFrameSize}
}

// DurationOrDefault is the measured interval (default 5s; validated).
func (s *CheckSpec) DurationOrDefault() time.Duration {
	d, err := time.ParseDuration(s.Duration)
	if s.Duration == "" || err != nil {
		return DefaultCheckDuration
	}
	return d
}

// WarmupOrDefault is the traffic before the measured interval (default 1s;
// "0s" = none).
func (s *CheckSpec) WarmupOrDefault() time.Duration {
	d, err := time.ParseDuration(s.Warmup)
	if s.Warmup == "" || err != nil {
		return DefaultCheckWarmup
	}
	return d
}

// FlowsOrDefault and CoresOrDefault: 1 when unset.
func (s *CheckSpec) FlowsOrDefault() int { return max(s.Flows, 1) }
func (s *CheckSpec) CoresOrDefault() int { return max(s.Cores, 1) }

// BridgeIn returns the bridge under test: the named one, else the only
// bridge of the playbook's ovs section ("" when that is not one bridge).
func (s *CheckSpec) BridgeIn(o *OVSSpec) string {
	if s.Bridge != "" {
		return s.Bridge
	}
	if o != nil && len(o.Bridges) == 1 {
		return o.Bridges[0].Name
	}
	return ""
}

func orElse(v, d string) string {
	if v == "" {
		return d
	}
	return v
}

// Validate checks the section alone (see ValidateWith for the bridge).
func (s *CheckSpec) Validate() []FieldError { return s.ValidateWith(nil) }

// ValidateWith checks every field; o is the playbook's ovs section (nil
// when absent), for the default bridge and the through-ports port names.
func (s *CheckSpec) ValidateWith(o *OVSSpec) []FieldError {
	v := &checkValidator{}
	v.topology(s, o)
	v.traffic(s)
	v.thresholds(s.Thresholds)
	v.search(s)
	v.load(s, o)
	switch s.Offload {
	case "", OffloadOff, OffloadPreferred, OffloadRequired:
	default:
		v.add("offload", "want off, preferred (report whether the check's flows were offloaded) or required (fail unless they were), got %s", shortValue(s.Offload))
	}
	return v.errs
}

type checkValidator struct{ errs []FieldError }

func (v *checkValidator) add(f, format string, a ...any) {
	v.errs = append(v.errs, FieldError{f, fmt.Sprintf(format, a...)})
}

func (v *checkValidator) topology(s *CheckSpec, o *OVSSpec) {
	topo := s.TopologyOrDefault()
	switch topo {
	case TopologyThroughBridge, TopologyThroughPorts:
	default:
		v.add("topology", "want through-bridge (temporary ports rig adds to the bridge) or through-ports (in one of the bridge's ports, out another), got %q", s.Topology)
	}
	v.bridge(s, o)
	if topo == TopologyThroughBridge {
		switch s.Transport {
		case "", TransportVhostUser, TransportMemif:
		default:
			v.add("transport", "want vhost-user (default) or memif, got %q", s.Transport)
		}
		if len(s.Ports) > 0 {
			v.add("ports", "only through-ports takes ports (through-bridge adds its own rig-chk- ports); remove ports or set topology: through-ports")
		}
		if s.FarEndNetNS != "" {
			v.add("far_end_netns", "only through-ports takes far_end_netns; remove it or set topology: through-ports")
		}
		if len(s.FarEnds) > 0 || s.Direction != "" {
			v.add("far_ends", "only through-ports takes far_ends and direction; remove them or set topology: through-ports")
		}
		return
	}
	if topo != TopologyThroughPorts {
		return
	}
	if s.Transport != "" {
		v.add("transport", "only through-bridge takes a transport (through-ports uses the bridge's own ports); remove it")
	}
	v.ports(s, o)
	v.farEnds(s)
	if s.FarEndNetNS != "" && (len(s.FarEndNetNS) > MaxNameLen*4 || !netnsRe.MatchString(s.FarEndNetNS)) {
		v.add("far_end_netns", "want a network namespace name (a file under /run/netns: letters, digits, '_', '.', '-'), got %s", shortValue(s.FarEndNetNS))
	}
}

func (v *checkValidator) bridge(s *CheckSpec, o *OVSSpec) {
	if s.Bridge != "" {
		if len(s.Bridge) > MaxNameLen || !ovsNameRe.MatchString(s.Bridge) {
			v.add("bridge", "want a bridge name of at most %d letters, digits, '_', '.', '-', got %s", MaxNameLen, shortValue(s.Bridge))
		}
		return
	}
	switch {
	case o == nil || len(o.Bridges) == 0:
		v.add("bridge", "no bridge to check: name it (bridge: br0), or add the bridge to the playbook's ovs section")
	case len(o.Bridges) > 1:
		names := make([]string, len(o.Bridges))
		for i, b := range o.Bridges {
			names[i] = b.Name
		}
		v.add("bridge", "the ovs section has %d bridges (%s); name the one to check", len(o.Bridges), strings.Join(names, ", "))
	}
}

// ports: through-ports needs two distinct bridge port names; when the
// bridge is in the playbook, both must be its ports.
func (v *checkValidator) ports(s *CheckSpec, o *OVSSpec) {
	if len(s.Ports) != 2 {
		v.add("ports", "through-ports needs exactly two ports, [ingress, egress] (e.g. [p0, pf0hpf]), got %d", len(s.Ports))
		return
	}
	if s.Ports[0] == s.Ports[1] && s.Ports[0] != "" {
		v.add("ports[1]", "same port as ports[0]; traffic must leave by another port")
	}
	var known map[string]bool
	if o != nil {
		for _, b := range o.Bridges {
			if b.Name == s.BridgeIn(o) {
				known = map[string]bool{}
				for _, p := range b.Ports {
					known[p.Name] = true
				}
			}
		}
	}
	for i, p := range s.Ports {
		f := fmt.Sprintf("ports[%d]", i)
		switch {
		case len(p) > MaxNameLen || !ovsNameRe.MatchString(p):
			v.add(f, "want a port name of at most %d letters, digits, '_', '.', '-', got %s", MaxNameLen, shortValue(p))
		case strings.HasPrefix(p, "rig-chk-"):
			v.add(f, "%q is a temporary port of rig's own check (prefix rig-chk-); name one of the bridge's ports", p)
		case known != nil && !known[p]:
			v.add(f, "bridge %s in the ovs section has no port %q; name one of its ports", s.BridgeIn(o), p)
		}
	}
}

func (v *checkValidator) traffic(s *CheckSpec) {
	if s.FrameSize != 0 && len(s.FrameSizes) > 0 {
		v.add("frame_sizes", "give frame_size or frame_sizes, not both")
	}
	if s.FrameSize != 0 && (s.FrameSize < 64 || s.FrameSize > 9000) {
		v.add("frame_size", "want 64..9000 bytes (FCS included), got %d", s.FrameSize)
	}
	for i, fs := range s.FrameSizes {
		if fs < 64 || fs > 9000 {
			v.add(fmt.Sprintf("frame_sizes[%d]", i), "want 64..9000 bytes (FCS included), got %d", fs)
		}
	}
	if len(s.FrameSizes) > 16 {
		v.add("frame_sizes", "at most 16 sizes (one run each), got %d", len(s.FrameSizes))
	}
	v.duration("duration", s.Duration, time.Second/10, "e.g. 5s")
	v.duration("warmup", s.Warmup, 0, "e.g. 1s, or 0s for none")
	if s.Rate != "" && s.LoadKind() != LoadMax && !rateRe.MatchString(strings.TrimSpace(s.Rate)) {
		v.add("rate", "want \"\" (the zero-loss search), a rate like 1Mpps, 500kpps, 10Gbps or 50%% (of line rate), or max (as fast as possible, judged by the loss budget), got %s", shortValue(s.Rate))
	} else if m := rateRe.FindStringSubmatch(strings.TrimSpace(s.Rate)); m != nil {
		if n, _ := strconv.ParseFloat(m[1], 64); n <= 0 || (m[3] == "%" && n > 100) {
			v.add("rate", "want more than 0 (and at most 100%%), got %s", s.Rate)
		}
	}
	if s.Flows < 0 || s.Flows > MaxCheckFlows {
		v.add("flows", "want 1..%d distinct 5-tuples, got %d", MaxCheckFlows, s.Flows)
	}
	if s.Cores < 0 || s.Cores > MaxCheckCores {
		v.add("cores", "want 1..%d dataplane cores, got %d", MaxCheckCores, s.Cores)
	}
}

func (v *checkValidator) duration(f, val string, minD time.Duration, eg string) {
	if val == "" {
		return
	}
	d, err := time.ParseDuration(val)
	switch {
	case err != nil:
		v.add(f, "want a duration (%s), got %s", eg, shortValue(val))
	case d < minD:
		v.add(f, "want at least %v, got %s", minD, val)
	case d > MaxCheckDuration:
		v.add(f, "want at most %v, got %s", MaxCheckDuration, val)
	}
}

func (v *checkValidator) thresholds(t CheckThresholds) {
	for _, x := range []struct {
		f   string
		val float64
		max float64
	}{
		{"thresholds.min_mpps", t.MinMpps, 1e4}, {"thresholds.min_linerate_pct", t.MinLineRatePct, 100},
		{"thresholds.max_loss_pct", t.MaxLossPct, 100}, {"thresholds.max_p99_us", t.MaxP99Us, 1e9},
	} {
		if x.val < 0 || x.val > x.max || math.IsNaN(x.val) {
			v.add(x.f, "want 0 (not checked) up to %g, got %g", x.max, x.val)
		}
	}
}
