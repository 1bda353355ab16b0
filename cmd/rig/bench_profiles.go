package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"rig/bench"
)

// benchProfilesSchema names the JSON of `rig bench profiles`.
const benchProfilesSchema = "rig.bench-profiles/v1"

// newBenchProfilesCmd is `rig bench profiles`: the named profiles, what
// each expands to and where it comes from.
func newBenchProfilesCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "profiles",
		Short: "List the named mlx5 profiles (--profile NAME): devargs, queue settings and the seed each comes from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ps := bench.Profiles()
			if a.json() {
				return a.emitJSON(benchProfilesReport{benchProfilesSchema, ps})
			}
			for i, p := range ps {
				if i > 0 {
					fmt.Fprintln(a.out)
				}
				writeProfile(a, p)
			}
			return nil
		},
	}
}

func writeProfile(a *app, p bench.Profile) {
	s := p.Settings
	fmt.Fprintf(a.out, "%s: %s\n", p.Name, p.Summary)
	fmt.Fprintf(a.out, "  source:   %s\n", p.Source)
	fmt.Fprintf(a.out, "  devargs:  %s (appended to every PCI port; a key the port gives keeps its value)\n", p.DevargsString())
	fmt.Fprintf(a.out, "  settings: --rxq %d --txq %d --rxd %d --txd %d --burst %d --mbuf-cache %d (a flag given explicitly wins)\n",
		s.RxQ, s.TxQ, s.RxD, s.TxD, s.Burst, s.MbufCache)
	var om []string
	for _, o := range p.Omitted {
		om = append(om, fmt.Sprintf("%s (%s)", o.Arg, o.Why))
	}
	if len(om) > 0 {
		fmt.Fprintf(a.out, "  not carried from the seed: %s\n", strings.Join(om, "; "))
	}
}
