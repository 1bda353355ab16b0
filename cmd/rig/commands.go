package main

import "github.com/spf13/cobra"

// addCommands registers every subcommand. Each command group lives in its
// own file and exposes one constructor taking the shared *app.
func addCommands(root *cobra.Command, a *app) {
	root.AddCommand(newPlanCmd(a), newUpCmd(a), newDownCmd(a), newCheckCmd(a), newPlaybooksCmd(a))
	root.AddCommand(newHugepagesCmd(a))
	root.AddCommand(newInventoryCmd(a), newMSTCmd(a), newRDMACmd(a), newDoctorCmd(a))
	root.AddCommand(newBenchCmd(a))
	root.AddCommand(newModeCmd(a), newFwSimCmd(a))
	root.AddCommand(newOVSCmd(a))
	root.AddCommand(newLabCmd(a))
	root.AddCommand(newVersionCmd(a))
	addVersionFlag(root, a)
}
