package dataplane

// DPDKInfo is what this rig binary carries of DPDK, for `rig version`.
type DPDKInfo struct {
	// Version is rte_version() ("DPDK 22.11.11"); "" in a rig built
	// without cgo, which has no dataplane.
	Version string `json:"version"`
	// Linked: "static" (make's -tags dpdkstatic: DPDK and its libraries
	// are in the binary), "shared" (librte_*.so loaded at run time) or
	// "none" (built without cgo).
	Linked string `json:"linked"`
	// PMDs are the poll-mode drivers this rig can probe, read from DPDK's
	// own PMD_INFO_STRING records (what dpdk-pmdinfo.py reads) in the
	// files named by PMDsFrom: the executable for a static rig, EAL's
	// driver directory for a shared one.
	PMDs     []PMD    `json:"pmds"`
	PMDsFrom []string `json:"pmdsFrom"`
	// PMDError says why the PMD records could not be read ("" when they were).
	PMDError string `json:"pmdError,omitempty"`
}

// PMD is one poll-mode driver compiled into (or loadable by) this rig.
type PMD struct {
	Name   string `json:"name"`             // as DPDK registers it: net_ring, mlx5_eth, …
	Kmod   string `json:"kmod,omitempty"`   // kernel modules it needs, as DPDK states them
	Params string `json:"params,omitempty"` // the devargs it takes
	PCIIDs int    `json:"pciIds"`           // PCI vendor/device entries it probes (0: a virtual device)
}
