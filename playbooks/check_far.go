package playbooks

import (
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// FarEnd is where a through-ports port's far end is (check.far_ends.PORT,
// or rig's --far-end PORT:...): a network namespace on this machine
// (netns, as far_end_netns), or a port on another machine served by
// `rig bench serve` (serve: HOST:PORT, the far port by netdev or by PCI
// function, the token file serve was started with).
//
//	far_ends:
//	  p0:     {serve: 10.0.0.2:7400, netdev: ens1f0np0, token_file: /etc/rig/peer.token}
//	  pf0hpf: {serve: 192.168.100.1:7400, netdev: ens1f0np0}   # the x86 host across tmfifo_net0
//	  p1:     {netns: wire}
type FarEnd struct {
	NetNS     string `yaml:"netns"`
	Serve     string `yaml:"serve"`
	Netdev    string `yaml:"netdev"`
	PCI       string `yaml:"pci"`
	TokenFile string `yaml:"token_file"`
}

// Defaults of a far end on another machine.
const (
	// DefaultServePort is the port rig bench serve listens on for a
	// check's far ends unless told otherwise.
	DefaultServePort = 7400
	// DefaultHostAddr is the x86 host's address across tmfifo_net0 by the
	// BlueField convention (the Arm is 192.168.100.2).
	DefaultHostAddr = "192.168.100.1"
	// DefaultTokenFile is the token file of a far end that names none.
	DefaultTokenFile = "/etc/rig/peer.token"
	// DirectionOne and DirectionBoth: through-ports traffic in at
	// ports[0] and out at ports[1] only (default), or that and back.
	DirectionOne  = "one"
	DirectionBoth = "both"
)

// TokenFileOrDefault is the far end's token file (default DefaultTokenFile).
func (f FarEnd) TokenFileOrDefault() string { return orElse(f.TokenFile, DefaultTokenFile) }

// Remote reports whether the far end is on another machine (a serve).
func (f FarEnd) Remote() bool { return f.Serve != "" }

// String is the far end in --far-end's syntax.
func (f FarEnd) String() string {
	var kv []string
	for _, x := range [][2]string{{"netns", f.NetNS}, {"serve", f.Serve}, {"netdev", f.Netdev}, {"pci", f.PCI}, {"token_file", f.TokenFile}} {
		if x[1] != "" {
			kv = append(kv, x[0]+"="+x[1])
		}
	}
	return strings.Join(kv, ",")
}

// DirectionOrDefault is the check's direction (default one).
func (s *CheckSpec) DirectionOrDefault() string { return orElse(s.Direction, DirectionOne) }

var (
	farPCIRe    = regexp.MustCompile(`^([0-9A-Fa-f]{4}:)?[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$`)
	farNetdevRe = regexp.MustCompile(`^[A-Za-z0-9_.:@-]{1,15}$`)
)

// validateFarEnds checks far_ends and direction (through-ports only).
func (v *checkValidator) farEnds(s *CheckSpec) {
	switch s.Direction {
	case "", DirectionOne, DirectionBoth:
	default:
		v.add("direction", "want one (in at ports[0], out at ports[1]; the default) or both (that, then back), got %s", shortValue(s.Direction))
	}
	if s.Direction == DirectionBoth && s.IsSearch() {
		v.add("direction", "direction: both runs each frame size each way at a fixed load; the zero-loss search (no rate, or search: ndr) runs one way: give a rate (e.g. rate: 100kpps or rate: max), or one direction")
	}
	keys := make([]string, 0, len(s.FarEnds))
	for k := range s.FarEnds {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, port := range keys {
		f := "far_ends." + port
		if len(s.Ports) == 2 && port != s.Ports[0] && port != s.Ports[1] {
			v.add(f, "%q is not one of the check's ports (%s); far_ends are keyed by check.ports", port, strings.Join(s.Ports, ", "))
			continue
		}
		e := s.FarEnds[port]
		for _, fe := range CheckFarEnd(e) {
			v.add(f+"."+fe.Field, "%s", fe.Msg)
		}
		if _, hostPF := HostPFRepresentor(port); e.Remote() && e.Netdev == "" && e.PCI == "" && !hostPF {
			// a host-PF representor's far port is the host's PF by default
			v.add(f+".netdev", "serve %s: name the far port on that machine: netdev=NETDEV or pci=BDF (only a host-PF representor's, pfNhpf, defaults: the host's PF N)", e.Serve)
		}
	}
}

// CheckFarEnd validates one far end; field names are its keys.
func CheckFarEnd(e FarEnd) []FieldError {
	var errs []FieldError
	add := func(f, format string, a ...any) { errs = append(errs, FieldError{f, fmt.Sprintf(format, a...)}) }
	switch {
	case e.NetNS != "" && e.Serve != "":
		add("netns", "give netns (a namespace on this machine) or serve (another machine's rig bench serve), not both")
	case e.NetNS == "" && e.Serve == "":
		add("serve", "want serve: HOST:PORT of the far machine's rig bench serve (e.g. %s:%d), or netns: NAME on this machine", DefaultHostAddr, DefaultServePort)
	}
	if e.NetNS != "" {
		if len(e.NetNS) > MaxNameLen*4 || !netnsRe.MatchString(e.NetNS) {
			add("netns", "want a network namespace name (a file under /run/netns), got %s", shortValue(e.NetNS))
		}
		if e.PCI != "" || e.TokenFile != "" {
			add("netns", "a far end in a netns takes netdev at most (pci and token_file are for serve)")
		}
	}
	if e.Serve != "" {
		host, port, err := net.SplitHostPort(e.Serve)
		n, perr := strconv.Atoi(port)
		if err != nil || host == "" || perr != nil || n < 1 || n > 65535 || strings.ContainsAny(host, " /") {
			add("serve", "want HOST:PORT of rig bench serve (e.g. %s:%d, [fd00::1]:%d), got %s", DefaultHostAddr, DefaultServePort, DefaultServePort, shortValue(e.Serve))
		}
		if e.Netdev != "" && e.PCI != "" {
			add("pci", "name the far port by netdev or by pci, not both")
		}
	}
	if e.Netdev != "" && (!farNetdevRe.MatchString(e.Netdev) || e.Netdev == "." || e.Netdev == "..") {
		add("netdev", "want a netdev name (1..15 of letters, digits, _ . : @ -), got %s", shortValue(e.Netdev))
	}
	if e.PCI != "" && !farPCIRe.MatchString(e.PCI) {
		add("pci", "want a PCI function (0000:03:00.0), got %s", shortValue(e.PCI))
	}
	if e.TokenFile != "" && (!filepath.IsAbs(e.TokenFile) || controlChar(e.TokenFile) != "") {
		add("token_file", "want an absolute path, got %s", shortValue(e.TokenFile))
	}
	return errs
}

// ParseFarEndFlag reads one --far-end value, PORT:key=value[,key=value...]
// with the keys of FarEnd (netns, serve, netdev, pci, token_file), e.g.
// p0:serve=10.0.0.2:7400,netdev=ens1f0np0,token_file=/etc/rig/peer.token.
func ParseFarEndFlag(v string) (string, FarEnd, error) {
	var e FarEnd
	port, rest, ok := strings.Cut(v, ":")
	if !ok || port == "" || rest == "" {
		return "", e, fmt.Errorf("--far-end %s: want PORT:key=value,... (e.g. p0:serve=10.0.0.2:%d,netdev=ens1f0np0)", shortValue(v), DefaultServePort)
	}
	if len(port) > MaxNameLen || !ovsNameRe.MatchString(port) {
		return "", e, fmt.Errorf("--far-end %s: %s is not a bridge port name", shortValue(v), shortValue(port))
	}
	seen := map[string]bool{}
	for _, kv := range strings.Split(rest, ",") {
		k, val, ok := strings.Cut(kv, "=")
		k = strings.ReplaceAll(k, "-", "_")
		if !ok || val == "" {
			return "", e, fmt.Errorf("--far-end %s: %s is not key=value (keys: netns, serve, netdev, pci, token_file)", shortValue(v), shortValue(kv))
		}
		if seen[k] {
			return "", e, fmt.Errorf("--far-end %s: %s given twice", shortValue(v), k)
		}
		seen[k] = true
		switch k {
		case "netns":
			e.NetNS = val
		case "serve":
			e.Serve = val
		case "netdev":
			e.Netdev = val
		case "pci":
			e.PCI = val
		case "token_file":
			e.TokenFile = val
		default:
			return "", e, fmt.Errorf("--far-end %s: unknown key %s (keys: netns, serve, netdev, pci, token_file)", shortValue(v), shortValue(k))
		}
	}
	for _, fe := range CheckFarEnd(e) {
		return "", e, fmt.Errorf("--far-end %s: %s: %s", shortValue(v), fe.Field, fe.Msg)
	}
	return port, e, nil
}

// SetFarEnds puts --far-end values over the playbook's check.far_ends
// (a port given replaces the playbook's far end of it) and checks the
// result: a port that is not one of check.ports, a check that is not
// through-ports.
func (s *CheckSpec) SetFarEnds(flags []string) error {
	for _, v := range flags {
		port, e, err := ParseFarEndFlag(v)
		if err != nil {
			return err
		}
		if s.TopologyOrDefault() != TopologyThroughPorts {
			return fmt.Errorf("--far-end %s: the check is %s: far ends are for topology: through-ports", shortValue(v), s.TopologyOrDefault())
		}
		if len(s.Ports) == 2 && port != s.Ports[0] && port != s.Ports[1] {
			return fmt.Errorf("--far-end %s: %s is not one of the check's ports (%s)", shortValue(v), port, strings.Join(s.Ports, ", "))
		}
		if s.FarEnds == nil {
			s.FarEnds = map[string]FarEnd{}
		}
		s.FarEnds[port] = e
	}
	return nil
}

// HostPFRepresentor is the host PF number a representor stands for
// (pf0hpf: 0), ok false for any other port name.
func HostPFRepresentor(port string) (int, bool) {
	m := hostPFRepRe.FindStringSubmatch(port)
	if m == nil {
		return 0, false
	}
	n, _ := strconv.Atoi(m[1])
	return n, true
}

var hostPFRepRe = regexp.MustCompile(`^pf([0-9])hpf$`)
