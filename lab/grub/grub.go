// Package grub is a virtual lab's GRUB: Debian's update-grub for the part
// rig needs (grub.cfg from /etc/default/grub and grub.d, without a shell)
// and the default entry a boot of the lab reads back from grub.cfg.
package grub

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The lab's update-grub: what Debian's does, for the part rig needs.
// Debian's /usr/sbin/update-grub (grub2-common, debian/update-grub) is
// `exec grub-mkconfig -o /boot/grub/grub.cfg "$@"`; grub-mkconfig sources
// /etc/default/grub and then every /etc/default/grub.d/*.cfg, in glob order
// (util/grub-mkconfig.in, Debian's patch), and /etc/grub.d/10_linux writes,
// for the newest kernel, a first menuentry whose `linux` line is
// `linux	/boot/vmlinuz-VERSION root=ROOT ro ${GRUB_CMDLINE_LINUX}
// ${GRUB_CMDLINE_LINUX_DEFAULT}`, then an "Advanced options" submenu with
// the same entry and a recovery one (`ro single ${GRUB_CMDLINE_LINUX}`)
// (util/grub.d/10_linux.in, linux_entry). GRUB boots the first entry
// (GRUB_DEFAULT=0) and passes the kernel `BOOT_IMAGE=PATH` and the line's
// words, joined by one space.
//
// The lab never runs a shell on those files: it reads the assignments of
// GRUB_CMDLINE_LINUX and GRUB_CMDLINE_LINUX_DEFAULT in the forms rig and
// distributions write (see parseGrubDefaults) and refuses any other form
// naming the file and line. Other variables (GRUB_TIMEOUT, GRUB_DISTRIBUTOR
// with its `lsb_release`...) are ignored. The kernel is the host's running
// one, as if /boot/vmlinuz-RELEASE were installed.

// Defaults and DropIns are what update-grub reads; Cfg what it
// writes.
const (
	Defaults = "/etc/default/grub"
	DropIns  = "/etc/default/grub.d"
	Cfg      = "/boot/grub/grub.cfg"
)

// grubVars are the variables the lab's update-grub tracks.
var grubVars = []string{"GRUB_CMDLINE_LINUX", "GRUB_CMDLINE_LINUX_DEFAULT"}

// Kernel is the kernel a lab's grub.cfg boots: its release and root device.
type Kernel struct {
	Release string // uname -r
	Root    string // root= value ("" = none known)
}

// RunningKernel describes the kernel seen from root: the release from
// /proc/sys/kernel/osrelease, root= from /proc/cmdline (the lab's view,
// inside a lab), else the device mounted on / (mountinfo).
func RunningKernel(root string) (Kernel, error) {
	b, err := os.ReadFile(filepath.Join(root, "/proc/sys/kernel/osrelease"))
	if err != nil {
		return Kernel{}, fmt.Errorf("kernel release: %w", err)
	}
	k := Kernel{Release: strings.TrimSpace(string(b))}
	if cl, err := os.ReadFile(filepath.Join(root, "/proc/cmdline")); err == nil {
		for _, f := range strings.Fields(string(cl)) {
			if v, ok := strings.CutPrefix(f, "root="); ok {
				k.Root = v
			}
		}
	}
	if k.Root != "" {
		return k, nil
	}
	mi, _ := os.ReadFile(filepath.Join(root, "/proc/self/mountinfo"))
	for _, line := range strings.Split(string(mi), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if ok && len(f) >= 5 && f[4] == "/" && len(g) >= 2 && strings.HasPrefix(g[1], "/dev/") {
			k.Root = g[1]
		}
	}
	return k, nil
}

// Update regenerates root+Cfg from root+Defaults and
// root+DropIns/*.cfg, printing to log what grub-mkconfig prints. The
// configuration is read whole before anything is written: a file it cannot
// read leaves grub.cfg as it was.
func Update(root string, k Kernel, log io.Writer) error {
	vars, err := readGrubDefaults(root)
	if err != nil {
		return err
	}
	dir := filepath.Join(root, filepath.Dir(Cfg))
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("update-grub: no %s directory (%v): GRUB is not installed here", filepath.Dir(Cfg), err)
	}
	fmt.Fprintln(log, "Generating grub configuration file ...")
	fmt.Fprintf(log, "Found linux image: /boot/vmlinuz-%s\n", k.Release)
	fmt.Fprintf(log, "Found initrd image: /boot/initrd.img-%s\n", k.Release)
	tmp := filepath.Join(dir, "grub.cfg.new")
	if err := os.WriteFile(tmp, []byte(renderGrubCfg(k, vars["GRUB_CMDLINE_LINUX"], vars["GRUB_CMDLINE_LINUX_DEFAULT"])), 0o444); err != nil {
		return fmt.Errorf("update-grub: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "grub.cfg")); err != nil {
		return fmt.Errorf("update-grub: %w", err)
	}
	fmt.Fprintln(log, "done")
	return nil
}

// readGrubDefaults reads /etc/default/grub (if there) and then each
// /etc/default/grub.d/*.cfg in name order, as grub-mkconfig sources them.
func readGrubDefaults(root string) (map[string]string, error) {
	files := []string{Defaults}
	ents, err := os.ReadDir(filepath.Join(root, DropIns))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("update-grub: %w", err)
	}
	var drop []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".cfg") {
			drop = append(drop, filepath.Join(DropIns, e.Name()))
		}
	}
	sort.Strings(drop)
	vars := map[string]string{}
	for _, f := range append(files, drop...) {
		b, err := os.ReadFile(filepath.Join(root, f))
		if errors.Is(err, fs.ErrNotExist) {
			continue // grub-mkconfig: `if test -f`, `if [ -e ]`
		}
		if err != nil {
			return nil, fmt.Errorf("update-grub: %w", err)
		}
		if err := parseGrubDefaults(f, string(b), vars); err != nil {
			return nil, err
		}
	}
	return vars, nil
}

// renderGrubCfg writes grub-mkconfig's output for one kernel (10_linux's
// entries; the other /etc/grub.d scripts add nothing rig reads).
func renderGrubCfg(k Kernel, linux, linuxDefault string) string {
	id := strings.TrimPrefix(k.Root, "UUID=")
	var b strings.Builder
	b.WriteString("#\n# DO NOT EDIT THIS FILE\n#\n# It is automatically generated by grub-mkconfig using templates\n" +
		"# from /etc/grub.d and settings from /etc/default/grub\n#\n\n### BEGIN /etc/grub.d/10_linux ###\n")
	const osName, class = "Debian GNU/Linux", "--class debian --class gnu-linux --class gnu --class os"
	entry := func(indent, title, entryID, args string) {
		fmt.Fprintf(&b, "%smenuentry '%s' %s $menuentry_id_option '%s' {\n", indent, title, class, entryID)
		for _, l := range []string{"load_video", "insmod gzio", "if [ x$grub_platform = xxen ]; then insmod xzio; insmod lzopio; fi",
			fmt.Sprintf("echo\t'Loading Linux %s ...'", k.Release),
			fmt.Sprintf("linux\t/boot/vmlinuz-%s root=%s ro %s", k.Release, k.Root, args),
			"echo\t'Loading initial ramdisk ...'", "initrd\t/boot/initrd.img-" + k.Release} {
			fmt.Fprintf(&b, "%s\t%s\n", indent, l)
		}
		fmt.Fprintf(&b, "%s}\n", indent)
	}
	entry("", osName, "gnulinux-simple-"+id, linux+" "+linuxDefault)
	fmt.Fprintf(&b, "submenu 'Advanced options for %s' $menuentry_id_option 'gnulinux-advanced-%s' {\n", osName, id)
	entry("\t", fmt.Sprintf("%s, with Linux %s", osName, k.Release), fmt.Sprintf("gnulinux-%s-advanced-%s", k.Release, id), linux+" "+linuxDefault)
	entry("\t", fmt.Sprintf("%s, with Linux %s (recovery mode)", osName, k.Release), fmt.Sprintf("gnulinux-%s-recovery-%s", k.Release, id), "single "+linux)
	b.WriteString("}\n\n### END /etc/grub.d/10_linux ###\n")
	return b.String()
}

// DefaultEntry returns the kernel image and the words of a grub.cfg's
// first `linux` line (the entry GRUB boots with GRUB_DEFAULT=0), and the
// command line that kernel gets: BOOT_IMAGE=IMAGE and the words, one space
// apart.
func DefaultEntry(grubCfg string) (image string, args []string, cmdline string, ok bool) {
	for _, line := range strings.Split(grubCfg, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "linux" {
			return f[1], f[2:], strings.Join(append([]string{"BOOT_IMAGE=" + f[1]}, f[2:]...), " "), true
		}
	}
	return "", nil, "", false
}
