//go:build !dpdkstatic

package dpdk

// Default link: DPDK's shared libraries, from the pkg-config line in
// dpdk.go; EAL loads the PMDs from its driver directory at run time.
// `make` builds with -tags dpdkstatic instead (link_static.go).
