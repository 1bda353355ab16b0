package ovs

import (
	"fmt"
	"strings"
)

// Diagnosis explains why an interface (or DPDK itself) is not working.
type Diagnosis struct {
	Object   string   `json:"object"` // "ovs: port dpdk0" or "ovs: dpdk"
	Error    string   `json:"error"`  // what OvS says (Interface.error, or the symptom)
	Kind     string   `json:"kind"`   // stable id, e.g. "pci-device-absent"
	Cause    string   `json:"cause"`
	Fix      string   `json:"fix"`
	Evidence []string `json:"evidence,omitempty"` // vswitchd log lines behind the diagnosis
	Argv     []string `json:"argv,omitempty"`     // the tool command that failed, when one did
}

func (d Diagnosis) String() string {
	return fmt.Sprintf("%s: %s; likely cause: %s; fix: %s", d.Object, d.Error, d.Cause, d.Fix)
}

// Diagnosis kinds of the driver's own failures (Diagnosis.Kind, stable ids
// in JSON); package ovs/diagnose has the kinds of what it diagnoses.
const (
	ProblemVswitchdDown = "vswitchd-not-running"
	ProblemVswitchdDied = "vswitchd-died"
)

// VswitchdStatus checks the vswitchd of target via its pidfile.
func (c *Client) VswitchdStatus() ProcStatus {
	return ProcessStatus(c.host, c.Target, "ovs-vswitchd")
}

// VswitchdDown is the diagnosis for a dead vswitchd.
func (c *Client) VswitchdDown(ps ProcStatus, st *State) Diagnosis {
	d := Diagnosis{Object: "ovs: ovs-vswitchd", Kind: ProblemVswitchdDown,
		Error: "ovs-vswitchd is not running (" + ps.Pidfile + ": " + ps.Note + ")"}
	if st != nil && st.DPDKInitialized {
		d.Error += "; dpdk_initialized=true and the ports' ofport/error in the database are stale"
	}
	d.Cause = "ovs-vswitchd crashed, was killed or was never started"
	if marker, ok := c.InterruptedRestart(); ok {
		d.Cause = "a rig run stopped ovs-vswitchd to restart it and was interrupted before starting it again (" + marker + ")"
		d.Fix = "rig up --rundir " + c.Target.RunDir + " finishes the restart (or: rig ovs daemon start --rundir " + c.Target.RunDir + ")"
	} else if c.Target.Private {
		d.Fix = "start it: rig ovs daemon start --rundir " + c.Target.RunDir + " (see " + c.Target.LogFile + " for why it stopped)"
	} else {
		d.Fix = "systemctl restart openvswitch-switch; see " + c.Target.LogFile + " and `journalctl -u ovs-vswitchd` for why it stopped"
	}
	d.Evidence = LastStartLines(c.host, c.Target, 3, func(l string) bool {
		return strings.Contains(l, "|EMER|") || strings.Contains(l, "terminating with signal") || strings.Contains(l, "|ERR|")
	})
	return d
}
