package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"rig/hugepages"
	"rig/internal/host"
	"rig/playbooks"
)

const hugepagesShowSchema = "rig.hugepages/v1"

func newHugepagesCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "hugepages",
		Short: "Show and set hugepages (per size and NUMA node) and hugetlbfs mounts",
	}
	cmd.AddCommand(newHugepagesShowCmd(a), newHugepagesSetCmd(a), newHugepagesCleanCmd(a))
	return cmd
}

func newHugepagesShowCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "show",
		Short: "Print pages per size and node, hugetlbfs mounts, and leftovers of dead DPDK processes",
		Long: `Print pages per size and NUMA node, /proc/meminfo, hugetlbfs mounts, and what
dead DPDK processes left behind: runtime directories /var/run/dpdk/<prefix>/ whose
process is gone (no process holds the write lock a DPDK primary keeps on its
config file) and <prefix>map_* hugepage files no live process maps or holds
open. ` + "`rig hugepages clean`" + ` removes those leftovers.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			h := a.host()
			st, rdErr, err := readStateWithLeftovers(h)
			if err != nil {
				return err
			}
			verify := st.VerifyMeminfo()
			if a.json() {
				out := hugepagesShowReport{SchemaVersion: hugepagesShowSchema, State: st}
				if rdErr != nil {
					out.RuntimeDirsError = rdErr.Error()
				}
				if verify != nil {
					out.MeminfoMismatch = verify.Error()
				}
				return a.emitJSON(out)
			}
			return writeHugepagesShow(a.out, st, rdErr, verify)
		},
	}
}

// writeHugepagesShow prints `rig hugepages show` for people.
func writeHugepagesShow(w io.Writer, st *hugepages.State, rdErr, verify error) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SIZE\tNODE\tTOTAL\tFREE\tRSVD\tSURP\tMEMORY")
	for _, p := range st.Pools {
		node, rsvd := "all", strconv.Itoa(p.Reserved)
		if p.Node != hugepages.AllNodes {
			node, rsvd = strconv.Itoa(p.Node), "-"
		}
		def := ""
		if p.SizeKB == st.DefaultSizeKB && p.Node == hugepages.AllNodes {
			def = " (default)"
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%d\t%d\t%s\t%d\t%s\n", hugepages.FormatSize(p.SizeKB), def, node,
			p.Total, p.Free, rsvd, p.Surplus, hugepages.FormatAmount(int64(p.Total)*p.SizeKB))
	}
	tw.Flush()
	fmt.Fprintf(w, "\n/proc/meminfo: HugePages_Total=%d HugePages_Free=%d HugePages_Rsvd=%d HugePages_Surp=%d Hugepagesize=%d kB\n",
		st.Meminfo.Total, st.Meminfo.Free, st.Meminfo.Reserved, st.Meminfo.Surplus, st.Meminfo.DefaultSizeKB)
	if verify != nil {
		fmt.Fprintf(w, "WARNING: %v\n", verify)
	}
	if len(st.Mounts) == 0 {
		fmt.Fprintln(w, "\nNo hugetlbfs mounted (DPDK needs one unless it runs with --in-memory)")
	} else {
		fmt.Fprintln(w, "\nhugetlbfs mounts:")
		for _, m := range st.Mounts {
			fmt.Fprintf(w, "  %s  pagesize=%s  (%s)\n", m.Path, hugepages.FormatSize(m.PageSizeKB), m.Options)
		}
	}
	if len(st.Stale) > 0 {
		var pages int64
		fmt.Fprintln(w, "\nStale DPDK hugepage files (no live process maps or holds them):")
		for _, f := range st.Stale {
			fmt.Fprintf(w, "  %s  %d x %s\n", f.Path, f.Pages, hugepages.FormatSize(f.PageSizeKB))
			pages += f.Pages
		}
		fmt.Fprintf(w, "  %d page(s) held; `rig hugepages clean` deletes them\n", pages)
	}
	if rdErr != nil {
		fmt.Fprintf(w, "\nWARNING: DPDK runtime directories not checked: %v (run as root to see them)\n", rdErr)
	}
	if len(st.RuntimeDirs) > 0 {
		fmt.Fprintf(w, "\nDPDK runtime directories (%s):\n", hugepages.DPDKRunDir)
		dead := 0
		for _, d := range st.RuntimeDirs {
			fmt.Fprintf(w, "  %s  %s: %s\n", d.Path, d.State, d.Why)
			if d.State == hugepages.RuntimeDead {
				dead++
			}
		}
		if dead > 0 {
			fmt.Fprintf(w, "  %d dead; `rig hugepages clean` removes them\n", dead)
		}
	}
	return nil
}

// readStateWithLeftovers is ReadState plus stale hugepage files and DPDK
// runtime directories; rdErr says why the runtime directories could not be
// read (e.g. /var/run/dpdk is root's only), which `show` reports and goes on.
func readStateWithLeftovers(h *host.Host) (st *hugepages.State, rdErr, err error) {
	st, err = hugepages.ReadState(h)
	if err != nil {
		return nil, nil, err
	}
	users := hugepages.Users(h)
	st.Stale = hugepages.FindStale(h, st.Mounts)
	st.RuntimeDirs, rdErr = hugepages.FindRuntimeDirs(h, users)
	return st, rdErr, nil
}

func newHugepagesCleanCmd(a *app) *cobra.Command {
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "clean [--dry-run]",
		Short: "Remove what dead DPDK processes left: runtime dirs in /var/run/dpdk and stale hugepage files",
		Long: `Remove DPDK runtime directories (/var/run/dpdk/<prefix>/, any prefix: rte,
ovs..., rig<pid>) whose process is gone, and <prefix>map_* files on hugetlbfs
mounts that no live process maps or holds open; their pages go back to the free
pool. A runtime dir is dead when no process holds the write lock a DPDK primary
keeps on its config file and no process holds a lock on its files; each one is
re-checked (and its config locked) right before it is removed. Live and
undecidable ones are never touched.

` + exitCodesHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			h := a.host()
			st, rdErr, err := readStateWithLeftovers(h)
			if err != nil {
				return err
			}
			if rdErr != nil {
				return rdErr
			}
			var dead []hugepages.RuntimeDir
			for _, d := range st.RuntimeDirs {
				if d.State == hugepages.RuntimeDead {
					dead = append(dead, d)
				}
			}
			if dryRun {
				for _, d := range dead {
					fmt.Fprintf(a.out, "would remove %s (%s)\n", d.Path, d.Why)
				}
				for _, f := range st.Stale {
					fmt.Fprintf(a.out, "would remove %s (%d x %s)\n", f.Path, f.Pages, hugepages.FormatSize(f.PageSizeKB))
				}
				if len(dead)+len(st.Stale) == 0 {
					fmt.Fprintln(a.out, "nothing to clean")
				}
				return nil
			}
			rep, cerr := hugepages.Clean(h, dead, st.Stale)
			if a.json() {
				if err := a.emitJSON(hugepagesCleanReport{hugepagesCleanSchema, rep}); err != nil {
					return err
				}
				return cerr
			}
			for _, d := range rep.RuntimeDirs {
				fmt.Fprintf(a.out, "removed %s\n", d)
			}
			for _, f := range rep.HugeFiles {
				fmt.Fprintf(a.out, "removed %s\n", f)
			}
			for _, s := range rep.Skipped {
				fmt.Fprintf(a.out, "skipped %s\n", s)
			}
			fmt.Fprintf(a.out, "freed %d hugepage(s), removed %d runtime dir(s) and %d hugepage file(s)\n",
				rep.Pages, len(rep.RuntimeDirs), len(rep.HugeFiles))
			return cerr
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "only print what would be removed")
	return cmd
}

// checkSetSize rejects a --size this host does not offer, listing the ones
// it does (from /sys/kernel/mm/hugepages under the root).
func checkSetSize(h *host.Host, size string) error {
	kb, perr := hugepages.ParsePageSize(size)
	sizes, serr := hugepages.Sizes(h)
	if serr != nil {
		if perr != nil {
			return fmt.Errorf("hugepages set: --size: %w", perr)
		}
		return nil // the step reports the missing sysfs dir
	}
	why := ""
	switch {
	case perr != nil:
		why = perr.Error()
	case !slices.Contains(sizes, kb):
		why = fmt.Sprintf("page size %s not offered by this kernel", hugepages.FormatSize(kb))
	default:
		return nil
	}
	return fmt.Errorf("hugepages set: --size %s: %s; this host offers %s (/sys/kernel/mm/hugepages): use one of them, e.g. --size %s",
		size, why, hugepages.FormatSizes(sizes), hugepages.FormatSize(firstOr(sizes, 2048)))
}

func firstOr(kbs []int64, def int64) int64 {
	if len(kbs) == 0 {
		return def
	}
	return kbs[0]
}

func newHugepagesSetCmd(a *app) *cobra.Command {
	var (
		size    string
		count   int
		node    int
		mount   string
		persist bool
		exact   bool
		dryRun  bool
	)
	cmd := &cobra.Command{
		Use:   "set --size 2M --count N [--node N] [--mount DIR] [--persist]",
		Short: "Reserve pages (system-wide or on one node) and optionally mount hugetlbfs, verified",
		Long: `Reserve pages through sysfs and read them back; when the kernel grants fewer
than asked, the previous count is restored and rig says why and how to fix it.
This runs the same hugepages step as a playbook's hugepages section: --count is a
minimum (a bigger pool is left alone: other DPDK processes may use it) unless
--exact, and even --exact never frees pages that are in use.

` + exitCodesHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			h := a.host()
			if err := checkSetSize(h, size); err != nil {
				return withCode(exitUsage, err)
			}
			spec := &playbooks.HugepagesSpec{Persist: persist,
				Pages: []playbooks.HugepageReservation{{Size: size, Count: count, Exact: exact}}}
			if cmd.Flags().Changed("node") {
				spec.Pages[0].Node = &node
			}
			if mount != "" {
				spec.Mounts = []playbooks.HugetlbfsMount{{Path: mount, PageSize: size}}
			}
			if err := fieldErrors("hugepages set", spec.Validate()); err != nil {
				return err
			}
			return a.provisionSection(cmd.Context(), &playbooks.Playbook{Hugepages: spec}, dryRun)
		},
	}
	cmd.Flags().StringVar(&size, "size", "2M", "page size (2M, 1G, 2048kB)")
	cmd.Flags().IntVar(&count, "count", 0, "number of pages wanted")
	cmd.Flags().IntVar(&node, "node", 0, "NUMA node (default: system-wide)")
	cmd.Flags().StringVar(&mount, "mount", "", "also mount hugetlbfs with this page size at DIR")
	cmd.Flags().BoolVar(&exact, "exact", false, "shrink a bigger pool to --count (never below the pages in use); without it --count is a minimum")
	cmd.Flags().BoolVar(&persist, "persist", false, "also write boot-time config (/etc/tmpfiles.d, a systemd mount unit)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "only print what would change")
	_ = cmd.MarkFlagRequired("count")
	a.registerLockFlags(cmd)
	return cmd
}
