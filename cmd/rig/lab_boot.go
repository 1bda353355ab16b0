package main

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"rig/internal/labinfo"
	"rig/lab"
	"rig/lab/grub"
)

func newLabRebootCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "reboot NAME",
		Short: "Reboot the lab's host (not the card): /proc/cmdline from grub.cfg's default entry, net.* sysctls from /etc/sysctl.d, services restarted; firmware Next Boot does not load",
		Long: `rig lab reboot NAME does what a warm reboot of the host does: the card's firmware
keeps running (Next Boot loads only at "rig lab power-cycle"; a card with a pending
mode change loses NV access until then), every process in the lab ends, the lab's
/proc/cmdline becomes what its /boot/grub/grub.cfg's default entry boots, the net.*
sysctls of its /etc/sysctl.d are applied, and OvS starts again. Not reset: sysctls
outside net.* (the host's kernel), net.* values no file sets, hugepage pools, cables.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := a.labManagerFor(args[0])
			if err != nil {
				return err
			}
			rep, err := m.Reboot(cmd.Context(), args[0])
			if err != nil && rep == nil {
				return labError(err)
			}
			if a.json() {
				if jerr := a.emitJSON(rep); jerr != nil {
					return jerr
				}
				return labError(err)
			}
			for _, b := range rep.NVAccessLost {
				fmt.Fprintf(a.out, "firmware: %s kept its running firmware with a pending mode change; NV access fails until `rig lab power-cycle %s`\n", b, rep.Name)
			}
			for _, p := range rep.Stopped {
				fmt.Fprintf(a.out, "stopped %d %s\n", p.PID, p.Comm)
			}
			printBoot(a.out, &rep.Boot)
			for _, r := range rep.Restarted {
				fmt.Fprintf(a.out, "started %s\n", r)
			}
			return labError(err)
		},
	}
}

// printBoot prints what booting the lab's OS did.
func printBoot(w io.Writer, b *lab.BootReport) {
	if b == nil {
		return
	}
	fmt.Fprintf(w, "boot: /proc/cmdline: %s\n", b.Cmdline)
	for _, s := range b.Sysctl {
		fmt.Fprintf(w, "boot: sysctl %s\n", s)
	}
	for _, n := range b.Notes {
		fmt.Fprintf(w, "boot: note: %s\n", n)
	}
}

// labUpdateGrubTool says whether argv0 names the lab's update-grub (the
// rig binary, linked from the lab's bin dir).
func labUpdateGrubTool(argv0 string) bool { return filepath.Base(argv0) == "update-grub" }

// runLabUpdateGrub is the lab's update-grub: it regenerates the lab's
// /boot/grub/grub.cfg from its /etc/default/grub and grub.d (grub.Update),
// printing what grub-mkconfig prints. Outside a lab it refuses, so a host
// without GRUB is not fooled.
func runLabUpdateGrub(args []string, stderr io.Writer) int {
	info, err := labinfo.Read("/")
	if err != nil {
		fmt.Fprintf(stderr, "update-grub (rig): %v\n", err)
		return 1
	}
	if info == nil {
		fmt.Fprintf(stderr, "update-grub: this is rig's lab stand-in for Debian's update-grub, which answers only inside a rig lab (no %s); install grub2-common for the real one\n", labinfo.Path)
		return 1
	}
	if len(args) > 0 {
		fmt.Fprintf(stderr, "update-grub (rig lab %s): takes no arguments here (it always writes %s), got %q\n", info.Name, grub.Cfg, args)
		return 1
	}
	k, err := grub.RunningKernel("/")
	if err == nil {
		err = grub.Update("/", k, stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return 1
	}
	return 0
}
