package ovs

import (
	"context"
	"time"
)

// Why a diagnosis waits for the ovs-vswitchd log (OvS 3.1, from its
// sources; read there, not copied):
//
//   - The log file is written asynchronously. vswitchd/bridge.c bridge_run
//     calls vlog_enable_async() right after daemonize_complete(), once the
//     first configuration is done; from then on lib/vlog.c vlog_valist hands
//     each file line to lib/async-append-aio.c async_append_write (POSIX
//     aio_write; Debian's ovs-vswitchd-dpdk imports aio_write), so a line
//     reaches the file some time after the call that logged it returned.
//     Only EMER lines are flushed at once (async_append_flush).
//   - The texts OvS puts in Interface.error are logged by the same call:
//     VLOG_WARN_BUF/VLOG_ERR_BUF (include/openvswitch/vlog.h VLOG_ERRP) log
//     the message and also return it in *errp, which vswitchd/bridge.c
//     iface_create stores in the database (iface_clear_db_record): e.g.
//     lib/netdev-dpdk.c netdev_dpdk_process_devargs "Error attaching device
//     '%s' to DPDK", lib/netdev.c netdev_set_config "%s: could not set
//     configuration (%s)", bridge.c iface_do_create "could not open network
//     device %s (%s)" and "could not add network device %s to ofproto (%s)".
//     The database write follows in the bridge's next commit, so a reader
//     can see Interface.error before the log file holds its line: on a
//     loaded 2-CPU machine the EAL lines that say why (memif's "Address
//     already in use") were not there yet and the generic cause won.
//   - DPDK's own lines (EAL, PMDs) go through the same writer: lib/dpdk.c
//     dpdk_init__ points DPDK's log at a fopencookie stream
//     (rte_openlog_stream) whose dpdk_log_write logs each with VLOG_*.
//   - The writer keeps order: every line goes to the one async_append under
//     vlog's log_file_mutex, and glibc queues aio requests on a file
//     descriptor behind the one running, equal priorities in order (glibc
//     rt/aio_misc.c __aio_enqueue_request). So once the line carrying an
//     interface's Interface.error is in the file, every EAL/PMD line logged
//     before it, the evidence its diagnosis reads, is there too.
//   - A DPDK init that fails ends with an EMER line of lib/dpdk.c
//     dpdk_init__: "Unable to initialize DPDK: %s" (rte_eal_init failed) or
//     "Could not disable multiprocess, DPDK won't be available."; dpdk_init
//     logs "DPDK Enabled - initializing..." before the attempt, "DPDK
//     Enabled - initialized" after a good one, "DPDK Initialization
//     Failed." on its next call after a failed one, and "DPDK Disabled -
//     Use other_config:dpdk-init to enable" when DPDK is not asked for.

// DefaultLogWait is how long a diagnosis waits, at most, for the
// ovs-vswitchd log to hold the evidence for what the database shows.
const DefaultLogWait = 2 * time.Second

// LogPollInterval is how often WaitLogTail reads the log again.
const LogPollInterval = 50 * time.Millisecond

// WaitLogTail reads t's log since the last start (ReadLogTail) until
// complete(tail) holds, again every 50 ms, for at most bound or until ctx
// ends, and returns the last tail read. A log file that cannot be opened
// returns nil at once (no line will arrive there). A wait that ends before
// complete holds is no error: the diagnosis works with what the log has.
func WaitLogTail(ctx context.Context, h Host, t Target, bound time.Duration, complete func(LogTail) bool) LogTail {
	tail, ok := readLogTail(h, t)
	if !ok || complete == nil || complete(tail) || bound <= 0 {
		return tail
	}
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	tick := time.NewTicker(LogPollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return tail
		case <-tick.C:
		}
		next, ok := readLogTail(h, t)
		if !ok {
			return tail
		}
		if tail = next; complete(tail) {
			return tail
		}
	}
}

// WaitLog is WaitLogTail for this instance: it reads the vswitchd log
// since its last start until complete holds, waiting up to c.LogWait
// (DefaultLogWait when 0). The diagnosis (ovs/diagnose EvidenceLog) says
// what complete is.
func (c *Client) WaitLog(ctx context.Context, complete func(LogTail) bool) LogTail {
	bound := c.LogWait
	if bound == 0 {
		bound = DefaultLogWait
	}
	return WaitLogTail(ctx, c.host, c.Target, bound, complete)
}
