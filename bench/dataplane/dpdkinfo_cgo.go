//go:build cgo

package dataplane

import "rig/bench/internal/dpdk"

// DPDK describes the DPDK in this rig: version, link and drivers.
func DPDK() DPDKInfo {
	info := DPDKInfo{Version: dpdk.Version(), Linked: dpdk.Linked, PMDs: []PMD{}, PMDsFrom: []string{}}
	drv, err := dpdk.PMDs()
	if err != nil {
		info.PMDError = err.Error()
	}
	if drv.From != nil {
		info.PMDsFrom = drv.From
	}
	for _, p := range drv.PMDs {
		info.PMDs = append(info.PMDs, PMD(p))
	}
	return info
}
