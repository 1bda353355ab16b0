package playbooks

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"rig/internal/cpuset"
	"rig/internal/devargs"
)

// OVSSpec is the `ovs` section: DPDK settings of ovs-vswitchd and the
// netdev bridges with their DPDK ports.
//
//	ovs:
//	  config:                       # Open_vSwitch other_config; absent keys are left alone
//	    dpdk-init: try              # true | try | false
//	    dpdk-socket-mem: "1024,0"   # MB per NUMA socket
//	    dpdk-socket-limit: "2048"
//	    dpdk-lcore-mask: "0x1"
//	    pmd-cpu-mask: "0x6"
//	    pmd-maxsleep: "500"         # µs a PMD thread may sleep when its queues are
//	                                # nearly idle (OvS 3.1; 0..10000, default 0: it spins)
//	    dpdk-extra: "--no-pci"
//	    hw-offload: false
//	    per-port-memory: true       # a pool per port sized to it (OvS's shared pools
//	                                # first ask for 262144 mbufs per MTU)
//	  prune: false                  # true: delete bridges/ports not listed here
//	  bridges:
//	    - name: br-phy
//	      datapath_type: netdev     # default netdev
//	      ports:
//	        - name: p0
//	          type: dpdk            # dpdk (default) | dpdkvhostuser | dpdkvhostuserclient
//	          devargs: "0000:03:00.0"
//	          n_rxq: 2
//	          mtu_request: 9000
//	        - name: pf0hpf
//	          devargs: "0000:03:00.0,representor=[65535]"
//	        - name: p1
//	          netdev: p1              # instead of devargs: rig resolves the netdev's
//	                                  # mlx5 devargs at check time (smartnic.ResolveNetdev)
//	          mlx5_args: "txq_inline_max=1024"  # with netdev: appended mlx5 PMD options
//
// NVIDIA's OVS-DOCA (BlueField Arm images, DOCA hosts) takes dpdk ports
// with neither devargs nor netdev: it resolves the port's name as a kernel
// netdev itself. The playbook says the OvS is OVS-DOCA with doca-init:
//
//	ovs:
//	  config:
//	    doca-init: true             # other_config:doca-init (OVS-DOCA only)
//	    hw-offload: true
//	  bridges:
//	    - name: br-sfc
//	      ports:
//	        - name: p0              # type dpdk, no devargs: OVS-DOCA resolves p0
//	        - name: pf0hpf
//	          mtu_request: 9216
//
// Without doca-init: true such a port is refused at validation (upstream
// Open vSwitch rejects it: "'p0' is missing 'options:dpdk-devargs'"), and
// the ovs step refuses a doca-init playbook on an Open vSwitch that is not
// OVS-DOCA before it writes anything.
type OVSSpec struct {
	Config  OVSConfig   `yaml:"config"`
	Prune   bool        `yaml:"prune"`
	Bridges []OVSBridge `yaml:"bridges"`
}

// OVSConfig are the Open_vSwitch other_config keys rig manages. They only
// take effect when ovs-vswitchd restarts; the step restarts it.
type OVSConfig struct {
	DPDKInit        string `yaml:"dpdk-init"`
	DPDKSocketMem   string `yaml:"dpdk-socket-mem"`
	DPDKSocketLimit string `yaml:"dpdk-socket-limit"`
	DPDKLcoreMask   string `yaml:"dpdk-lcore-mask"`
	PMDCPUMask      string `yaml:"pmd-cpu-mask"`
	// PMDMaxSleep is OvS 3.1's other_config:pmd-maxsleep: the longest a
	// PMD thread sleeps, in µs, while none of its rx queues gets half a
	// batch per poll (lib/dpif-netdev.c load-based sleeping; 3.2 renamed
	// it pmd-sleep-max). 0 or absent: the PMD spins, a whole CPU each.
	PMDMaxSleep string `yaml:"pmd-maxsleep"`
	DPDKExtra   string `yaml:"dpdk-extra"`
	HWOffload   *bool  `yaml:"hw-offload"`
	// PerPortMemory: OvS's shared pools first ask for 262144 mbufs per
	// MTU and halve until one fits; while EAL grows to dpdk-socket-limit
	// and gives it back, other DPDK allocations in ovs-vswitchd fail
	// (e.g. a vhost-user queue: "failed to allocate memory for batching
	// copy"). Per-port pools are sized to the port.
	PerPortMemory *bool `yaml:"per-port-memory"`
	// DOCAInit is OVS-DOCA's other_config:doca-init (NVIDIA DPF
	// DPUFlavors set it with hw-offload): it starts DOCA, and DPDK with it,
	// and lets dpdk ports go without devargs. Upstream OvS ignores it.
	DOCAInit *bool `yaml:"doca-init"`
}

// OtherConfig returns the keys set in the playbook, as OvS spells them.
func (c OVSConfig) OtherConfig() map[string]string {
	m := map[string]string{}
	set := func(k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	set("dpdk-init", c.DPDKInit)
	set("dpdk-socket-mem", c.DPDKSocketMem)
	set("dpdk-socket-limit", c.DPDKSocketLimit)
	set("dpdk-lcore-mask", c.DPDKLcoreMask)
	set("pmd-cpu-mask", c.PMDCPUMask)
	set("pmd-maxsleep", c.PMDMaxSleep)
	set("dpdk-extra", c.DPDKExtra)
	if c.HWOffload != nil {
		m["hw-offload"] = strconv.FormatBool(*c.HWOffload)
	}
	if c.PerPortMemory != nil {
		m["per-port-memory"] = strconv.FormatBool(*c.PerPortMemory)
	}
	if c.DOCAInit != nil {
		m["doca-init"] = strconv.FormatBool(*c.DOCAInit)
	}
	return m
}

// DOCA reports a playbook that says the OvS is NVIDIA's OVS-DOCA
// (config.doca-init: true).
func (s *OVSSpec) DOCA() bool { return s.Config.DOCAInit != nil && *s.Config.DOCAInit }

// OVSBridge is one bridge.
type OVSBridge struct {
	Name         string    `yaml:"name"`
	DatapathType string    `yaml:"datapath_type"`
	Ports        []OVSPort `yaml:"ports"`
}

// Datapath returns the datapath type (default netdev).
func (b OVSBridge) Datapath() string {
	if b.DatapathType == "" {
		return "netdev"
	}
	return b.DatapathType
}

// OVSPort is one port (with its one interface of the same name).
type OVSPort struct {
	Name    string `yaml:"name"`
	Type    string `yaml:"type"`
	Devargs string `yaml:"devargs"`
	// Netdev names the kernel netdev (p0, pf0hpf, enp59s0f0np0) whose mlx5
	// devargs rig resolves from sysfs at check time; exactly one of Devargs
	// and Netdev for a dpdk port. In a virtual lab the port attaches
	// through af_packet on that netdev instead, and rig says so.
	Netdev string `yaml:"netdev"`
	// MLX5Args are mlx5 PMD options ("key=value,...", DPDK's mlx5 guide)
	// appended to the devargs a Netdev resolves to; dropped, and said so,
	// where a lab substitutes af_packet for mlx5.
	MLX5Args        string `yaml:"mlx5_args"`
	NRxq            int    `yaml:"n_rxq"`
	MTURequest      int    `yaml:"mtu_request"`
	VhostServerPath string `yaml:"vhost-server-path"`
}

// ByNetdevName reports a dpdk port with neither devargs nor netdev: one
// that OVS-DOCA resolves by its name (valid only with doca-init: true).
func (p OVSPort) ByNetdevName() bool {
	return p.PortType() == "dpdk" && p.Devargs == "" && p.Netdev == ""
}

// PortType returns the interface type (default dpdk).
func (p OVSPort) PortType() string {
	if p.Type == "" {
		return "dpdk"
	}
	return p.Type
}

var (
	ovsNameRe  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	hexMaskRe  = regexp.MustCompile(`^(0[xX])?[0-9a-fA-F]+$`)
	memListRe  = regexp.MustCompile(`^[0-9]+(,[0-9]+)*$`)
	portTypes  = map[string]bool{"dpdk": true, "dpdkvhostuser": true, "dpdkvhostuserclient": true}
	datapaths  = map[string]bool{"netdev": true, "system": true}
	devargsBad = " \t\n\"'"
)

// Input limits, checked before anything touches OvS (a 200,000-byte devargs
// otherwise reaches exec as "argument list too long" after the bridge was
// already created).
const (
	// MaxNameLen is IFNAMSIZ-1: a bridge's internal port is a kernel netdev
	// (a tap for netdev bridges) with the bridge's name, and port names are
	// kept to the same limit so every name rig writes can be an interface.
	MaxNameLen = 15
	// MaxDevargsLen: the longest real devargs (mlx5 with a representor list
	// and a handful of key=value options) is a few hundred bytes; 1024 keeps
	// room for that and stays far below the kernel's 128 KiB per-argument
	// exec limit (MAX_ARG_STRLEN).
	MaxDevargsLen = 1024
	// MaxDevNameLen: DPDK keeps the device part of devargs (before the first
	// comma) in a char[RTE_DEV_NAME_MAX_LEN] = 64, NUL included.
	MaxDevNameLen = 63
	// MaxConfigLen bounds every other_config value (dpdk-extra is the only
	// free-form one: a line of EAL arguments).
	MaxConfigLen = 1024
	// MaxPMDSleepUS is the largest other_config:pmd-maxsleep OvS takes
	// (vswitchd/vswitch.xml: maxInteger 10000).
	MaxPMDSleepUS = 10000
	// MaxSocketPathLen is sun_path (108) less the NUL.
	MaxSocketPathLen = 107
)

// shortValue renders a value for an error message without echoing a huge one.
func shortValue(v string) string {
	if len(v) <= 60 {
		return strconv.Quote(v)
	}
	return strconv.Quote(v[:40]) + fmt.Sprintf("... (%d bytes)", len(v))
}

// Validate checks the section's values.
func (s *OVSSpec) Validate() []FieldError {
	v := &ovsValidator{bridges: map[string]int{}, ports: map[string]string{}, devargs: map[string]string{}, netdevs: map[string]string{}, doca: s.DOCA()}
	v.config(s.Config)
	for bi, b := range s.Bridges {
		v.bridge(bi, b)
	}
	return v.errs
}

// ovsValidator collects the ovs section's field errors, and the names and
// devargs seen so far (for duplicates across bridges).
type ovsValidator struct {
	errs    []FieldError
	bridges map[string]int    // bridge name -> index
	ports   map[string]string // port name -> field
	devargs map[string]string // devargs -> field
	netdevs map[string]string // netdev -> field
	doca    bool              // config.doca-init: true (ports may go by netdev name)
}

func (v *ovsValidator) add(f, format string, a ...any) {
	v.errs = append(v.errs, FieldError{f, fmt.Sprintf(format, a...)})
}

func (v *ovsValidator) config(c OVSConfig) {
	add := v.add
	for _, kv := range []struct{ f, v string }{{"config.dpdk-init", c.DPDKInit}, {"config.dpdk-socket-mem", c.DPDKSocketMem},
		{"config.dpdk-socket-limit", c.DPDKSocketLimit}, {"config.dpdk-lcore-mask", c.DPDKLcoreMask}, {"config.pmd-cpu-mask", c.PMDCPUMask},
		{"config.dpdk-extra", c.DPDKExtra}} {
		if len(kv.v) > MaxConfigLen {
			add(kv.f, "value is %d bytes, more than the %d an other_config value may have; shorten it", len(kv.v), MaxConfigLen)
		}
	}
	switch c.DPDKInit {
	case "", "true", "try", "false":
	default:
		add("config.dpdk-init", "want true, try or false, got %q", c.DPDKInit)
	}
	for _, kv := range []struct{ f, v string }{{"config.dpdk-socket-mem", c.DPDKSocketMem}, {"config.dpdk-socket-limit", c.DPDKSocketLimit}} {
		if kv.v != "" && !memListRe.MatchString(kv.v) {
			add(kv.f, "want MB per NUMA socket, comma-separated in socket order (e.g. \"1024\" or \"1024,0\"), got %q", kv.v)
		}
	}
	for _, kv := range []struct{ f, v string }{{"config.dpdk-lcore-mask", c.DPDKLcoreMask}, {"config.pmd-cpu-mask", c.PMDCPUMask}} {
		if kv.v == "" {
			continue
		}
		if !hexMaskRe.MatchString(kv.v) {
			add(kv.f, "want a hex CPU mask like 0x6, got %s", shortValue(kv.v))
		} else if _, err := cpuset.ParseMask(kv.v); err != nil {
			add(kv.f, "%v; write a mask of the CPUs to use, e.g. 0x6 for CPUs 1 and 2", err)
		} else if strings.Trim(strings.TrimPrefix(strings.TrimPrefix(kv.v, "0x"), "0X"), "0") == "" {
			add(kv.f, "mask %q selects no CPU", kv.v)
		}
	}
	if c.PMDMaxSleep != "" {
		if n, err := strconv.ParseUint(c.PMDMaxSleep, 10, 32); err != nil || n > MaxPMDSleepUS {
			add("config.pmd-maxsleep", "want microseconds from 0 to %d (OvS's limit), got %s", MaxPMDSleepUS, shortValue(c.PMDMaxSleep))
		}
	}
	if strings.ContainsAny(c.DPDKExtra, "\n\r") {
		add("config.dpdk-extra", "must be one line of EAL arguments")
	}
}

func (v *ovsValidator) bridge(bi int, b OVSBridge) {
	add, bridges := v.add, v.bridges
	bf := fmt.Sprintf("bridges[%d]", bi)
	switch {
	case len(b.Name) > MaxNameLen:
		add(bf+".name", "%s is longer than %d bytes (the bridge's internal netdev is a kernel interface: IFNAMSIZ); use a shorter name", shortValue(b.Name), MaxNameLen)
	case !ovsNameRe.MatchString(b.Name):
		add(bf+".name", "want a bridge name of letters, digits, '_', '.', '-' (starting with a letter or digit), got %q", b.Name)
	}
	if j, dup := bridges[b.Name]; dup && b.Name != "" {
		add(bf+".name", "same name as bridges[%d]", j)
	}
	bridges[b.Name] = bi
	if b.DatapathType != "" && !datapaths[b.DatapathType] {
		add(bf+".datapath_type", "want netdev (OvS-DPDK) or system, got %q", b.DatapathType)
	}
	for pi, p := range b.Ports {
		v.port(fmt.Sprintf("%s.ports[%d]", bf, pi), b, p)
	}
}

func (v *ovsValidator) port(pf string, b OVSBridge, p OVSPort) {
	add, ports, bridges := v.add, v.ports, v.bridges
	if len(p.Name) > MaxNameLen {
		add(pf+".name", "%s is longer than %d bytes (IFNAMSIZ, the kernel's interface name limit); use a shorter name", shortValue(p.Name), MaxNameLen)
	} else if !ovsNameRe.MatchString(p.Name) {
		add(pf+".name", "want a port name of letters, digits, '_', '.', '-' (starting with a letter or digit), got %q", p.Name)
	} else if other, dup := ports[p.Name]; dup {
		add(pf+".name", "port %q is already listed at %s", p.Name, other)
	} else if _, clash := bridges[p.Name]; clash {
		add(pf+".name", "port %q has a bridge's name", p.Name)
	}
	ports[p.Name] = pf
	t := p.PortType()
	if !portTypes[t] {
		add(pf+".type", "want dpdk, dpdkvhostuser or dpdkvhostuserclient, got %q", p.Type)
	}
	if b.Datapath() != "netdev" {
		add(pf+".type", "%s ports need a netdev bridge (datapath_type: netdev)", t)
	}
	v.portDevice(pf, t, p)
	if p.NRxq < 0 || p.NRxq > 1024 {
		add(pf+".n_rxq", "want 1..1024, got %d", p.NRxq)
	}
	if p.MTURequest != 0 && (p.MTURequest < 68 || p.MTURequest > 65535) {
		add(pf+".mtu_request", "want 68..65535, got %d", p.MTURequest)
	}
	switch {
	case t == "dpdkvhostuserclient" && p.VhostServerPath == "":
		add(pf+".vhost-server-path", "a dpdkvhostuserclient port needs the socket path the VM (QEMU) serves")
	case t != "dpdkvhostuserclient" && p.VhostServerPath != "":
		add(pf+".vhost-server-path", "only dpdkvhostuserclient ports take vhost-server-path")
	case len(p.VhostServerPath) > MaxSocketPathLen:
		add(pf+".vhost-server-path", "%s is longer than %d bytes (a unix socket path); use a shorter path", shortValue(p.VhostServerPath), MaxSocketPathLen)
	case p.VhostServerPath != "" && !filepath.IsAbs(p.VhostServerPath):
		add(pf+".vhost-server-path", "want an absolute path, got %q", p.VhostServerPath)
	case strings.ContainsAny(p.VhostServerPath, "\t\n\r"):
		add(pf+".vhost-server-path", "%s holds a tab or a line break; write the socket path on one line without them", shortValue(p.VhostServerPath))
	}
}

// portDevice checks what backs a port: devargs or a netdev (exactly one
// for a dpdk port, neither for a vhost-user port) and mlx5_args.
func (v *ovsValidator) portDevice(pf, t string, p OVSPort) {
	add := v.add
	switch {
	case p.ByNetdevName() && v.doca:
		v.byName(pf, p)
	case p.ByNetdevName():
		add(pf+".devargs", "a dpdk port needs devargs: a PCI address (0000:03:00.0), a representor (0000:03:00.0,representor=[65535]) or a vdev (net_null0); "+
			"or give netdev: NAME (p0, pf0hpf) and rig resolves its devargs. A port named by its netdev alone works only on NVIDIA's OVS-DOCA: "+
			"if this host runs it, set ovs.config.doca-init: true (upstream Open vSwitch rejects the port: \"'%s' is missing 'options:dpdk-devargs'\")", p.Name)
	case t == "dpdk" && p.Devargs != "" && p.Netdev != "":
		add(pf+".netdev", "give devargs or netdev, not both: netdev %q resolves to its own devargs; to pass mlx5 options with a netdev use mlx5_args", p.Netdev)
	case t != "dpdk" && p.Netdev != "":
		add(pf+".netdev", "only dpdk ports take netdev")
	case p.Netdev != "":
		v.netdev(pf, p)
	default:
		v.rawDevargs(pf, t, p)
	}
	if p.MLX5Args != "" && p.Netdev == "" {
		add(pf+".mlx5_args", "mlx5_args go with netdev (they are appended to the devargs it resolves to); with devargs write the options into devargs")
	}
}

// byName checks a port OVS-DOCA resolves by its name: the name is the
// netdev, which no other port may back.
func (v *ovsValidator) byName(pf string, p OVSPort) {
	if other, dup := v.netdevs[p.Name]; dup {
		v.add(pf+".name", "netdev %q already backs %s (one device cannot back two ports)", p.Name, other)
	}
	v.netdevs[p.Name] = pf
}

// netdev checks a netdev name (the kernel's dev_valid_name rules) and
// mlx5_args.
func (v *ovsValidator) netdev(pf string, p OVSPort) {
	add := v.add
	switch n := p.Netdev; {
	case len(n) > MaxNameLen:
		add(pf+".netdev", "%s is longer than %d bytes (IFNAMSIZ); a netdev name is what `ip link` shows, e.g. p0", shortValue(n), MaxNameLen)
	case n == "." || n == ".." || strings.ContainsAny(n, "/: \t\n\"'") || !utf8.ValidString(n):
		add(pf+".netdev", "%s is not a netdev name (no '/', ':', whitespace or quotes; not . or ..); write the name `ip link` shows, e.g. p0 or pf0hpf", shortValue(n))
	case strings.ContainsAny(n, ",=[]"):
		add(pf+".netdev", "%s: rig cannot pass a netdev name with ',', '=', '[' or ']' through DPDK devargs; rename the netdev or give devargs", shortValue(n))
	default:
		if other, dup := v.netdevs[n]; dup {
			add(pf+".netdev", "netdev %q already backs %s (one device cannot back two ports)", n, other)
		}
		v.netdevs[n] = pf
	}
	if p.MLX5Args == "" {
		return
	}
	if msg := CheckMLX5Args(p.MLX5Args); msg != "" {
		add(pf+".mlx5_args", "%s: %s; write key=value pairs separated by commas, e.g. txq_inline_max=1024,txq_mpw_en=1", shortValue(p.MLX5Args), msg)
	}
}

// CheckMLX5Args checks mlx5_args: key=value pairs (DPDK devargs syntax)
// that do not name the device or a representor (the netdev decides
// those). It returns "" when they are fine.
func CheckMLX5Args(a string) string {
	if len(a) > MaxDevargsLen {
		return fmt.Sprintf("longer than %d bytes", MaxDevargsLen)
	}
	if msg := devargs.Check("net_x," + a); msg != "" {
		return msg
	}
	for _, kv := range devargs.Options("net_x," + a) {
		if k, _, _ := strings.Cut(kv, "="); k == "representor" || k == "class" {
			return fmt.Sprintf("%s is decided by the netdev, not by mlx5_args", k)
		}
	}
	return ""
}

// rawDevargs checks raw devargs.
func (v *ovsValidator) rawDevargs(pf, t string, p OVSPort) {
	add, seen := v.add, v.devargs
	switch {
	case t != "dpdk" && p.Devargs != "":
		add(pf+".devargs", "only dpdk ports take devargs")
	case len(p.Devargs) > MaxDevargsLen:
		add(pf+".devargs", "%s is longer than %d bytes; devargs are <pci-address|vdev-name>[,key=value...], e.g. 0000:03:00.0,representor=[65535]", shortValue(p.Devargs), MaxDevargsLen)
	case strings.ContainsAny(p.Devargs, devargsBad):
		add(pf+".devargs", "must not contain whitespace or quotes")
	case len(devargs.Device(p.Devargs)) > MaxDevNameLen:
		add(pf+".devargs", "device name %s is longer than %d bytes (DPDK's RTE_DEV_NAME_MAX_LEN); use a PCI address or a short vdev name", shortValue(devargs.Device(p.Devargs)), MaxDevNameLen)
	case p.Devargs != "" && devargs.Check(p.Devargs) != "":
		add(pf+".devargs", "malformed devargs %s: %s; write <pci-address|vdev-name>[,key=value...], e.g. 0000:03:00.0,representor=[65535] or net_null0", shortValue(p.Devargs), devargs.Check(p.Devargs))
	case p.Devargs != "":
		if other, dup := seen[p.Devargs]; dup {
			add(pf+".devargs", "same devargs as %s (one device cannot back two ports)", other)
		}
		seen[p.Devargs] = pf
	}
}
