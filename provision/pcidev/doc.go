// Package pcidev holds the steps that act on the host's PCI functions:
// sriov (VF counts, eSwitch mode) and bind (a function to a DPDK driver,
// never one the host is reached through). Like provision/system's, each
// records what it changed in rig's state file, and two playbooks' records
// of one function compose (provision.Handover).
package pcidev
