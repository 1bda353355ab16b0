package peer

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"rig/bench"
	"rig/internal/devargs"
	"rig/internal/pci"
)

// FarPolicy is what a serve host lets a near side's far config use,
// fixed when serve starts: every other device or option is refused.
type FarPolicy struct {
	// Netdevs are the netdevs a net_af_packet port may open (iface=),
	// serve's --allow-netdev.
	Netdevs []string
	// PCI are the PCI functions a port may name (canonical addresses),
	// serve's --allow-pci.
	PCI []string
	// MemifDir is the directory serve owns (0700) that every net_memif
	// socket is put in; "" refuses net_memif.
	MemifDir string
	// HostPFs are the allowed netdevs that are a BlueField's host PFs, by
	// PF number (serve finds them in sysfs, or --host-pf N=NETDEV): a near
	// side on the card's Arm, which cannot know their names, asks for PF N
	// as iface=HostPFIface(N).
	HostPFs map[int]string
}

// HostPFIface is the iface= a near side gives for the far host's PF n
// (the far end of the Arm's pf<n>hpf): serve puts the netdev of its
// HostPFs there, and refuses it when it knows none.
func HostPFIface(n int) string { return fmt.Sprintf("hostpf:%d", n) }

// resolveHostPF replaces a vdev's iface=hostpf:N by the netdev of p.HostPFs.
func resolveHostPF(p *FarPolicy, v string) (string, error) {
	parts := devargs.Split(v)
	for i, kv := range parts {
		val, ok := strings.CutPrefix(kv, "iface=hostpf:")
		if !ok {
			continue
		}
		n, ok := 0, len(val) == 1 && val[0] >= '0' && val[0] <= '9'
		if ok {
			n = int(val[0] - '0')
		}
		nd, known := p.HostPFs[n]
		if !ok || !known {
			return "", farRefusal(fmt.Sprintf("--vdev %q: serve knows no host PF %s among its --allow-netdev", v, val),
				"start serve with --allow-netdev <that PF's netdev> (serve finds BlueField PFs in sysfs), or --host-pf "+val+"=NETDEV")
		}
		parts[i] = "iface=" + nd
	}
	return strings.Join(parts, ","), nil
}

// farDriver is a vdev driver serve runs and the options it takes, each
// with a check of its value ("" = fine).
type farDriver struct {
	name  string
	alias string
	opts  map[string]func(p *FarPolicy, v string) string
}

var (
	farNumber   = regexp.MustCompile(`^[0-9]{1,9}$`)
	farSockName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	farSecret   = regexp.MustCompile(`^[A-Za-z0-9._-]{1,24}$`)
	farMAC      = regexp.MustCompile(`^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$`)
	// a vdev instance: the driver's name (or alias) and digits, nothing
	// else: DPDK's vdev bus picks the first driver whose name or alias is
	// a prefix of the device name (drivers/bus/vdev/vdev.c vdev_parse), and
	// no DPDK 22.11 driver name or alias is a prefix of net_null, net_ring,
	// net_memif, net_af_packet or their aliases, so with digits after it
	// the name resolves to that driver alone
	farInstance = regexp.MustCompile(`^([a-z_]+?)([0-9]*)$`)
	// a PCI port's option values (mlx5 numbers, a representor list)
	farPCIValue = regexp.MustCompile(`^[A-Za-z0-9_.:\[\],-]{1,64}$`)
)

func number(_ *FarPolicy, v string) string {
	if !farNumber.MatchString(v) {
		return "want a decimal number"
	}
	return ""
}

func matches(re *regexp.Regexp, want string) func(*FarPolicy, string) string {
	return func(_ *FarPolicy, v string) string {
		if !re.MatchString(v) {
			return want
		}
		return ""
	}
}

func oneOf(vals ...string) func(*FarPolicy, string) string {
	return func(_ *FarPolicy, v string) string {
		if slices.Contains(vals, v) {
			return ""
		}
		return "want " + strings.Join(vals, " or ")
	}
}

// farDrivers are the vdev drivers serve runs (DPDK 22.11 names and the
// aliases RTE_PMD_REGISTER_ALIAS gives them) with every option each
// takes (valid_arguments in the PMD's source) that touches nothing but
// the run's own memory, the allowed netdevs and serve's memif dir.
// net_ring takes none: nodeaction creates or attaches rings by name and
// internal is a pointer the PMD dereferences (rte_eth_ring.c).
var farDrivers = []farDriver{
	{name: "net_null", alias: "eth_null", opts: map[string]func(*FarPolicy, string) string{
		"size": number, "copy": oneOf("0", "1"), "no-rx": oneOf("0", "1"),
	}},
	{name: "net_ring", alias: "eth_ring", opts: map[string]func(*FarPolicy, string) string{}},
	{name: "net_af_packet", alias: "eth_af_packet", opts: map[string]func(*FarPolicy, string) string{
		"iface": func(p *FarPolicy, v string) string {
			if slices.Contains(p.Netdevs, v) {
				return ""
			}
			return "netdev " + v + " is not one serve was started with (--allow-netdev)"
		},
		"qpairs": number, "blocksz": number, "framesz": number, "framecnt": number, "qdisc_bypass": oneOf("0", "1"),
	}},
	{name: "net_memif", opts: map[string]func(*FarPolicy, string) string{
		"id": number, "role": oneOf("server", "client"), "bsize": number, "rsize": number,
		"socket":          matches(farSockName, "want a socket name (letters, digits, . _ -; no '/'): serve puts it in its own directory"),
		"socket-abstract": oneOf("no"),
		"mac":             matches(farMAC, "want xx:xx:xx:xx:xx:xx"),
		"zero-copy":       oneOf("yes", "no"),
		"secret":          matches(farSecret, "want 1..24 of letters, digits, . _ -"),
	}},
}

// dpdkAliases are DPDK 22.11's vdev driver aliases (RTE_PMD_REGISTER_ALIAS)
// of drivers serve does not run, so that a refusal names the driver.
var dpdkAliases = map[string]string{
	"eth_pcap": "net_pcap", "eth_vhost": "net_vhost", "eth_af_xdp": "net_af_xdp", "virtio_user": "net_virtio_user", "eth_bond": "net_bonding",
}

// resolveVdevDriver is the DPDK driver a vdev name selects: its prefix
// (the name less its instance digits) resolved through the aliases, and
// the served driver (nil: not served).
func resolveVdevDriver(dev string) (prefix, driver string, d *farDriver) {
	m := farInstance.FindStringSubmatch(dev)
	if m == nil {
		return "", "", nil
	}
	prefix = m[1]
	for i := range farDrivers {
		if prefix == farDrivers[i].name || (farDrivers[i].alias != "" && prefix == farDrivers[i].alias) {
			return prefix, farDrivers[i].name, &farDrivers[i]
		}
	}
	if real, ok := dpdkAliases[prefix]; ok {
		return prefix, real, nil
	}
	return prefix, prefix, nil
}

// servedDrivers names the drivers serve runs, for a refusal's fix.
func servedDrivers() string {
	var n []string
	for _, d := range farDrivers {
		n = append(n, d.name)
	}
	return strings.Join(n, ", ")
}

// farRefusal is a far config serve does not run: what and the fix.
func farRefusal(what, fix string) error {
	return bench.NewError("far config", errors.New(what), "serve runs receivers, forwarders and generators on the devices its host allowed when it started, nothing that reads or writes its host's files", fix)
}

// parseFarDevargs splits devargs into the device and its options,
// refusing what the allow-list cannot read unambiguously: an empty
// device or option, an option without '=', a key given twice.
func parseFarDevargs(s string) (dev string, keys []string, vals map[string]string, err error) {
	if s == "" {
		return "", nil, nil, errors.New("empty")
	}
	if strings.ContainsAny(s, " \t\r\n\"'\x00") {
		return "", nil, nil, errors.New("holds white space or quotes")
	}
	if strings.Count(s, "[") != strings.Count(s, "]") {
		return "", nil, nil, errors.New("unbalanced brackets")
	}
	parts := devargs.Split(s)
	dev, vals = parts[0], map[string]string{}
	if dev == "" {
		return "", nil, nil, errors.New("no device before the first comma")
	}
	for _, kv := range parts[1:] {
		k, v, ok := strings.Cut(kv, "=")
		switch {
		case kv == "":
			return "", nil, nil, errors.New("an empty option (two commas in a row or a trailing comma)")
		case !ok || k == "":
			return "", nil, nil, fmt.Errorf("option %q is not key=value", kv)
		}
		if _, dup := vals[k]; dup {
			return "", nil, nil, fmt.Errorf("option %s given twice", k)
		}
		keys = append(keys, k)
		vals[k] = v
	}
	return dev, keys, vals, nil
}

// checkFarVdev checks one --peer-vdev against the policy and returns it
// as serve runs it (a memif socket moved into p.MemifDir) and its name.
func checkFarVdev(p *FarPolicy, v string) (out, name string, err error) {
	flag := fmt.Sprintf("--vdev %q", v)
	dev, keys, vals, err := parseFarDevargs(v)
	if err != nil {
		return "", "", farRefusal(flag+": "+err.Error(), "write <driver><n>[,key=value...], e.g. net_af_packet0,iface=p0")
	}
	prefix, driver, d := resolveVdevDriver(dev)
	if d == nil {
		what := fmt.Sprintf("%s: driver %s is not served", flag, driver)
		switch {
		case prefix == "":
			what = fmt.Sprintf("%s: device %q is not a driver name and digits (net_null0)", flag, dev)
		case prefix != driver:
			what = fmt.Sprintf("%s: driver %s (%s is DPDK's alias of it) is not served", flag, driver, prefix)
		}
		return "", "", farRefusal(what, "use one of "+servedDrivers()+" on the far side, or run that part on the far host itself")
	}
	for _, k := range keys {
		check, ok := d.opts[k]
		if !ok {
			allowed := make([]string, 0, len(d.opts))
			for a := range d.opts {
				allowed = append(allowed, a)
			}
			sort.Strings(allowed)
			list := "none"
			if len(allowed) > 0 {
				list = strings.Join(allowed, ", ")
			}
			return "", "", farRefusal(fmt.Sprintf("%s: option %s of %s is not served (served: %s)", flag, k, d.name, list), "leave it out, or run that part on the far host itself")
		}
		if strings.ContainsRune(vals[k], '/') {
			return "", "", farRefusal(fmt.Sprintf("%s: option %s=%s holds '/'", flag, k, vals[k]), "no option served to a near side names a path")
		}
		if why := check(p, vals[k]); why != "" {
			fix := "fix the value"
			if k == "iface" {
				fix = "start serve with --allow-netdev " + vals[k] + ", or run that part on the far host itself"
			}
			return "", "", farRefusal(fmt.Sprintf("%s: %s=%s: %s", flag, k, vals[k], why), fix)
		}
	}
	if d.name == "net_af_packet" && vals["iface"] == "" {
		return "", "", farRefusal(flag+": net_af_packet without iface=", "name the netdev: iface=<one of serve's --allow-netdev>")
	}
	if d.name != "net_memif" {
		return v, dev, nil
	}
	if p.MemifDir == "" {
		return "", "", farRefusal(flag+": net_memif is not served here (serve has no memif directory)", "run that part on the far host itself")
	}
	// the socket goes into serve's own directory, never elsewhere: a path
	// socket there (socket-abstract=no), named as the near side asked
	sock := vals["socket"]
	if sock == "" {
		sock = "memif.sock"
	}
	out = dev
	for _, k := range keys {
		if k != "socket" && k != "socket-abstract" {
			out += "," + k + "=" + vals[k]
		}
	}
	out += ",socket=" + filepath.Join(p.MemifDir, sock) + ",socket-abstract=no"
	return out, dev, nil
}

// checkFarPort checks a port: a vdev's name (one of vdevs) or an allowed
// PCI function with options of rig's profiles or a representor list.
func checkFarPort(p *FarPolicy, port string, vdevs map[string]bool) error {
	flag := fmt.Sprintf("--port %q", port)
	dev, keys, vals, err := parseFarDevargs(port)
	if err != nil || strings.Contains(port, "/") {
		why := "holds '/'"
		if err != nil {
			why = err.Error()
		}
		return farRefusal(flag+": "+why, "write a --peer-vdev name or a PCI address")
	}
	if vdevs[dev] && len(keys) == 0 {
		return nil
	}
	addr, ok := pci.Canonical(dev)
	if !ok {
		return farRefusal(flag+": names neither a --peer-vdev nor a PCI address", "name a --peer-vdev device or a PCI function the far serve allows (--allow-pci)")
	}
	if !slices.Contains(p.PCI, addr) {
		return farRefusal(fmt.Sprintf("%s: PCI function %s is not one serve was started with (--allow-pci)", flag, addr),
			"start serve with --allow-pci "+addr+", or run that part on the far host itself")
	}
	opts := farPCIOptions()
	for _, k := range keys {
		if !opts[k] {
			return farRefusal(fmt.Sprintf("%s: option %s is not served on a PCI port (served: representor and the profiles' %s)", flag, k, strings.Join(farPCIProfileKeys(), ", ")),
				"leave it out, or run that part on the far host itself")
		}
		if !farPCIValue.MatchString(vals[k]) {
			return farRefusal(fmt.Sprintf("%s: %s=%s: want a number or a bracketed list", flag, k, vals[k]), "fix the value")
		}
	}
	return nil
}

// farPCIProfileKeys are the options rig's profiles put on PCI ports.
func farPCIProfileKeys() []string {
	seen := map[string]bool{}
	var out []string
	for _, pr := range bench.Profiles() {
		for _, kv := range pr.Devargs {
			k, _, _ := strings.Cut(kv, "=")
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

func farPCIOptions() map[string]bool {
	m := map[string]bool{"representor": true}
	for _, k := range farPCIProfileKeys() {
		m[k] = true
	}
	return m
}

// checkFarConfig decodes and checks a far config before any EAL: the
// roles a far side plays (rx, fwd; gen and loop for a check's far ends:
// rig's own synthetic frames, out of the allowed devices only), nothing that reads or writes the far
// host's files (a pcap, a hugetlbfs dir, EAL's own options or file
// prefix), only the devices and options of the allow-list (farDrivers,
// p's netdevs and PCI functions; memif sockets moved into p.MemifDir),
// then Config.Validate as `rig bench run-json` does. It returns the
// config serve runs.
func checkFarConfig(raw json.RawMessage, p *FarPolicy) (bench.Config, error) {
	var cfg bench.Config
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return cfg, bench.NewError("far config", err, "", "run the same rig version on both hosts")
	}
	refuse := func(what string) (bench.Config, error) {
		return cfg, farRefusal(what+" is not served", "run that part on the far host itself")
	}
	switch {
	case cfg.Role != bench.RoleRx && cfg.Role != bench.RoleFwd && cfg.Role != bench.RoleGen && cfg.Role != bench.RoleLoop:
		return refuse(fmt.Sprintf("role %q (a far side receives, forwards, generates or loops)", cfg.Role))
	case cfg.Pcap != "":
		return refuse("--pcap")
	case cfg.HugeDir != "":
		return refuse("--huge-dir")
	case cfg.FilePrefix != "":
		return refuse("an EAL file prefix")
	case len(cfg.EAL) > 0:
		return refuse("--eal " + strings.Join(cfg.EAL, " "))
	case len(cfg.VDevs)+len(cfg.Ports) > 8:
		return refuse(fmt.Sprintf("%d devices", len(cfg.VDevs)+len(cfg.Ports)))
	}
	names := map[string]bool{}
	for i, v := range cfg.VDevs {
		v, err := resolveHostPF(p, v)
		if err != nil {
			return cfg, err
		}
		out, name, err := checkFarVdev(p, v)
		if err != nil {
			return cfg, err
		}
		if names[name] {
			return cfg, farRefusal(fmt.Sprintf("--vdev %s given twice", name), "give each far device once")
		}
		names[name] = true
		cfg.VDevs[i] = out
	}
	for _, port := range cfg.Ports {
		if err := checkFarPort(p, port, names); err != nil {
			return cfg, err
		}
	}
	v := cfg
	v.Defaults() // a zero field means its default, as in run-json
	if err := v.Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// memifSocketsIn are the socket paths of cfg's memif vdevs inside dir
// (serve removes a stale one before a run: each run's server binds anew).
func memifSocketsIn(cfg bench.Config, dir string) []string {
	var out []string
	for _, v := range cfg.VDevs {
		name, kv := bench.MemifDevargs(v)
		if strings.HasPrefix(name, "net_memif") && filepath.Dir(kv["socket"]) == dir {
			out = append(out, kv["socket"])
		}
	}
	return out
}

// removeStaleSocket removes path when it is a socket (never another kind
// of file).
func removeStaleSocket(path string) error {
	st, err := os.Lstat(path)
	if err != nil || st.Mode()&os.ModeSocket == 0 {
		return nil
	}
	return os.Remove(path)
}
