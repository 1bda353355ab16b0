package ovs

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Where OvS-DPDK's per-port counters come from, and how fresh they are
// (measured on OvS 3.1.0 / DPDK 22.11 here; see ovs/testdata/counters/README.md):
//
//   - `ovs-ofctl dump-ports` asks ovs-vswitchd over OpenFlow and gets the
//     netdev's counters as they are now. A counter the netdev does not
//     support prints "?". With OpenFlow 1.4 or later negotiated the reply
//     also carries the custom counters (ovs_tx_failure_drops, the vhost
//     rx_q0_good_packets...) under "CUSTOM Statistics".
//   - The Interface `statistics` column is a copy ovs-vswitchd writes every
//     other_config:stats-update-interval ms (default and minimum 5000), so it
//     can be 5 s behind: a snapshot taken right after traffic stops may miss
//     the last seconds. A key whose value is unsupported is omitted.
//
// Which source is right depends on the port type:
//
//   - dpdk ports (PCI devices, representors, vdevs such as net_null): the
//     standard counters are DPDK's ethdev stats and exist whether traffic
//     flows or not; the custom ones are the ovs_* drops plus the PMD's
//     xstats (rx_q0_packets, and for mlx5 rx_discards_phy...). A PMD may
//     count no bytes (net_null: bytes=0 with millions of packets).
//   - vhost-user ports (dpdkvhostuser, dpdkvhostuserclient), OvS 3.1 on:
//     lib/netdev-dpdk.c netdev_dpdk_vhost_get_stats reads DPDK's
//     per-virtqueue statistics and returns EPROTO `if
//     (!is_vhost_running(dev))`; lib/netdev.c netdev_get_stats then sets
//     every counter to UINT64_MAX. So before a guest (virtio-user, a VM)
//     connects and after it disconnects, dump-ports prints "?" for every
//     counter and `statistics` holds only the ovs_* software drop counters
//     (ovs_tx_retries, ovs_tx_failure_drops, ovs_tx_mtu_exceeded_drops,
//     ovs_tx_qos_drops, ovs_rx_qos_drops, ovs_tx_invalid_hwol_drops), which
//     netdev_dpdk_vhost_get_custom_stats adds in any state. The virtqueue
//     counters start from zero at each connection. vhost "rx" is what the
//     guest sent (its TX virtqueue); tx_dropped is OvS failing to enqueue
//     to the guest (ring full after tx-retries-max) = ovs_tx_failure_drops.
//     That is why one try on OvS 3.1 saw only ovs_* keys "while traffic
//     flowed": the column was read while no guest was connected, or was
//     the copy written before it connected (measured here: 6 s after
//     testpmd started the column still held one port's pre-connection row).
//   - the bridge's own port (LOCAL, the tap named like the bridge):
//     kernel counters through netdev-linux.
//
// So a check reads counters with dump-ports (PortCounters) while the vhost
// guest is still connected, before and after the traffic, never after the
// guest exits, and treats Unknown counters as unknown, never as zero.

// Standard counter names (the Interface statistics keys).
const (
	RxPackets = "rx_packets"
	TxPackets = "tx_packets"
	RxBytes   = "rx_bytes"
	TxBytes   = "tx_bytes"
	RxDropped = "rx_dropped"
	TxDropped = "tx_dropped"
	RxErrors  = "rx_errors"
	TxErrors  = "tx_errors"
)

// Counters are one port's counters at one moment, or (after Sub) what
// changed between two moments.
type Counters struct {
	RxPackets uint64 `json:"rxPackets"`
	TxPackets uint64 `json:"txPackets"`
	RxBytes   uint64 `json:"rxBytes"`
	TxBytes   uint64 `json:"txBytes"`
	RxDropped uint64 `json:"rxDropped"`
	TxDropped uint64 `json:"txDropped"`
	RxErrors  uint64 `json:"rxErrors"`
	TxErrors  uint64 `json:"txErrors"`
	// Unknown names the counters (standard names like "rx_packets", or
	// custom ones) the source did not report ("?" in dump-ports, omitted
	// from statistics); their field is 0 and means nothing. After Sub it
	// also names counters that went backwards (a reset: the port was
	// re-added, vswitchd restarted, or a vhost guest reconnected).
	Unknown []string `json:"unknown,omitempty"`
	// Custom holds every other counter the source reported: DPDK's
	// ovs_* drop counters, driver and vhost per-queue counters
	// (rx_q0_good_packets), and the other standard keys (rx_crc_err,
	// collisions, rx_1_to_64_packets...).
	Custom map[string]uint64 `json:"custom,omitempty"`
	// Stale names the Custom keys taken from the Interface statistics
	// column (up to stats-update-interval old) rather than read live.
	Stale []string `json:"stale,omitempty"`
	// Duration is how long the port has existed in OpenFlow, in seconds
	// (dump-ports' "duration=", OpenFlow 1.3+; 0 = not reported). After
	// Sub it is the time between the two reads.
	Duration float64 `json:"durationSeconds,omitempty"`
}

// field returns a pointer to the standard counter name, or nil.
func (c *Counters) field(name string) *uint64 {
	switch name {
	case RxPackets:
		return &c.RxPackets
	case TxPackets:
		return &c.TxPackets
	case RxBytes:
		return &c.RxBytes
	case TxBytes:
		return &c.TxBytes
	case RxDropped:
		return &c.RxDropped
	case TxDropped:
		return &c.TxDropped
	case RxErrors:
		return &c.RxErrors
	case TxErrors:
		return &c.TxErrors
	}
	return nil
}

// StandardCounters are the names of Counters' fields, in statistics order.
var standardCounters = [...]string{RxPackets, TxPackets, RxBytes, TxBytes, RxDropped, TxDropped, RxErrors, TxErrors}

// StandardCounters returns the names of Counters' fields.
func StandardCounters() []string { return append([]string(nil), standardCounters[:]...) }

func (c Counters) isUnknown(name string) bool {
	for _, u := range c.Unknown {
		if u == name {
			return true
		}
	}
	return false
}

// Known reports whether counter name (standard or custom) was reported.
func (c Counters) Known(name string) bool {
	if c.isUnknown(name) {
		return false
	}
	if c.field(name) != nil {
		return true
	}
	_, ok := c.Custom[name]
	return ok
}

// Get returns counter name (standard or custom) and whether it is known.
func (c Counters) Get(name string) (uint64, bool) {
	if !c.Known(name) {
		return 0, false
	}
	if p := c.field(name); p != nil {
		return *p, true
	}
	return c.Custom[name], true
}

// set stores a counter by name: a standard one in its field, any other in Custom.
func (c *Counters) set(name string, v uint64) {
	if p := c.field(name); p != nil {
		*p = v
		return
	}
	if c.Custom == nil {
		c.Custom = map[string]uint64{}
	}
	c.Custom[name] = v
}

func (c *Counters) unknown(name string) {
	for _, u := range c.Unknown {
		if u == name {
			return
		}
	}
	c.Unknown = append(c.Unknown, name)
}

// Sub returns c - before, counter by counter. A counter unknown on either
// side, or smaller now than before (a reset), is Unknown in the result; a
// custom counter present on one side only is Unknown too. When both sides
// have a Duration and c's is smaller, the port was deleted and added again
// in between: every counter is Unknown. A reset followed by more counting
// than before is otherwise invisible, which matters for vhost ports: their
// counters restart at each guest connection, so keep the guest connected
// from the first read to the second.
func (c Counters) Sub(before Counters) Counters {
	var d Counters
	if c.Duration > 0 && before.Duration > 0 {
		if c.Duration < before.Duration {
			return readded(c, before)
		}
		d.Duration = c.Duration - before.Duration
	}
	for _, n := range standardCounters {
		a, okA := c.Get(n)
		b, okB := before.Get(n)
		if !okA || !okB || a < b {
			d.unknown(n)
			continue
		}
		*d.field(n) = a - b
	}
	names := map[string]bool{}
	for k := range c.Custom {
		names[k] = true
	}
	for k := range before.Custom {
		names[k] = true
	}
	for _, u := range append(append([]string(nil), c.Unknown...), before.Unknown...) {
		if d.field(u) == nil {
			names[u] = true
		}
	}
	for _, k := range slices.Sorted(maps.Keys(names)) {
		a, okA := c.Get(k)
		b, okB := before.Get(k)
		if !okA || !okB || a < b {
			d.unknown(k)
			continue
		}
		d.set(k, a-b)
	}
	d.Stale = mergeNames(c.Stale, before.Stale)
	return d
}

// readded is Sub's result for a port that was re-added between the reads.
func readded(c, before Counters) Counters {
	var d Counters
	d.Unknown = StandardCounters()
	names := map[string]bool{}
	for k := range c.Custom {
		names[k] = true
	}
	for k := range before.Custom {
		names[k] = true
	}
	d.Unknown = append(d.Unknown, slices.Sorted(maps.Keys(names))...)
	return d
}

func mergeNames(a, b []string) []string {
	set := map[string]bool{}
	for _, s := range append(append([]string(nil), a...), b...) {
		set[s] = true
	}
	if len(set) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(set))
}

// ---- ovs-ofctl dump-ports ----

// dumpPortsField maps dump-ports' names on the rx/tx lines to statistics keys.
var dumpPortsField = map[string]map[string]string{
	"rx": {"pkts": RxPackets, "bytes": RxBytes, "drop": RxDropped, "errs": RxErrors,
		"frame": "rx_frame_err", "over": "rx_over_err", "crc": "rx_crc_err"},
	"tx": {"pkts": TxPackets, "bytes": TxBytes, "drop": TxDropped, "errs": TxErrors, "coll": "collisions"},
}

// dumpPortsLine is one `port ...: rx ...` block being parsed.
type dumpPortsLine struct {
	name   string
	c      Counters
	rx, tx bool
	custom bool // inside the CUSTOM Statistics lines
}

// ParseDumpPorts parses `ovs-ofctl dump-ports [--names] BRIDGE` (any
// OpenFlow version) into counters by port: the name as OvS prints it,
// unquoted ("LOCAL", "dpdk0", "n 1"), or the port number without --names.
// The format is lib/ofp-port.c ofputil_format_port_stats (see
// hardware-formats.md §16): "  port <p>: rx pkts=N, bytes=N, drop=N,
// errs=N, frame=N, over=N, crc=N", "           tx pkts=N, bytes=N, drop=N,
// errs=N, coll=N", then optionally "duration=Ns", "rx rfc2819 k=N, ...",
// "tx rfc2819 k=N, ..." and "CUSTOM Statistics" followed by lines of
// "name=N," tokens. "?" is an unknown counter.
func ParseDumpPorts(out []byte) (map[string]Counters, error) {
	ports, _, err := parseDumpPorts(out)
	return ports, err
}

// parseDumpPorts also says which ports had a CUSTOM Statistics section.
func parseDumpPorts(out []byte) (map[string]Counters, map[string]bool, error) {
	ports := map[string]Counters{}
	withCustom := map[string]bool{}
	want, headers := 0, 0
	var cur *dumpPortsLine
	flush := func() error {
		if cur == nil {
			return nil
		}
		if !cur.rx || !cur.tx {
			return fmt.Errorf("dump-ports: port %s: no tx line", cur.name)
		}
		if _, dup := ports[cur.name]; dup {
			return fmt.Errorf("dump-ports: port %s listed twice", cur.name)
		}
		ports[cur.name] = cur.c
		withCustom[cur.name] = cur.custom
		cur = nil
		return nil
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for ln := 1; sc.Scan(); ln++ {
		line := strings.TrimRight(sc.Text(), " \r")
		t := strings.TrimSpace(line)
		var err error
		switch {
		case t == "":
		case strings.HasPrefix(t, "OFPST_PORT reply") || strings.HasPrefix(t, "OFPST_PORT_STATS reply"):
			n, e := portsInHeader(t)
			if e != nil {
				return nil, nil, fmt.Errorf("dump-ports: line %d: %w", ln, e)
			}
			want += n
			headers++
			err = flush()
		case strings.HasPrefix(t, "port "):
			if err = flush(); err == nil {
				cur, err = parsePortLine(t)
			}
		case cur == nil:
			err = fmt.Errorf("unexpected %q before the first port", t)
		default:
			err = cur.more(t)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("dump-ports: line %d: %w", ln, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("dump-ports: %w", err)
	}
	if err := flush(); err != nil {
		return nil, nil, err
	}
	if headers == 0 {
		return nil, nil, fmt.Errorf("dump-ports: no \"OFPST_PORT reply\" header (not ovs-ofctl dump-ports output)")
	}
	if len(ports) != want {
		return nil, nil, fmt.Errorf("dump-ports: header says %d ports, found %d", want, len(ports))
	}
	return ports, withCustom, nil
}

// portsInHeader reads N from "OFPST_PORT reply (xid=0x2): N ports".
func portsInHeader(t string) (int, error) {
	i := strings.LastIndex(t, ": ")
	if i < 0 {
		return 0, fmt.Errorf("header %q has no port count", t)
	}
	f := strings.Fields(t[i+2:])
	if len(f) == 0 || (f[len(f)-1] != "ports" && f[len(f)-1] != "port") || len(f) < 2 {
		return 0, fmt.Errorf("header %q has no port count", t)
	}
	n, err := strconv.Atoi(f[len(f)-2])
	if err != nil || n < 0 {
		return 0, fmt.Errorf("header %q: bad port count", t)
	}
	return n, nil
}

// parsePortLine parses "port <p>: rx k=v, ...".
func parsePortLine(t string) (*dumpPortsLine, error) {
	rest := strings.TrimLeft(strings.TrimPrefix(t, "port "), " ")
	name, rest, err := portName(rest)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(rest, ": rx ") {
		return nil, fmt.Errorf("port %s: want \": rx \" after the name, got %q", name, rest)
	}
	p := &dumpPortsLine{name: name}
	if err := p.stats("rx", rest[len(": rx "):]); err != nil {
		return nil, err
	}
	p.rx = true
	return p, nil
}

// portName reads a port name: a quoted string (with backslash escapes) or
// everything up to the first ':'.
func portName(s string) (name, rest string, err error) {
	if strings.HasPrefix(s, `"`) {
		for i := 1; i < len(s); i++ {
			switch s[i] {
			case '\\':
				i++
			case '"':
				n, err := strconv.Unquote(s[:i+1])
				if err != nil {
					n = s[1:i]
				}
				if n == "" {
					return "", "", fmt.Errorf("empty port name")
				}
				return n, s[i+1:], nil
			}
		}
		return "", "", fmt.Errorf("unterminated quoted port name in %q", s)
	}
	i := strings.IndexByte(s, ':')
	if i <= 0 {
		return "", "", fmt.Errorf("no port name in %q", s)
	}
	return s[:i], s[i:], nil
}

// stats parses "k=v, k=v, ..." of an rx or tx line.
func (p *dumpPortsLine) stats(dir, s string) error {
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("port %s: %s: %q is not key=value", p.name, dir, kv)
		}
		name, ok := dumpPortsField[dir][k]
		if !ok {
			return fmt.Errorf("port %s: %s: unknown counter %q", p.name, dir, k)
		}
		if err := p.put(name, v); err != nil {
			return err
		}
	}
	return nil
}

// put stores value v ("?" = unknown) of counter name.
func (p *dumpPortsLine) put(name, v string) error {
	if v == "?" {
		p.c.unknown(name)
		return nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return fmt.Errorf("port %s: %s=%q is not a counter", p.name, name, v)
	}
	p.c.set(name, n)
	return nil
}

// more parses a continuation line of the current port.
func (p *dumpPortsLine) more(t string) error {
	switch {
	case strings.HasPrefix(t, "tx ") && !p.tx && !strings.HasPrefix(t, "tx rfc2819 "):
		p.tx = true
		return p.stats("tx", t[len("tx "):])
	case !p.tx:
		return fmt.Errorf("port %s: want the tx line, got %q", p.name, t)
	case strings.HasPrefix(t, "duration="):
		v := strings.TrimSuffix(strings.TrimPrefix(t, "duration="), "s")
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
			return fmt.Errorf("port %s: bad %q", p.name, t)
		}
		p.c.Duration = f
		return nil
	case strings.HasPrefix(t, "rx rfc2819 "), strings.HasPrefix(t, "tx rfc2819 "):
		return p.rfc2819(t[:2], t[len("rx rfc2819 "):])
	case t == "CUSTOM Statistics":
		p.custom = true
		return nil
	case p.custom:
		return p.customStats(t)
	}
	return fmt.Errorf("port %s: unexpected line %q", p.name, t)
}

// rfc2819 parses "1_to_64_packets=N, ..., " into rx_/tx_ keys (as the
// statistics column names them).
func (p *dumpPortsLine) rfc2819(dir, s string) error {
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("port %s: %s rfc2819: %q is not key=value", p.name, dir, kv)
		}
		if !strings.HasPrefix(k, dir+"_") {
			k = dir + "_" + k
		}
		if err := p.put(k, v); err != nil {
			return err
		}
	}
	return nil
}

// customStats parses one line of "name=N," tokens.
func (p *dumpPortsLine) customStats(t string) error {
	for _, tok := range strings.Fields(t) {
		tok = strings.TrimSuffix(tok, ",")
		k, v, ok := strings.Cut(tok, "=")
		if !ok || k == "" {
			return fmt.Errorf("port %s: custom statistics: %q is not name=value", p.name, tok)
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return fmt.Errorf("port %s: custom statistics: %s=%q is not a counter", p.name, k, v)
		}
		// a driver's own rx_errors/tx_errors stays here, beside the standard field
		if p.c.Custom == nil {
			p.c.Custom = map[string]uint64{}
		}
		p.c.Custom[k] = n
	}
	return nil
}

// ---- Interface statistics column ----

// InterfaceStatisticsArgs is the ovs-vsctl argv (after the prefix) that
// ParseInterfaceStatistics reads.
func InterfaceStatisticsArgs() []string {
	return []string{"--format=json", "--columns=name,statistics", "list", "Interface"}
}

// ParseInterfaceStatistics parses `ovs-vsctl --format=json
// --columns=name,statistics list Interface` into counters by interface
// name. A standard counter missing from the map (OvS omits unsupported
// ones) is Unknown; every other key goes to Custom.
func ParseInterfaceStatistics(out []byte) (map[string]Counters, error) {
	tables, err := ParseTables(out)
	if err != nil {
		return nil, err
	}
	if len(tables) != 1 {
		return nil, fmt.Errorf("interface statistics: want 1 table, got %d", len(tables))
	}
	res := map[string]Counters{}
	for i, r := range tables[0].Rows {
		name := r.Str("name")
		if name == "" {
			return nil, fmt.Errorf("interface statistics: row %d has no name", i)
		}
		var c Counters
		if sd := r["statistics"]; sd.Kind == KindMap {
			for j, k := range sd.Keys {
				n, ok := sd.Elems[j].Int()
				if !ok || n < 0 {
					return nil, fmt.Errorf("interface statistics: %s: %s is %s, not a counter", name, k.String(), sd.Elems[j].String())
				}
				c.set(k.String(), uint64(n))
			}
		} else if !sd.IsEmpty() {
			return nil, fmt.Errorf("interface statistics: %s: statistics is not a map", name)
		}
		for _, n := range standardCounters {
			if _, ok := statKey(r, n); !ok {
				c.unknown(n)
			}
		}
		res[name] = c
	}
	return res, nil
}

// statKey looks key up in a row's statistics map.
func statKey(r Row, key string) (int64, bool) {
	sd := r["statistics"]
	for j, k := range sd.Keys {
		if k.String() == key {
			return sd.Elems[j].Int()
		}
	}
	return 0, false
}

// ---- reads ----

// DumpPortsArgs is the ovs-ofctl argv (after --timeout) PortCounters runs.
func (c *Client) DumpPortsArgs(bridge string) []string {
	return []string{ofctlProtocols, "dump-ports", "--names", c.OfctlTarget(bridge)}
}

// InterfaceStatistics reads every Interface's statistics column (one
// ovs-vsctl call). The values are as of ovs-vswitchd's last refresh
// (other_config:stats-update-interval, at least 5 s): for deltas over a
// run use PortCounters.
func (c *Client) InterfaceStatistics(ctx context.Context) (map[string]Counters, error) {
	out, err := c.Vsctl(ctx, InterfaceStatisticsArgs()...)
	if err != nil {
		return nil, err
	}
	st, err := ParseInterfaceStatistics(out)
	if err != nil {
		return nil, fmt.Errorf("ovs: reading Interface statistics from %s: %w", c.where(), err)
	}
	return st, nil
}

// PortCounters reads the counters of every port of bridge, by port name
// ("LOCAL" is the bridge's own port), live: `ovs-ofctl dump-ports` over
// the highest OpenFlow version the bridge allows (1.4+ brings the custom
// counters too). A port whose reply had no custom section (OpenFlow < 1.4
// negotiated, or a port type without them) gets the custom keys of its
// Interface statistics column (one ovs-vsctl read), listed in Stale.
// Standard counters are never taken from the column: it can hold a vhost
// port's counters from before its guest disconnected.
func (c *Client) PortCounters(ctx context.Context, bridge string) (map[string]Counters, error) {
	out, err := c.Ofctl(ctx, bridge, c.DumpPortsArgs(bridge)...)
	if err != nil {
		return nil, err
	}
	ports, withCustom, err := parseDumpPorts(out)
	if err != nil {
		return nil, fmt.Errorf("ovs: bridge %s: %w", bridge, err)
	}
	stats, err := c.InterfaceStatistics(ctx)
	if err != nil {
		return nil, err
	}
	for name, pc := range ports {
		row := name
		if name == "LOCAL" {
			row = bridge // the bridge's own interface is named after it
		}
		sc, ok := stats[row]
		if !ok || withCustom[name] {
			continue
		}
		ports[name] = mergeStale(pc, sc)
	}
	return ports, nil
}

// mergeStale adds to live the custom keys of col (the statistics column)
// live lacks, and names them in Stale.
func mergeStale(live, col Counters) Counters {
	for _, k := range slices.Sorted(maps.Keys(col.Custom)) {
		if _, have := live.Custom[k]; have || live.field(k) != nil || live.isUnknown(k) {
			continue
		}
		if live.Custom == nil {
			live.Custom = map[string]uint64{}
		}
		live.Custom[k] = col.Custom[k]
		live.Stale = append(live.Stale, k)
	}
	return live
}
