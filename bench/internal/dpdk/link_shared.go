//go:build !dpdkstatic

package dpdk

// Default link: DPDK's shared libraries through pkg-config; EAL loads the
// PMDs from its driver directory at run time. `make` builds with
// -tags dpdkstatic instead (link_static.go).

/*
#cgo pkg-config: libdpdk
*/
import "C"
