package main

import "github.com/spf13/cobra"

func newHugepagesCmd(a *app) *cobra.Command {
	return &cobra.Command{Use: "hugepages", Short: "Show and set hugepages"}
}
