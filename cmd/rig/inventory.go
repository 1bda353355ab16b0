package main

import (
	"github.com/spf13/cobra"

	"rig/smartnic"
)

// JSON schema names of the inventory commands.
const (
	mstStatusSchema = "rig.mst-status/v1"
	rdmaLinksSchema = "rig.rdma-links/v1"
)

// scanInventory is the one place these commands read the host root.
func (a *app) scanInventory(cmd *cobra.Command) (*smartnic.Inventory, error) {
	inv, err := smartnic.ScanContext(cmd.Context(), a.host())
	if err != nil {
		return nil, withCode(exitFailure, err)
	}
	return inv, nil
}

// newInventoryCmd is `rig inventory`.
func newInventoryCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "inventory",
		Short: "List every Mellanox/NVIDIA PCI function (15b3): model, mst name, NUMA, PCIe link, SR-IOV, netdevs and roles, RDMA ports, eSwitch mode, scalable functions (their netdevs and RDMA ports), bonds",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			inv, err := a.scanInventory(cmd)
			if err != nil {
				return err
			}
			if a.json() {
				return a.emitJSON(inv)
			}
			return smartnic.WriteInventory(a.out, inv)
		},
	}
}

// newMSTCmd is `rig mst status`: MFT's `mst status -v` (the MST modules
// block, then the device table built from the inventory), without MFT.
func newMSTCmd(a *app) *cobra.Command {
	mst := &cobra.Command{Use: "mst", Short: "mst devices (as NVIDIA MFT's mst names them)"}
	mst.AddCommand(&cobra.Command{
		Use:   "status",
		Short: "Print `mst status -v`: MST modules, then DEVICE_TYPE MST PCI RDMA NET NUMA per device, without needing MFT",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			inv, err := a.scanInventory(cmd)
			if err != nil {
				return err
			}
			rows, mods := smartnic.MSTRows(inv), smartnic.ReadMSTModules(a.host())
			if a.json() {
				if rows == nil {
					rows = []smartnic.MSTRow{}
				}
				return a.emitJSON(mstStatusReport{mstStatusSchema, mods, rows})
			}
			return smartnic.WriteMSTStatus(a.out, mods, rows)
		},
	})
	return mst
}

// newRDMACmd is `rig rdma links`: iproute2's `rdma link` from sysfs.
func newRDMACmd(a *app) *cobra.Command {
	rdma := &cobra.Command{Use: "rdma", Short: "RDMA devices and links"}
	rdma.AddCommand(&cobra.Command{
		Use:     "links",
		Aliases: []string{"link"},
		Short:   "Print every RDMA port like `rdma link` (InfiniBand: subnet_prefix, lid, sm_lid, lmc; state, physical_state, netdev)",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			inv, err := a.scanInventory(cmd)
			if err != nil {
				return err
			}
			links := smartnic.RDMALinks(inv)
			if a.json() {
				if links == nil {
					links = []smartnic.RDMALink{}
				}
				return a.emitJSON(rdmaLinksReport{rdmaLinksSchema, links})
			}
			return smartnic.WriteRDMALinks(a.out, links)
		},
	})
	return rdma
}
