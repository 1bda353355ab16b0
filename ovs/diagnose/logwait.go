package diagnose

import (
	"context"
	"strings"

	"rig/ovs"
)

// What a diagnosis waits for in the ovs-vswitchd log, which is written
// asynchronously (ovs/logwait.go), and why it is enough (OvS 3.1, from its
// sources; read there, not copied):
//
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

// EvidenceComplete returns the test ovs.WaitLogTail waits for before st and
// its failed interfaces are diagnosed: the tail holds, for each failed
// interface, the line carrying its Interface.error (an older OvS that
// leaves the column empty: the line errorFromLog takes in its place), and,
// when DPDK was asked for but dpdk_initialized is false, the line that
// ends DPDK's init (dpdkInitEnded).
func EvidenceComplete(st *ovs.State, failed []ovs.Interface) func(ovs.LogTail) bool {
	return func(tail ovs.LogTail) bool {
		if st != nil && dpdkRequested(st) && !st.DPDKInitialized && !dpdkInitEnded(tail) {
			return false
		}
		for _, ifc := range failed {
			if ifc.Error == "" {
				if errorFromLog(ifc, tail) == "" {
					return false
				}
				continue
			}
			if len(matching(tail, 1, ifc.Error)) == 0 {
				return false
			}
		}
		return true
	}
}

// EvidenceLog reads the vswitchd log since its last start for diagnosing
// st and its failed interfaces: it waits, up to c.LogWait
// (ovs.DefaultLogWait when 0), for the lines EvidenceComplete names.
func EvidenceLog(ctx context.Context, c *ovs.Client, st *ovs.State, failed ...ovs.Interface) ovs.LogTail {
	return c.WaitLog(ctx, EvidenceComplete(st, failed))
}

// dpdkRequested: other_config asks ovs-vswitchd for DPDK (dpdk-init true or
// try; OVS-DOCA's doca-init=true, lib/ovs-doca.c ovs_doca_init__).
func dpdkRequested(st *ovs.State) bool {
	init := st.OtherConfig["dpdk-init"]
	return init == "true" || init == "try" || (st.DOCA && st.OtherConfig["doca-init"] == "true")
}

// DPDK init lines of lib/dpdk.c dpdk_init and dpdk_init__ (OvS 3.1).
const (
	dpdkInitStart    = "|dpdk|INFO|DPDK Enabled - initializing..."
	dpdkInitOK       = "|dpdk|INFO|DPDK Enabled - initialized"
	dpdkInitDisabled = "|dpdk|INFO|DPDK Disabled - Use other_config:dpdk-init to enable"
	dpdkInitEALFail  = "|dpdk|EMER|Unable to initialize DPDK: "
	dpdkInitMPFail   = "|dpdk|EMER|Could not disable multiprocess"
	dpdkInitFailed   = "|dpdk|ERR|DPDK Initialization Failed."
)

// dpdkInitEnded says whether the last DPDK init line of the tail ends an
// attempt (failed, done, or DPDK not asked for at start) rather than
// starting one, or there being none yet.
func dpdkInitEnded(tail ovs.LogTail) bool {
	for i := len(tail) - 1; i >= 0; i-- {
		l := tail[i]
		switch {
		case strings.Contains(l, dpdkInitStart):
			return false
		case strings.Contains(l, dpdkInitEALFail), strings.Contains(l, dpdkInitMPFail), strings.Contains(l, dpdkInitFailed),
			strings.Contains(l, dpdkInitOK), strings.Contains(l, dpdkInitDisabled):
			return true
		}
	}
	return false
}
