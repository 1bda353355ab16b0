package pcidev

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"path"
	"sort"
	"strings"

	"rig/internal/host"
)

// The bind step's guard: binding a PCI function to a user-space driver
// takes every netdev of the function away from the kernel at once, and
// with them every netdev stacked on them (a bond, a bridge, a VLAN: the
// kernel's upper_* links). However the playbook names the function (a PCI
// address, a netdev, a VF's address or netdev), the guard resolves the
// function's netdevs from sysfs (every /sys/class/net entry whose device
// is the function) and refuses, unless `force: true`, when one of them or
// of their upper devices:
//   - carries the default route (IPv4 or IPv6): the way this host reaches
//     other networks, its management interface in most setups;
//   - carries other routes (/proc/net/route, /proc/net/ipv6_route; IPv6
//     link-local and multicast routes, which every up netdev has, do not
//     count), as dpdk-devbind.py refuses;
//   - holds the local address of an established TCP session
//     (/proc/net/tcp, /proc/net/tcp6): an ssh session into this host;
//   - is a BlueField management port (oob_net0, tmfifo_net0).
// A netdev's addresses come from /proc/net/if_inet6 (IPv6) and, on the
// live host, from the kernel (RTM_GETADDR, Go's net.Interface.Addrs) for
// IPv4, which /proc does not list per netdev; under --root (a fixture)
// IPv4 sessions are matched by the netdev's IPv4 routes instead (the
// kernel's prefix route of each address).

// mgmtPorts are the BlueField's management netdevs (smartnic roles oob,
// tmfifo): the out-of-band 1GbE port and RShim's virtual Ethernet.
var mgmtPorts = map[string]string{
	"oob_net0":    "the BlueField's out-of-band management port",
	"tmfifo_net0": "the RShim virtual Ethernet between host and BlueField Arm",
}

// cutReasons lists why binding fn would cut this host off (empty: none).
func (s *bindStep) cutReasons(fn pciFn) ([]string, error) {
	devs, err := functionNetdevs(s.h, fn.bdf)
	if err != nil {
		return nil, err
	}
	if fn.netdev != "" && !contains(devs, fn.netdev) {
		devs = append(devs, fn.netdev)
	}
	all := withUppers(s.h, devs)
	routes, err := readRoutes(s.h)
	if err != nil {
		return nil, err
	}
	sessions, err := readTCPSessions(s.h)
	if err != nil {
		return nil, err
	}
	v6, err := readIfInet6(s.h)
	if err != nil {
		return nil, err
	}
	var reasons []string
	for _, d := range all {
		via := ""
		if d.via != "" {
			via = fmt.Sprintf(" (stacked on %s)", d.via)
		}
		if what, ok := mgmtPorts[d.name]; ok {
			reasons = append(reasons, fmt.Sprintf("%s%s is %s", d.name, via, what))
		}
		var def, other []string
		for _, r := range routes {
			if r.iface != d.name {
				continue
			}
			if r.isDefault() {
				def = append(def, r.String())
			} else if !r.ignored() {
				other = append(other, r.String())
			}
		}
		if len(def) > 0 {
			reasons = append(reasons, fmt.Sprintf("%s%s carries the default route (%s): the way this host reaches other networks", d.name, via, strings.Join(def, ", ")))
		}
		if len(other) > 0 {
			reasons = append(reasons, fmt.Sprintf("%s%s carries routes (%s)", d.name, via, strings.Join(limit(other, 4), ", ")))
		}
		holds := netdevHolds(s.h, d.name, v6, routes)
		var live []string
		n := 0
		for _, c := range sessions {
			if holds(c.local.IP) {
				n++
				if len(live) < 3 {
					live = append(live, c.String())
				}
			}
		}
		if n > 0 {
			reasons = append(reasons, fmt.Sprintf("%s%s holds the local address of %d established TCP session(s) (%s; /proc/net/tcp): an ssh session into this host would end",
				d.name, via, n, strings.Join(live, ", ")))
		}
	}
	return reasons, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func limit(list []string, n int) []string {
	if len(list) <= n {
		return list
	}
	return append(list[:n:n], fmt.Sprintf("%d more", len(list)-n))
}

// functionNetdevs lists the netdevs whose device is PCI function bdf
// (directly or through a virtio device below it), sorted.
func functionNetdevs(h *host.Host, bdf string) ([]string, error) {
	links, err := h.Glob("/sys/class/net/*")
	if err != nil {
		return nil, fmt.Errorf("list /sys/class/net: %w", err)
	}
	var out []string
	for _, l := range links {
		name := path.Base(l)
		dev, err := netdevDevice(h, name)
		if err != nil {
			continue // a virtual netdev (no device link)
		}
		if pciOf(dev) == bdf {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// stacked is a netdev the bind takes away: one of the function's, or an
// upper device over one (via names the one it is stacked on).
type stacked struct{ name, via string }

// withUppers adds every upper device (bond, bridge, VLAN, macvlan: the
// kernel's /sys/class/net/X/upper_NAME links), recursively.
func withUppers(h *host.Host, devs []string) []stacked {
	var out []stacked
	seen := map[string]bool{}
	var walk func(name, via string)
	walk = func(name, via string) {
		if seen[name] {
			return
		}
		seen[name] = true
		out = append(out, stacked{name, via})
		ups, _ := h.Glob("/sys/class/net/" + name + "/upper_*")
		sort.Strings(ups)
		for _, u := range ups {
			walk(strings.TrimPrefix(path.Base(u), "upper_"), name)
		}
	}
	for _, d := range devs {
		walk(d, "")
	}
	return out
}

// route is one row of /proc/net/route or /proc/net/ipv6_route.
type route struct {
	iface string
	dst   net.IPNet
}

func (r route) isDefault() bool {
	ones, _ := r.dst.Mask.Size()
	return ones == 0
}

// ignored: IPv6 link-local (fe80::/10) and multicast (ff00::/8) routes,
// which the kernel adds on every up netdev, and local host routes in
// ipv6_route's local table are no sign the netdev is in use.
func (r route) ignored() bool {
	ip := r.dst.IP
	return ip.To4() == nil && (ip.IsLinkLocalUnicast() || ip.IsMulticast() || ip.IsLinkLocalMulticast())
}

func (r route) String() string {
	if r.isDefault() {
		if r.dst.IP.To4() != nil {
			return "0.0.0.0/0"
		}
		return "::/0"
	}
	return r.dst.String()
}

// readRoutes reads the IPv4 main table (/proc/net/route) and every IPv6
// route (/proc/net/ipv6_route); a missing file is no routes.
func readRoutes(h *host.Host) ([]route, error) {
	var out []route
	for _, f := range []struct {
		file  string
		parse func(string) []route
	}{{"/proc/net/route", parseRoute4}, {"/proc/net/ipv6_route", parseRoute6}} {
		text, err := h.ReadString(f.file)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, f.parse(text)...)
	}
	return out, nil
}

// parseRoute4 reads /proc/net/route: a header, then "Iface Destination
// Gateway Flags RefCnt Use Metric Mask MTU Window IRTT", addresses as 8
// hex digits in the kernel's (little-endian) byte order.
func parseRoute4(text string) []route {
	var out []route
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || f[0] == "Iface" {
			continue
		}
		dst, ok1 := hexIPv4(f[1])
		mask, ok2 := hexIPv4(f[7])
		if !ok1 || !ok2 {
			continue
		}
		m := net.IPMask(mask.To4())
		if _, bits := m.Size(); bits == 0 {
			continue // not a prefix mask: no route the kernel writes
		}
		out = append(out, route{iface: f[0], dst: net.IPNet{IP: dst, Mask: m}})
	}
	return out
}

// parseRoute6 reads /proc/net/ipv6_route: "dest destlen src srclen
// nexthop metric refcnt use flags iface", dest as 32 hex digits (network
// order), lengths as 2 hex digits.
func parseRoute6(text string) []route {
	var out []route
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 10 {
			continue
		}
		dst, ok := hexIPv6(f[0], false)
		var plen uint8
		if _, err := fmt.Sscanf(f[1], "%02x", &plen); !ok || err != nil || len(f[1]) != 2 || plen > 128 {
			continue
		}
		out = append(out, route{iface: f[9], dst: net.IPNet{IP: dst, Mask: net.CIDRMask(int(plen), 128)}})
	}
	return out
}

// tcpSession is one established TCP connection.
type tcpSession struct{ local, remote net.TCPAddr }

func (c tcpSession) String() string { return c.local.String() + " <- " + c.remote.String() }

// readTCPSessions lists the established sessions of /proc/net/tcp and
// /proc/net/tcp6 (a missing file is none).
func readTCPSessions(h *host.Host) ([]tcpSession, error) {
	var out []tcpSession
	for _, f := range []struct {
		file string
		v6   bool
	}{{"/proc/net/tcp", false}, {"/proc/net/tcp6", true}} {
		text, err := h.ReadString(f.file)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, parseTCP(text, f.v6)...)
	}
	return out, nil
}

// tcpEstablished is TCP_ESTABLISHED in /proc/net/tcp's st column.
const tcpEstablished = "01"

// parseTCP reads /proc/net/tcp(6): a header, then "sl local_address
// rem_address st ...", each address HEXIP:HEXPORT, the IP in the
// kernel's byte order (32-bit words, little-endian on the machines rig
// runs on), the port big-endian hex.
func parseTCP(text string, v6 bool) []tcpSession {
	var out []tcpSession
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || f[3] != tcpEstablished {
			continue
		}
		l, ok1 := hexAddrPort(f[1], v6)
		r, ok2 := hexAddrPort(f[2], v6)
		if ok1 && ok2 {
			out = append(out, tcpSession{local: l, remote: r})
		}
	}
	return out
}

func hexAddrPort(s string, v6 bool) (net.TCPAddr, bool) {
	ipHex, portHex, ok := strings.Cut(s, ":")
	if !ok || len(portHex) != 4 {
		return net.TCPAddr{}, false
	}
	var port uint16
	if _, err := fmt.Sscanf(portHex, "%04X", &port); err != nil {
		return net.TCPAddr{}, false
	}
	var ip net.IP
	if v6 {
		ip, ok = hexIPv6(ipHex, true)
	} else {
		ip, ok = hexIPv4(ipHex)
	}
	if !ok {
		return net.TCPAddr{}, false
	}
	if m := ip.To4(); m != nil {
		ip = m // an IPv4-mapped address of a tcp6 socket is the IPv4 address
	}
	return net.TCPAddr{IP: ip, Port: int(port)}, true
}

// hexIPv4 decodes 8 hex digits in the kernel's little-endian order.
func hexIPv4(s string) (net.IP, bool) {
	b, ok := hexBytes(s, 4)
	if !ok {
		return nil, false
	}
	return net.IPv4(b[3], b[2], b[1], b[0]).To4(), true
}

// hexIPv6 decodes 32 hex digits: four little-endian 32-bit words when
// words (the tcp6 table), else network order (ipv6_route, if_inet6).
func hexIPv6(s string, words bool) (net.IP, bool) {
	b, ok := hexBytes(s, 16)
	if !ok {
		return nil, false
	}
	if words {
		for i := 0; i < 16; i += 4 {
			b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
		}
	}
	return net.IP(b), true
}

func hexBytes(s string, n int) ([]byte, bool) {
	if len(s) != 2*n {
		return nil, false
	}
	b := make([]byte, n)
	for i := 0; i < n; i++ {
		var v byte
		for _, c := range s[2*i : 2*i+2] {
			v <<= 4
			switch {
			case c >= '0' && c <= '9':
				v |= byte(c - '0')
			case c >= 'a' && c <= 'f':
				v |= byte(c - 'a' + 10)
			case c >= 'A' && c <= 'F':
				v |= byte(c - 'A' + 10)
			default:
				return nil, false
			}
		}
		b[i] = v
	}
	return b, true
}

// ifAddr6 is one row of /proc/net/if_inet6.
type ifAddr6 struct {
	iface string
	ip    net.IP
}

// readIfInet6 reads /proc/net/if_inet6: "ADDR IFINDEX PLEN SCOPE FLAGS
// NAME", ADDR 32 hex digits in network order (a missing file is none: no
// IPv6).
func readIfInet6(h *host.Host) ([]ifAddr6, error) {
	text, err := h.ReadString("/proc/net/if_inet6")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseIfInet6(text), nil
}

func parseIfInet6(text string) []ifAddr6 {
	var out []ifAddr6
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) != 6 {
			continue
		}
		if ip, ok := hexIPv6(f[0], false); ok {
			out = append(out, ifAddr6{iface: f[5], ip: ip})
		}
	}
	return out
}

// netdevHolds says whether an address is netdev name's: its IPv6 ones
// from if_inet6; IPv4 ones from the kernel on the live host; under a
// fixture root (no kernel to ask, and /proc lists no IPv4 address per
// netdev) an IPv4 address inside one of the netdev's own IPv4 prefix
// routes (the route the kernel adds with each address).
func netdevHolds(h *host.Host, name string, v6 []ifAddr6, routes []route) func(net.IP) bool {
	var addrs []net.IP
	for _, a := range v6 {
		if a.iface == name {
			addrs = append(addrs, a.ip)
		}
	}
	var prefixes []net.IPNet
	if h.IsRealRoot() {
		if ifc, err := net.InterfaceByName(name); err == nil {
			if list, err := ifc.Addrs(); err == nil {
				for _, a := range list {
					if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
						addrs = append(addrs, n.IP.To4())
					}
				}
			}
		}
	} else {
		for _, r := range routes {
			if r.iface == name && !r.isDefault() && r.dst.IP.To4() != nil {
				prefixes = append(prefixes, r.dst)
			}
		}
	}
	return func(ip net.IP) bool {
		for _, a := range addrs {
			if a.Equal(ip) {
				return true
			}
		}
		for _, p := range prefixes {
			if p.Contains(ip) {
				return true
			}
		}
		return false
	}
}
