package lab

import (
	"strings"
	"testing"
)

// A healthy Arm (its port keeper, ovsdb-server, ovs-vswitchd) has no
// liveness problem; the host's keeper does not stand for the Arm's, and a
// missing daemon is named.
func TestLiveProblems(t *testing.T) {
	cmd := map[int]string{
		1: "/usr/bin/rig\x00lab\x00__ports\x00a\x00arm\x00",
		2: "ovsdb-server\x00",
		3: "ovs-vswitchd-dpdk\x00",
		4: "/usr/bin/rig\x00lab\x00__ports\x00a\x00host\x00",
	}
	cmdline := func(pid int) string { return cmd[pid] }
	arm := []Proc{{PID: 1, Comm: "rig", Where: "lab"}, {PID: 2, Comm: "ovsdb-server", Where: "lab"}, {PID: 3, Comm: "ovs-vswitchd-dp", Where: "lab"}}
	if p := liveProblems("a", arm, cmdline); len(p) != 0 {
		t.Errorf("healthy lab: problems %q, want none", p)
	}
	hostKeeperOnly := []Proc{{PID: 4, Comm: "rig", Where: "lab"}, arm[1]}
	p := strings.Join(liveProblems("a", hostKeeperOnly, cmdline), "\n")
	if !strings.Contains(p, "port keeper") || !strings.Contains(p, "ovs-vswitchd is not running") || strings.Contains(p, "ovsdb-server is not running") {
		t.Errorf("no Arm keeper, no vswitchd: problems %q, want the keeper and ovs-vswitchd named, not ovsdb-server", p)
	}
}
