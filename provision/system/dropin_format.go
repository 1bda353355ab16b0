package system

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"rig/hugepages"
	"rig/provision"
)

// rig down writes a drop-in's content from before rig's first write back
// into the drop-in. The drop-ins are rig's own files, read at boot as
// root (grub's is sourced by a shell), so what it restores there must be
// what an earlier rig could have written: content that parses in the
// drop-in's own format and renders back to itself. These say why content
// is not ("" when it is).

// sysctlKey is a sysctl name as rig's drop-in holds it.
var sysctlKey = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.\-/]*$`)

// kernelBeforeWhy checks content recorded for one of the kernel step's
// drop-ins.
func kernelBeforeWhy(path, content string) string {
	switch path {
	case grubDropIn:
		tokens, ours := parseDropIn(content)
		if !ours || renderDropIn(tokens) != content {
			return "it is not the grub drop-in rig writes (rig's two comment lines, then one " + grubDropInLine + `..." line)`
		}
		for _, t := range tokens {
			if i := strings.IndexAny(t, "$`\"'\\;"); i >= 0 {
				return fmt.Sprintf("the boot parameter %q holds %q, which the shell that reads the file interprets", t, t[i])
			}
			if why := provision.BadText(t, provision.MaxRecordedValue); why != "" {
				return "a boot parameter: " + why
			}
		}
	case sysctlDropIn:
		lines := strings.SplitAfter(content, "\n")
		if len(lines) < 1 || lines[len(lines)-1] != "" {
			return "it is not the sysctl drop-in rig writes (rig's comment line, then KEY = VALUE lines, each ending in a newline)"
		}
		want := map[string]string{}
		var keys []string
		for i, l := range lines[1 : len(lines)-1] {
			k, v, ok := strings.Cut(strings.TrimSuffix(l, "\n"), " = ")
			if !ok || !sysctlKey.MatchString(k) || normSysctl(v) != v || provision.BadText(v, provision.MaxRecordedValue) != "" {
				return fmt.Sprintf("line %d, %q, is not a KEY = VALUE line of rig's sysctl drop-in", i+2, strings.TrimSuffix(l, "\n"))
			}
			keys, want[k] = append(keys, k), v
		}
		if renderSysctl(keys, want) != content {
			return "it is not the sysctl drop-in rig writes (rig's comment line, then KEY = VALUE lines)"
		}
	}
	return ""
}

// tmpfilesLine is one line of rig's tmpfiles.d drop-in.
var tmpfilesLine = regexp.MustCompile(`^w /sys/(?:kernel/mm/hugepages|devices/system/node/node(\d+)/hugepages)/hugepages-(\d+)kB/nr_hugepages - - - - (\d+)$`)

// hugepagesBeforeWhy checks content recorded for one of the hugepages
// step's persistence files: the tmpfiles.d drop-in (pools of the host's
// sizes) or a mount unit of one of the playbook's mounts (at one of the
// host's page sizes).
func hugepagesBeforeWhy(path, content string, sizes []int64, mounts []hugepages.WantMount) string {
	if path == hugepages.TmpfilesPath {
		_, why := tmpfilesPools(content)
		return why
	}
	for _, m := range mounts {
		for _, kb := range sizes {
			if f := hugepages.PersistFiles(nil, []hugepages.WantMount{{Path: m.Path, PageSizeKB: kb}}); len(f) == 1 && f[0].Path == path && f[0].Content == content {
				return ""
			}
		}
	}
	return "it is not the mount unit rig writes for this playbook's mount at any of this host's page sizes"
}

// tmpfilesPools reads the pools of rig's tmpfiles.d drop-in, or says why
// content is not that drop-in.
func tmpfilesPools(content string) ([]hugepages.Reservation, string) {
	var res []hugepages.Reservation
	for _, l := range strings.Split(strings.TrimSuffix(content, "\n"), "\n") {
		if strings.HasPrefix(l, "#") {
			continue
		}
		m := tmpfilesLine.FindStringSubmatch(l)
		if m == nil {
			return nil, fmt.Sprintf("the line %q is not a page count line of rig's tmpfiles.d drop-in", l)
		}
		r := hugepages.Reservation{Node: hugepages.AllNodes}
		r.SizeKB, _ = strconv.ParseInt(m[2], 10, 64)
		r.Count, _ = strconv.Atoi(m[3])
		if m[1] != "" {
			r.Node, _ = strconv.Atoi(m[1])
		}
		res = append(res, r)
	}
	if f := hugepages.PersistFiles(res, nil); len(f) != 1 || f[0].Content != content {
		return nil, "it is not the tmpfiles.d drop-in rig writes (rig's comment lines, then one `w` line per pool)"
	}
	return res, ""
}

// parseTmpfiles is the pools of rig's tmpfiles.d drop-in (none when
// content is not rig's).
func parseTmpfiles(content string) []hugepages.Reservation {
	res, _ := tmpfilesPools(content)
	return res
}
