package ovs

import (
	"context"
	"time"
)

// Why a reader of the ovs-vswitchd log waits for it (OvS 3.1, from its
// sources; read there, not copied; ovs/diagnose/logwait.go says which
// lines a diagnosis waits for, and why they are enough):
//
//   - The log file is written asynchronously. vswitchd/bridge.c bridge_run
//     calls vlog_enable_async() right after daemonize_complete(), once the
//     first configuration is done; from then on lib/vlog.c vlog_valist hands
//     each file line to lib/async-append-aio.c async_append_write (POSIX
//     aio_write; Debian's ovs-vswitchd-dpdk imports aio_write), so a line
//     reaches the file some time after the call that logged it returned.
//     Only EMER lines are flushed at once (async_append_flush).

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
