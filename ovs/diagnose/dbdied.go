package diagnose

import (
	"errors"

	"rig/internal/host"
	"rig/ovs"
)

// ProblemOVSDBDied: ovsdb-server died while rig wrote to it.
const ProblemOVSDBDied = "ovsdb-server-died"

// DBDied explains a write that failed (ovs-vsctl timed out, or lost the
// database) while ovsdb-server is dead: its pidfile names a process that
// is gone (a private instance's pidfile must exist). Then ovsdb-server is
// what died, whatever ovs-vswitchd's state; ok is false otherwise, and for
// a remote database (no pidfile here to read).
func DBDied(c *ovs.Client, err error) (d ovs.Diagnosis, ok bool) {
	var te *host.ToolError
	if !errors.As(err, &te) || !(ovs.TimedOut(err) || ovs.Unreachable(err)) {
		return d, false
	}
	ps := ovs.ProcessStatus(c.Host(), c.Target, "ovsdb-server")
	if ps.Alive || (ps.PID == 0 && !c.Target.Private) {
		return d, false
	}
	d = ovs.Diagnosis{Object: "ovs: ovsdb-server", Kind: ProblemOVSDBDied, Argv: te.Argv,
		Error: "ovsdb-server is not running (" + ps.Pidfile + ": " + ps.Note + "); the write did not complete",
		Cause: "ovsdb-server crashed or was killed during the write (ovs-vswitchd is not the one that failed); the database holds the writes that completed before it died"}
	if c.Target.Private {
		d.Fix = "rig ovs daemon start --rundir " + c.Target.RunDir + " (see " + c.Target.RunDir + "/ovsdb-server.log for why it stopped), then rig up again"
	} else {
		d.Fix = "systemctl restart openvswitch-switch (see /var/log/openvswitch/ovsdb-server.log and `journalctl -u ovsdb-server` for why it stopped), then rig up again"
	}
	return d, true
}
