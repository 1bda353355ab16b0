package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"rig/bench/dataplane"
	"rig/internal/buildinfo"
)

// versionSchema names `rig version -o json`'s shape.
const versionSchema = "rig.version/v1"

// versionReport is `rig version`: rig's build and the DPDK in it.
type versionReport struct {
	SchemaVersion string `json:"schemaVersion"`
	buildinfo.Info
	DPDK dataplane.DPDKInfo `json:"dpdk"`
}

// newVersionCmd is `rig version`.
func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print rig's version and commit, the Go that built it, the DPDK linked in (static or shared) and its PMDs",
		Long: `Print rig's version (git describe at release build time, else Go's stamp of the
repository), commit, Go version and platform, the DPDK version linked in
(rte_version()), whether DPDK is linked statically (release and make builds:
the C library is rig's only run-time dependency) or shared, and the poll-mode
drivers rig carries, read from DPDK's PMD_INFO_STRING records in the executable
(static) or in EAL's driver directory (shared). rig --version prints the same.
-o json: schemaVersion ` + versionSchema + `.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return a.printVersion() },
	}
}

// addVersionFlag gives root a --version flag that prints what `rig
// version` prints; root itself, without it, prints its help as before.
func addVersionFlag(root *cobra.Command, a *app) {
	show := root.Flags().Bool("version", false, "print rig's version, the DPDK linked in and its PMDs (as rig version)")
	root.Args = cobra.NoArgs
	root.RunE = func(cmd *cobra.Command, args []string) error {
		if *show {
			return a.printVersion()
		}
		return cmd.Help()
	}
}

func (a *app) printVersion() error {
	rep := versionReport{SchemaVersion: versionSchema, Info: buildinfo.Read(), DPDK: dataplane.DPDK()}
	if a.json() {
		return a.emitJSON(rep)
	}
	return writeVersion(a.out, rep)
}

// writeVersion prints the report as aligned "what  value" lines.
func writeVersion(w io.Writer, r versionReport) error {
	commit := r.Commit
	var notes []string
	if r.CommitTime != "" {
		notes = append(notes, r.CommitTime)
	}
	if r.Modified {
		notes = append(notes, "modified")
	}
	if len(notes) > 0 {
		commit += " (" + strings.Join(notes, ", ") + ")"
	}
	build := r.GoVersion + " " + r.Platform
	if r.Cgo {
		build += ", cgo"
	} else {
		build += ", without cgo"
	}
	if r.Tags != "" {
		build += ", tags " + r.Tags
	}
	dpdk, pmds := "none (built without cgo)", "none"
	if r.DPDK.Version != "" {
		dpdk = r.DPDK.Version + ", linked " + r.DPDK.Linked
		pmds = pmdLine(r.DPDK)
	}
	_, err := fmt.Fprintf(w, "rig     %s\ncommit  %s\ngo      %s\ndpdk    %s\npmds    %s\n", r.Version, commit, build, dpdk, pmds)
	return err
}

// pmdLine lists the PMDs by name and says where they were read.
func pmdLine(d dataplane.DPDKInfo) string {
	if d.PMDError != "" {
		return "unknown: " + d.PMDError
	}
	names := make([]string, len(d.PMDs))
	for i, p := range d.PMDs {
		names[i] = p.Name
	}
	from := strings.Join(d.PMDsFrom, " ")
	if len(d.PMDsFrom) > 1 {
		from = fmt.Sprintf("%d libraries in EAL's driver directory", len(d.PMDsFrom))
	}
	return fmt.Sprintf("%s (%d, from %s)", strings.Join(names, " "), len(names), from)
}
