package system

import (
	"fmt"
	"strconv"
	"strings"

	"rig/hugepages"
)

// grubDropIn is the file the kernel step owns: Debian's grub-mkconfig
// (update-grub) sources /etc/default/grub.d/*.cfg after /etc/default/grub
// (grub2-common's /usr/sbin/grub-mkconfig).
const grubDropIn = "/etc/default/grub.d/rig.cfg"

// grubDropInLine starts the one assignment rig writes: it appends to what
// /etc/default/grub set, so the distribution's own parameters stay.
const grubDropInLine = `GRUB_CMDLINE_LINUX="${GRUB_CMDLINE_LINUX:+$GRUB_CMDLINE_LINUX }`

// renderDropIn is the drop-in's whole content for these parameters.
func renderDropIn(tokens []string) string {
	return "# Written by rig's kernel step (the boot parameters of a rig playbook).\n" +
		"# Change the playbook and run `rig up`, not this file; `update-grub` reads it after /etc/default/grub.\n" +
		grubDropInLine + strings.Join(tokens, " ") + "\"\n"
}

// parseDropIn returns the parameters of a drop-in rig wrote, and whether
// the file has rig's form at all.
func parseDropIn(text string) (tokens []string, ours bool) {
	for _, line := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), grubDropInLine)
		if !ok {
			continue
		}
		rest, ok = strings.CutSuffix(rest, `"`)
		if !ok {
			return nil, false
		}
		return strings.Fields(rest), true
	}
	return nil, false
}

// splitCmdline splits a kernel command line the way the kernel's
// next_arg() does: on spaces, except inside double quotes; and, as
// parse_args() (kernel/params.c), it stops at a bare "--": what follows
// is init's arguments, not the kernel's (this VM's /proc/cmdline has
// "-- --firecracker-init --addr ...").
func splitCmdline(s string) []string {
	var out []string
	var b strings.Builder
	quoted := false
	for _, r := range s {
		switch {
		case r == '"':
			quoted = !quoted
		case (r == ' ' || r == '\t' || r == '\n') && !quoted:
			if b.Len() > 0 {
				if b.String() == "--" {
					return out
				}
				out = append(out, b.String())
				b.Reset()
			}
		default:
			b.WriteRune(r)
		}
	}
	if b.Len() > 0 && b.String() != "--" {
		out = append(out, b.String())
	}
	return out
}

// cmdline is what a kernel command line sets: each parameter's last value
// (the one the kernel uses for the parameters rig writes), and the boot
// hugepage pools in the kernel's order (hugepagesz= selects the size the
// next hugepages= counts; a hugepages= before any hugepagesz= counts the
// default size).
type cmdline struct {
	last      map[string]string
	pools     map[int64]int
	defaultKB int64
}

// parseCmdline reads a command line; archDefaultKB is the default page size
// when the line sets none (/proc/meminfo's Hugepagesize).
func parseCmdline(s string, archDefaultKB int64) cmdline {
	c := cmdline{last: map[string]string{}, pools: map[int64]int{}, defaultKB: archDefaultKB}
	toks := splitCmdline(s)
	for _, t := range toks {
		if k, v, _ := strings.Cut(t, "="); k == "default_hugepagesz" {
			if kb, err := hugepages.ParsePageSize(v); err == nil {
				c.defaultKB = kb
			}
		}
	}
	var size int64
	for _, t := range toks {
		k, v, _ := strings.Cut(t, "=")
		c.last[k] = v
		switch k {
		case "hugepagesz":
			size, _ = hugepages.ParsePageSize(v)
		case "hugepages":
			n, err := strconv.Atoi(v)
			if err != nil {
				continue
			}
			kb := size
			if kb == 0 {
				kb = c.defaultKB
			}
			c.pools[kb] = n
		}
	}
	return c
}

// bootItem is one thing the playbook wants on the command line: one
// parameter, or a hugepage pool (two parameters that only mean something
// together, in order).
type bootItem struct {
	tokens []string
	live   func(c cmdline) bool
	// poolKB, poolCount: a hugepage pool's page size and count (0: not
	// a pool), to compare with what the kernel reserved (bootPoolShort)
	poolKB    int64
	poolCount int
}

func (b bootItem) String() string { return strings.Join(b.tokens, " ") }

func argItem(arg string) bootItem {
	name, val, hasVal := strings.Cut(arg, "=")
	return bootItem{tokens: []string{arg}, live: func(c cmdline) bool {
		v, ok := c.last[name]
		return ok && (v == val || !hasVal && v == "")
	}}
}

func poolItem(sizeKB int64, size string, count int) bootItem {
	return bootItem{tokens: []string{"hugepagesz=" + size, "hugepages=" + strconv.Itoa(count)}, live: func(c cmdline) bool {
		n, ok := c.pools[sizeKB]
		return ok && n == count
	}, poolKB: sizeKB, poolCount: count}
}

func defaultSizeItem(kb int64, size string) bootItem {
	return bootItem{tokens: []string{"default_hugepagesz=" + size}, live: func(c cmdline) bool {
		_, set := c.last["default_hugepagesz"]
		return set && c.defaultKB == kb
	}}
}

// grubCfgLinuxArgs returns the parameters of the first `linux` line of a
// generated grub.cfg (the default entry's kernel line), or false.
func grubCfgLinuxArgs(text string) ([]string, bool) {
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "linux" {
			return f[2:], true
		}
	}
	return nil, false
}

// missingFrom lists the tokens not in have.
func missingFrom(tokens, have []string) []string {
	set := map[string]bool{}
	for _, h := range have {
		set[h] = true
	}
	var out []string
	for _, t := range tokens {
		if !set[t] {
			out = append(out, t)
		}
	}
	return out
}

// sysctlPath is a dotted sysctl name's file under /proc/sys.
func sysctlPath(key string) string { return "/proc/sys/" + strings.ReplaceAll(key, ".", "/") }

// normSysctl compares values the way sysctl(8) shows them: fields joined by
// one space (multi-value keys like net.ipv4.tcp_rmem are tab-separated).
func normSysctl(v string) string { return strings.Join(strings.Fields(v), " ") }

// sysctlDropIn is the file that keeps rig's sysctls across reboots
// (systemd-sysctl and procps read /etc/sysctl.d/*.conf, later names win).
const sysctlDropIn = "/etc/sysctl.d/90-rig.conf"

func renderSysctl(keys []string, want map[string]string) string {
	var b strings.Builder
	b.WriteString("# Written by rig's kernel step (the sysctls of a rig playbook); change the playbook, not this file.\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s = %s\n", k, normSysctl(want[k]))
	}
	return b.String()
}
