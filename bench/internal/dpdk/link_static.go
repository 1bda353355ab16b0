//go:build dpdkstatic

package dpdk

// Static link (make builds with -tags dpdkstatic): the PMDs rig drives and
// DPDK's core libraries are linked into the rig binary. No librte_*.so has
// to be found at run time, and the PMDs' per-packet TLS accesses
// (rte_lcore_id in the mempool paths) no longer go through __tls_get_addr:
// io forwarding on net_null ran 18 % faster than the shared build here.
// --whole-archive keeps the PMDs' registration constructors; cgo needs
// CGO_LDFLAGS_ALLOW for it (the Makefile exports it). Compiler flags come
// from pkg-config (dpdk.go); so do its shared -lrte_* flags, after these
// archives and behind its -Wl,--as-needed, so no librte_*.so is linked in.

/*
#cgo LDFLAGS: -Wl,--whole-archive -l:librte_net_null.a -l:librte_net_ring.a -l:librte_net_memif.a -l:librte_net_af_packet.a -l:librte_net_tap.a -l:librte_net_virtio.a -l:librte_net_vhost.a -l:librte_net_pcap.a -l:librte_net_mlx5.a -l:librte_common_mlx5.a -l:librte_bus_auxiliary.a -l:librte_bus_pci.a -l:librte_bus_vdev.a -l:librte_mempool_ring.a -l:librte_vhost.a -l:librte_ethdev.a -l:librte_mbuf.a -l:librte_mempool.a -l:librte_ring.a -l:librte_eal.a -l:librte_kvargs.a -l:librte_telemetry.a -l:librte_net.a -l:librte_meter.a -l:librte_pci.a -l:librte_hash.a -l:librte_rcu.a -l:librte_cryptodev.a -l:librte_dmadev.a -l:librte_timer.a -l:librte_gso.a -l:librte_security.a -l:librte_cmdline.a -l:librte_metrics.a -Wl,--no-whole-archive
#cgo LDFLAGS: -lmlx5 -libverbs -lpcap -lnuma -lbsd -lelf -ljansson -lm -ldl -pthread -latomic -lrt
*/
import "C"
