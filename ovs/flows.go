package ovs

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Flow is one line of `ovs-ofctl dump-flows`.
type Flow struct {
	Line     string `json:"line"` // the line as printed, trimmed
	Cookie   uint64 `json:"cookie"`
	Table    int    `json:"table"`
	Priority int    `json:"priority"` // 32768 (OpenFlow's default) when not printed
	NPackets uint64 `json:"nPackets"`
	NBytes   uint64 `json:"nBytes"`
	Match    string `json:"match"` // "priority=20,in_port=v0" (priority included, as printed)
	Actions  string `json:"actions"`
}

// flowStatKeys are dump-flows' fields before the match ("key=value" or a
// bare flag).
var flowStatKeys = map[string]bool{"cookie": true, "duration": true, "table": true, "n_packets": true, "n_bytes": true,
	"idle_age": true, "hard_age": true, "idle_timeout": true, "hard_timeout": true, "importance": true,
	"reset_counts": true, "send_flow_rem": true, "check_overlap": true, "no_packet_counts": true, "no_byte_counts": true}

// ParseFlows parses `ovs-ofctl dump-flows` output (any OpenFlow version,
// with or without --names): " cookie=0x5252, duration=6.5s, table=0,
// n_packets=N, n_bytes=N, [flags,] priority=20,in_port=v0 actions=output:v1".
// Reply headers ("NXST_FLOW reply (xid=0x4):", "OFPST_FLOW reply ...")
// are skipped.
func ParseFlows(out []byte) ([]Flow, error) {
	var flows []Flow
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for ln := 1; sc.Scan(); ln++ {
		t := strings.TrimSpace(sc.Text())
		if t == "" || strings.HasPrefix(t, "NXST_FLOW reply") || strings.HasPrefix(t, "OFPST_FLOW reply") ||
			strings.HasPrefix(t, "OFPST_FLOW_DESC reply") {
			continue
		}
		f, err := parseFlow(t)
		if err != nil {
			return nil, fmt.Errorf("dump-flows: line %d: %w", ln, err)
		}
		flows = append(flows, f)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("dump-flows: %w", err)
	}
	return flows, nil
}

func parseFlow(t string) (Flow, error) {
	f := Flow{Line: t, Priority: 32768}
	left, actions, ok := strings.Cut(t, " actions=")
	if !ok {
		if !strings.HasPrefix(t, "actions=") {
			return f, fmt.Errorf("%q has no actions", t)
		}
		left, actions = "", strings.TrimPrefix(t, "actions=")
	}
	f.Actions = actions
	var match []string
	for _, part := range strings.Split(strings.TrimSuffix(left, ","), ", ") {
		if part == "" {
			continue
		}
		first := strings.Fields(part)[0]
		key, _, _ := strings.Cut(first, "=")
		if !flowStatKeys[key] {
			match = append(match, part)
			continue
		}
		for _, w := range strings.Fields(part) {
			if err := f.stat(w); err != nil {
				return f, err
			}
		}
	}
	f.Match = strings.Join(match, ", ")
	for _, m := range strings.Split(f.Match, ",") {
		if v, ok := strings.CutPrefix(m, "priority="); ok {
			p, err := strconv.Atoi(v)
			if err != nil {
				return f, fmt.Errorf("priority=%q is not a number", v)
			}
			f.Priority = p
		}
	}
	return f, nil
}

// stat reads one "key=value" (or flag) before the match.
func (f *Flow) stat(w string) error {
	k, v, _ := strings.Cut(w, "=")
	var err error
	switch k {
	case "cookie":
		f.Cookie, err = strconv.ParseUint(strings.TrimPrefix(v, "0x"), 16, 64)
	case "table":
		f.Table, err = strconv.Atoi(v)
	case "n_packets":
		f.NPackets, err = strconv.ParseUint(v, 10, 64)
	case "n_bytes":
		f.NBytes, err = strconv.ParseUint(v, 10, 64)
	}
	if err != nil {
		return fmt.Errorf("%s=%q: %w", k, v, err)
	}
	return nil
}

// CookieMatch is the dump-flows/del-flows match of exactly cookie.
func CookieMatch(cookie uint64) string { return fmt.Sprintf("cookie=%#x/-1", cookie) }

// checkFlow refuses a flow that cannot be one ovs-ofctl argv word.
func checkFlow(f string) error {
	switch {
	case strings.TrimSpace(f) == "":
		return fmt.Errorf("empty flow")
	case strings.HasPrefix(strings.TrimSpace(f), "-"):
		return fmt.Errorf("flow %q starts with '-'", f)
	case strings.ContainsAny(f, "\n\r\x00"):
		return fmt.Errorf("flow %q holds a line break or NUL", f)
	}
	return nil
}

// AddFlows adds flows to bridge, one `ovs-ofctl add-flow` per flow (no
// shell, no file). It stops at the first flow OvS refuses; the flows
// before it stay (delete them by their cookie).
func (c *Client) AddFlows(ctx context.Context, bridge string, flows ...string) error {
	for _, f := range flows {
		if err := checkFlow(f); err != nil {
			return fmt.Errorf("ovs: bridge %s: add-flow: %w", bridge, err)
		}
	}
	for i, f := range flows {
		if _, err := c.Ofctl(ctx, bridge, ofctlProtocols, "add-flow", c.OfctlTarget(bridge), f); err != nil {
			return fmt.Errorf("ovs: bridge %s: add-flow %d of %d: %w", bridge, i+1, len(flows), err)
		}
	}
	return nil
}

// DelFlowsByCookie deletes every flow of bridge whose cookie is exactly
// cookie (`del-flows BR cookie=0x.../-1`). Cookie 0 is refused: it is the
// cookie of every flow added without one.
func (c *Client) DelFlowsByCookie(ctx context.Context, bridge string, cookie uint64) error {
	if cookie == 0 {
		return fmt.Errorf("ovs: bridge %s: del-flows by cookie 0 would delete every flow added without a cookie; give the check's own cookie", bridge)
	}
	if _, err := c.Ofctl(ctx, bridge, ofctlProtocols, "del-flows", c.OfctlTarget(bridge), CookieMatch(cookie)); err != nil {
		return fmt.Errorf("ovs: bridge %s: del-flows %s: %w", bridge, CookieMatch(cookie), err)
	}
	return nil
}

// CookieFlows returns bridge's flows whose cookie is exactly cookie, with
// their packet counts.
func (c *Client) CookieFlows(ctx context.Context, bridge string, cookie uint64) ([]Flow, error) {
	out, err := c.Ofctl(ctx, bridge, ofctlProtocols, "dump-flows", "--names", c.OfctlTarget(bridge), CookieMatch(cookie))
	if err != nil {
		return nil, fmt.Errorf("ovs: bridge %s: dump-flows %s: %w", bridge, CookieMatch(cookie), err)
	}
	flows, err := ParseFlows(out)
	if err != nil {
		return nil, fmt.Errorf("ovs: bridge %s: %w", bridge, err)
	}
	for _, f := range flows {
		if f.Cookie != cookie {
			return nil, fmt.Errorf("ovs: bridge %s: dump-flows %s returned a flow with cookie %#x: %s", bridge, CookieMatch(cookie), f.Cookie, f.Line)
		}
	}
	return flows, nil
}

// FlowsByCookie is CookieFlows' lines, as dump-flows prints them.
func (c *Client) FlowsByCookie(ctx context.Context, bridge string, cookie uint64) ([]string, error) {
	flows, err := c.CookieFlows(ctx, bridge, cookie)
	if err != nil {
		return nil, err
	}
	lines := make([]string, 0, len(flows))
	for _, f := range flows {
		lines = append(lines, f.Line)
	}
	return lines, nil
}

// PortsWithPrefix returns, by bridge, the ports whose name starts with
// prefix (sorted), e.g. a check's leftover "rig-chk-" ports. Bridges with
// none are left out. An empty prefix is refused (it would be every port).
func (c *Client) PortsWithPrefix(ctx context.Context, prefix string) (map[string][]string, error) {
	if prefix == "" {
		return nil, fmt.Errorf("ovs: ports with prefix: empty prefix (it would name every port)")
	}
	st, err := c.ReadState(ctx)
	if err != nil {
		return nil, err
	}
	return st.PortsWithPrefix(prefix), nil
}

// PortsWithPrefix is the State half of Client.PortsWithPrefix.
func (s *State) PortsWithPrefix(prefix string) map[string][]string {
	res := map[string][]string{}
	for _, b := range s.Bridges {
		for _, p := range b.Ports {
			if strings.HasPrefix(p.Name, prefix) {
				res[b.Name] = append(res[b.Name], p.Name)
			}
		}
		sort.Strings(res[b.Name])
	}
	return res
}
