//go:build !cgo

package dataplane

// DPDK in a rig built without cgo: no DPDK, no drivers.
func DPDK() DPDKInfo {
	return DPDKInfo{Linked: "none", PMDs: []PMD{}, PMDsFrom: []string{}}
}
