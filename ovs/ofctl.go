package ovs

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"rig/internal/host"
)

// ofctlProtocols lets ovs-ofctl negotiate the highest OpenFlow version the
// bridge allows: from 1.4 on, dump-ports also returns the custom counters
// (ovs_tx_failure_drops, vhost rx_q0_good_packets...), live. A bridge whose
// protocols column allows only some versions still negotiates one of them.
const ofctlProtocols = "-OOpenFlow10,OpenFlow11,OpenFlow12,OpenFlow13,OpenFlow14,OpenFlow15"

// Problem kinds of the OpenFlow and unixctl reads.
const (
	ProblemNoSuchBridge  = "no-such-bridge"
	ProblemNoNetdevDP    = "no-netdev-datapath"
	ProblemVswitchdNoAns = "vswitchd-not-answering"
)

// ToolProblem is an ovs-ofctl or ovs-appctl call that failed for a reason
// rig can name (vswitchd down, no such bridge, no netdev datapath): the
// tool error (argv and output) plus the cause and fix.
type ToolProblem struct {
	Err       error
	Diagnosis Diagnosis
}

func (e *ToolProblem) Error() string {
	return fmt.Sprintf("%s: %s: %v", e.Diagnosis.Object, e.Diagnosis.Cause, e.Err)
}

func (e *ToolProblem) Unwrap() error { return e.Err }

// Cause and Fix are the diagnosis' (the error vocabulary rig renders).
func (e *ToolProblem) Cause() string { return e.Diagnosis.Cause }
func (e *ToolProblem) Fix() string   { return e.Diagnosis.Fix }

// CheckBridgeName refuses a bridge name that cannot be one (it becomes a
// socket path or an argv word): empty, with a '/', starting with '-', or
// with whitespace or control characters.
func CheckBridgeName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("ovs: empty bridge name")
	case strings.HasPrefix(name, "-"), strings.ContainsAny(name, "/\\"):
		return fmt.Errorf("ovs: bridge name %q: must not start with '-' or hold '/' or '\\'", name)
	case strings.IndexFunc(name, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0:
		return fmt.Errorf("ovs: bridge name %q: must not hold whitespace or control characters", name)
	}
	return nil
}

// OfctlTarget is what ovs-ofctl is given to reach bridge: the private
// instance's management socket (unix:<rundir>/<bridge>.mgmt), or the bridge
// name for the system instance (ovs-ofctl finds its socket itself).
func (c *Client) OfctlTarget(bridge string) string {
	if c.Target.Private {
		return "unix:" + filepath.Join(c.Target.RunDir, bridge+".mgmt")
	}
	return bridge
}

// Ofctl runs `ovs-ofctl --timeout=N args...` (OpenFlow version and target
// are the caller's) and explains a failure to reach bridge.
func (c *Client) Ofctl(ctx context.Context, bridge string, args ...string) ([]byte, error) {
	if err := CheckBridgeName(bridge); err != nil {
		return nil, err
	}
	argv := append([]string{"--timeout=" + strconv.Itoa(c.timeout())}, args...)
	out, err := c.host.Run(ctx, "ovs-ofctl", argv...)
	if err != nil {
		return out, c.explainOfctl(bridge, fmt.Errorf("ovs: bridge %s: %w", bridge, err))
	}
	return out, nil
}

// AppctlTarget is the unixctl socket of the private instance's
// ovs-vswitchd: <rundir>/ovs-vswitchd.ctl (rig starts it with --unixctl
// there), else OvS's default <rundir>/ovs-vswitchd.<pid>.ctl. For the
// system instance it is "" (ovs-appctl's default target).
func (c *Client) AppctlTarget() string {
	if !c.Target.Private {
		return ""
	}
	fixed := filepath.Join(c.Target.RunDir, "ovs-vswitchd.ctl")
	if c.host.LiveExists(fixed) {
		return fixed
	}
	if ps := c.VswitchdStatus(); ps.PID > 0 {
		return filepath.Join(c.Target.RunDir, "ovs-vswitchd."+strconv.Itoa(ps.PID)+".ctl")
	}
	return fixed
}

// Appctl runs `ovs-appctl [-t CTL] --timeout=N args...` against this
// instance's ovs-vswitchd and explains a failure.
func (c *Client) Appctl(ctx context.Context, args ...string) ([]byte, error) {
	argv := c.appctlArgv(args...)
	out, err := c.host.Run(ctx, argv[0], argv[1:]...)
	if err != nil {
		return out, c.explainAppctl(fmt.Errorf("ovs: ovs-vswitchd: %w", err))
	}
	return out, nil
}

// appctlArgv is the whole argv Appctl runs for args: `ovs-appctl [-t CTL]
// --timeout=N args...`.
func (c *Client) appctlArgv(args ...string) []string {
	argv := []string{"ovs-appctl"}
	if t := c.AppctlTarget(); t != "" {
		argv = append(argv, "-t", t)
	}
	return append(append(argv, "--timeout="+strconv.Itoa(c.timeout())), args...)
}

// toolOutput is what a failed tool printed.
func toolOutput(err error) string {
	var te *host.ToolError
	if !errors.As(err, &te) {
		return ""
	}
	return te.Stderr + te.Stdout
}

func toolArgv(err error) []string {
	var te *host.ToolError
	if errors.As(err, &te) {
		return te.Argv
	}
	return nil
}

// vswitchdGone returns the diagnosis for a dead ovs-vswitchd, if it is dead.
func (c *Client) vswitchdGone(err error) (*ToolProblem, bool) {
	ps := c.VswitchdStatus()
	if ps.Alive {
		return nil, false
	}
	d := c.VswitchdDown(ps, nil)
	d.Argv = toolArgv(err)
	return &ToolProblem{Err: err, Diagnosis: d}, true
}

// explainOfctl names why ovs-ofctl could not reach bridge: vswitchd is
// down, or the bridge does not exist (its management socket is missing).
func (c *Client) explainOfctl(bridge string, err error) error {
	out := toolOutput(err)
	missing := strings.Contains(out, "No such file or directory") || strings.Contains(out, "is not a bridge or a socket")
	refused := strings.Contains(out, "Connection refused")
	if !missing && !refused && !TimedOut(err) && !strings.Contains(out, "timeout") {
		return err
	}
	if p, dead := c.vswitchdGone(err); dead {
		return p
	}
	d := Diagnosis{Object: "ovs: bridge " + bridge, Kind: ProblemNoSuchBridge, Argv: toolArgv(err),
		Error: strings.TrimSpace(out)}
	if missing {
		d.Cause = fmt.Sprintf("ovs-vswitchd runs but has no bridge %s (no OpenFlow management socket %s)", bridge, c.OfctlTarget(bridge))
		d.Fix = "check the bridge name against `rig ovs status`" + c.flagsHint() + ", or create the bridge (`rig up`)"
	} else {
		d.Kind = ProblemVswitchdNoAns
		d.Cause = fmt.Sprintf("ovs-vswitchd runs but did not answer on bridge %s's management socket within %d s", bridge, c.timeout())
		d.Fix = "see " + c.Target.LogFile + "; ovs-vswitchd may be busy or stuck (restart it: `rig up`)"
	}
	return &ToolProblem{Err: err, Diagnosis: d}
}

// explainAppctl names why ovs-appctl failed: vswitchd is down, or it has
// no userspace (netdev) datapath, so no PMD threads.
func (c *Client) explainAppctl(err error) error {
	out := toolOutput(err)
	if strings.Contains(out, "please specify an existing datapath") {
		return &ToolProblem{Err: err, Diagnosis: Diagnosis{Object: "ovs: dpif-netdev", Kind: ProblemNoNetdevDP,
			Argv: toolArgv(err), Error: strings.TrimSpace(out),
			Cause: "ovs-vswitchd has no userspace datapath: no bridge has datapath_type=netdev, so there are no PMD threads",
			Fix:   "add a bridge with datapath_type: netdev (ovs section of the playbook, then `rig up`)"}}
	}
	if strings.Contains(out, "cannot connect") || strings.Contains(out, "Connection refused") || strings.Contains(out, "No such file or directory") {
		if p, dead := c.vswitchdGone(err); dead {
			return p
		}
	}
	return err
}

func (c *Client) flagsHint() string {
	if c.Target.Private {
		return " --rundir " + c.Target.RunDir
	}
	return ""
}
