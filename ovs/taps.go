package ovs

import (
	"context"
	"fmt"
	"strings"
)

// netdevDatapathTap is the tap device every userspace (netdev) datapath
// opens; its name is fixed by OvS.
const netdevDatapathTap = "ovs-netdev"

// netdevTaps lists the tap devices a vswitchd made for this instance's
// netdev bridges (their internal interfaces), read from its database. They
// outlive a stopped vswitchd in the host network namespace.
func (d *Daemon) netdevTaps(ctx context.Context) []string {
	st, err := NewClient(d.host, d.Target()).ReadState(ctx)
	if err != nil {
		return nil
	}
	var out []string
	for _, b := range st.Bridges {
		if b.DatapathType != "netdev" {
			continue
		}
		for _, p := range b.Ports {
			for _, ifc := range p.Interfaces {
				if ifc.Type == "internal" {
					out = append(out, ifc.Name)
				}
			}
		}
	}
	if len(out) > 0 {
		out = append(out, netdevDatapathTap)
	}
	return out
}

// otherVswitchdAlive reports an ovs-vswitchd process other than pid: while
// one runs, the shared ovs-netdev tap may be its own.
func otherVswitchdAlive(h Host, pid int) bool {
	ents, _ := h.ReadDir("/proc")
	for _, e := range ents {
		if e.Name() == fmt.Sprint(pid) {
			continue
		}
		comm, err := h.ReadFile("/proc/" + e.Name() + "/comm")
		if err != nil {
			continue
		}
		stat, _ := h.ReadFile("/proc/" + e.Name() + "/stat")
		if _, state, ok := parseStat(string(stat)); ok && state == "Z" {
			continue
		}
		if strings.HasPrefix(strings.TrimSpace(string(comm)), "ovs-vswitchd") {
			return true
		}
	}
	return false
}

// removeTaps deletes the named tap devices (only tuntap links) once the
// vswitchd that made them is gone. The shared ovs-netdev tap is left alone
// while another vswitchd runs.
func removeTaps(h Host, names []string, ourPID int) error {
	if len(names) == 0 {
		return nil
	}
	nl, err := h.Netlink("")
	if err != nil {
		return fmt.Errorf("ovs daemon: remove tap devices left by ovs-vswitchd: netlink: %w", err)
	}
	defer nl.Close()
	other := otherVswitchdAlive(h, ourPID)
	var errs []string
	for _, n := range names {
		if n == netdevDatapathTap && other {
			continue
		}
		l, err := nl.LinkByName(n)
		if err != nil || l.Type() != "tuntap" {
			continue
		}
		if err := nl.LinkDel(l); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", n, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("ovs daemon: remove tap devices left by ovs-vswitchd: %s", strings.Join(errs, "; "))
	}
	return nil
}
