package lab

import (
	"fmt"
	"os"
	"strings"
)

// liveProblems names the lab's long-running processes that are gone: the
// port keeper (`rig lab __ports NAME`, in the lab's network namespace)
// and the lab's ovsdb-server and ovs-vswitchd (the lab kernel is
// kernelStatus'). procs are the processes in the lab's namespaces;
// cmdline reads one's /proc/PID/cmdline.
func liveProblems(name string, procs []Proc, cmdline func(pid int) string) []string {
	var keeper, db, vswitchd bool
	for _, p := range procs {
		if p.Where != "lab" {
			continue
		}
		switch {
		case strings.HasSuffix(cmdline(p.PID), "\x00lab\x00__ports\x00"+name+"\x00"+machineArm+"\x00"):
			keeper = true
		case strings.HasPrefix(p.Comm, "ovsdb-server"):
			db = true
		case strings.HasPrefix(p.Comm, "ovs-vswitchd"):
			vswitchd = true
		}
	}
	again := "`rig lab power-cycle " + name + "` starts it again"
	var out []string
	if !keeper {
		out = append(out, fmt.Sprintf("the port keeper (rig lab __ports %s) is not running: the RDMA ports no longer follow their netdevs; %s", name, again))
	}
	if !db {
		out = append(out, "the lab's ovsdb-server is not running: OvS inside the lab answers nothing; "+again)
	}
	if !vswitchd {
		out = append(out, "the lab's ovs-vswitchd is not running: no bridge or port inside the lab forwards; "+again)
	}
	return out
}

func procCmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return string(b)
}
