//go:build dpdkstatic

package dpdk

// Static link (make builds with -tags dpdkstatic, and so does make
// release): the PMDs rig drives, DPDK's core libraries and every library
// they need are linked into the rig binary, so that the C library (glibc:
// libc.so.6, libm.so.6 and the dynamic loader) is all it needs at run time
// (cmd/rig's TestReleaseDynamicDeps checks this). No librte_*.so has to be
// found at run time, and the PMDs' per-packet TLS accesses (rte_lcore_id in
// the mempool paths) no longer go through __tls_get_addr: io forwarding on
// net_null ran 18 % faster than the shared build here.
//
// The same -l:NAME.a list serves amd64 and arm64: the archives are
// Debian's, found through pkg-config's -L (the host's multiarch directory,
// or the arm64 sysroot that make release unpacks, mk/release.mk).
// --whole-archive keeps the registration constructors of the PMDs and of
// rdma-core's mlx5 provider (a static libibverbs has no provider of its
// own and dlopens none: mlx5 registers itself from libmlx5.a's mlx5.o,
// which nothing else would pull in); cgo needs CGO_LDFLAGS_ALLOW for it
// (the Makefile exports it). Then, as plain archives: libibverbs (needs
// libnl-route-3, libnl-3), libpcap (net_pcap; its D-Bus capture source is
// left out, pcap_nodbus.c), libnuma (EAL), libjansson (metrics
// telemetry), libbsd and libmd (strlcpy and friends), and gcc's libatomic
// (16-byte atomics on arm64). libelf, which pkg-config names too, is only
// for librte_bpf, not linked. Compiler flags come from pkg-config
// (dpdk.go); so do its shared -lrte_* flags, after these archives and
// behind its -Wl,--as-needed, so no librte_*.so is linked in.

/*
#cgo LDFLAGS: -Wl,--whole-archive -l:librte_net_null.a -l:librte_net_ring.a -l:librte_net_memif.a -l:librte_net_af_packet.a -l:librte_net_tap.a -l:librte_net_virtio.a -l:librte_net_vhost.a -l:librte_net_pcap.a -l:librte_net_mlx5.a -l:librte_common_mlx5.a -l:librte_bus_auxiliary.a -l:librte_bus_pci.a -l:librte_bus_vdev.a -l:librte_mempool_ring.a -l:librte_vhost.a -l:librte_ethdev.a -l:librte_mbuf.a -l:librte_mempool.a -l:librte_ring.a -l:librte_eal.a -l:librte_kvargs.a -l:librte_telemetry.a -l:librte_net.a -l:librte_meter.a -l:librte_pci.a -l:librte_hash.a -l:librte_rcu.a -l:librte_cryptodev.a -l:librte_dmadev.a -l:librte_timer.a -l:librte_gso.a -l:librte_security.a -l:librte_cmdline.a -l:librte_metrics.a -l:libmlx5.a -Wl,--no-whole-archive
#cgo LDFLAGS: -l:libibverbs.a -l:libnl-route-3.a -l:libnl-3.a -l:libpcap.a -l:libnuma.a -l:libjansson.a -l:libbsd.a -l:libmd.a -l:libatomic.a -lm -ldl -pthread -lrt
*/
import "C"

import (
	"fmt"
	"os"
)

// Linked says how DPDK is linked into this binary: "static" here.
const Linked = "static"

// pmdFiles: a static rig carries its drivers itself, and EAL loads no
// plugin (eal_plugins_init adds the driver directory only when
// librte_eal.so is loaded).
func pmdFiles() ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find this executable to read its PMD records: %w (is /proc mounted?)", err)
	}
	return []string{exe}, nil
}
