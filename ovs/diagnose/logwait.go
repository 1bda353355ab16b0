package diagnose

import (
	"context"
	"strings"

	"rig/ovs"
)

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
			if len(tail.Matching(1, ifc.Error)) == 0 {
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
