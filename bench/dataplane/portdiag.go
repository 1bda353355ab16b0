package dataplane

import (
	"fmt"
	"strings"

	"rig/bench"
	"rig/internal/devargs"
)

// What a PMD logs when a port toward a switch fails, and what it means.
// The log is EAL's (the dataplane tees it, dpdk.LogSince); these functions
// only read text, so they are tested with the PMDs' real lines.

// vdevArgs returns the devargs of the vdev named name ("" when none).
func vdevArgs(vdevs []string, name string) map[string]string {
	for _, v := range vdevs {
		if devargs.Device(v) == name {
			return devargs.Values(v)
		}
	}
	return nil
}

// logLines returns the lines of log that contain any of the keys.
func logLines(log string, keys ...string) []string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		for _, k := range keys {
			if strings.Contains(l, k) {
				out = append(out, strings.TrimSpace(l))
				break
			}
		}
	}
	return out
}

// diagnosis is a port failure's cause and fix, from the PMD's log.
type diagnosis struct{ cause, fix string }

// diagnosePort reads what the PMD of port name (a vdev of vdevs) logged and
// says why it failed; ok is false when the log says nothing known.
func diagnosePort(name string, vdevs []string, log string) (d diagnosis, ok bool) {
	switch {
	case strings.HasPrefix(name, "net_virtio_user"):
		return diagnoseVirtioUser(vdevArgs(vdevs, name), log)
	case strings.HasPrefix(name, "net_memif"):
		return diagnoseMemif(vdevArgs(vdevs, name), log)
	}
	return diagnosis{}, false
}

func diagnoseVirtioUser(kv map[string]string, log string) (diagnosis, bool) {
	if lines := logLines(log, "Too many memory regions"); len(lines) > 0 {
		return diagnosis{
			cause: fmt.Sprintf("Too many memory regions (vhost-user shares at most %d memory regions, one file descriptor each, and EAL's memory was in more files: one per hugepage without --single-file-segments)", bench.VhostMemoryRegions),
			fix:   "let rig choose EAL memory for virtio-user ports (it uses --in-memory --single-file-segments): drop memory options from --eal",
		}, true
	}
	path := kv["path"]
	if lines := logLines(log, "Address already in use"); len(lines) > 0 {
		return diagnosis{
			cause: "the vhost-user socket " + path + " is in use: another process listens on it",
			fix:   "stop the other process, or give this port another path=",
		}, true
	}
	if lines := logLines(log, "("+path+")"); path != "" && len(lines) > 0 {
		for _, l := range lines {
			if strings.Contains(l, "Failed") || strings.Contains(l, "failed") || strings.Contains(l, "error") {
				return diagnosis{
					cause: "the vhost-user link failed: " + l,
					fix:   "check the backend's log (OvS: ovs-vswitchd.log, the dpdkvhostuserclient port with options:vhost-server-path=" + path + ")",
				}, true
			}
		}
	}
	return diagnosis{}, false
}

func diagnoseMemif(kv map[string]string, log string) (diagnosis, bool) {
	const queues = "a memif client's tx queues (--txq) become the server's rx rings and its rx queues (--rxq) the server's tx rings: the server must have at least as many; OvS has n_rxq rx queues (options:n_rxq, default 1) and one tx queue per PMD thread plus one"
	for _, l := range logLines(log, "Disconnect received", "Disconnect sent", "disconnect") {
		_, reason, _ := strings.Cut(l, ": ")
		if i := strings.LastIndex(l, "received: "); i >= 0 {
			reason = l[i+len("received: "):]
		}
		d := diagnosis{cause: "the memif peer disconnected: " + reason, fix: "check the memif server's devargs and log"}
		if strings.Contains(l, "Invalid ring index") {
			d.cause = "the memif server refused this port's rings (Invalid ring index): " + queues
			d.fix = "give this port as many queues as the server: e.g. through an OvS memif port with one PMD thread, --rxq 2 --txq 1"
		}
		if strings.Contains(l, "ID not found") {
			d.fix = fmt.Sprintf("use the server's id= (this port has id=%s)", orDefault(kv["id"], "0"))
		}
		return d, true
	}
	if lines := logLines(log, "Address already in use"); len(lines) > 0 {
		return diagnosis{cause: "memif socket in use: " + lines[0], fix: "remove the stale socket file, or stop the other server on socket=" + kv["socket"]}, true
	}
	return diagnosis{}, false
}

func orDefault(v, d string) string {
	if v == "" {
		return d
	}
	return v
}

// memifQueueHint is what a memif link through a switch needs, said when a
// run through one received nothing.
const memifQueueHint = "a memif server transmits on each of its tx queues; DPDK 22.11's memif server writes a tx queue the client did not connect into the wrong shared ring (frames lost, and the server process may crash). OvS has one tx queue per PMD thread plus one, so the client needs that many rx queues"
