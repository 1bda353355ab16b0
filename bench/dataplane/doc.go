// Package dataplane is rig's embedded DPDK dataplane in this process, the
// only user of bench/internal/dpdk (cgo): Run opens EAL, the mbuf pool
// and the ports of a bench.Config, runs its units on the worker lcores
// under a monitor, collects the Result and closes everything again, with
// what that needs around it (memif and vhost-user ports toward a switch,
// af_packet kicks, what a PMD's log says about a port, thread pinning,
// hugepages, pcap replay). Built without cgo, Run says the dataplane is
// not built in (bench.ErrNoDataplane).
package dataplane
