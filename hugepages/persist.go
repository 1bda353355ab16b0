package hugepages

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// Persistence files rig writes so the setup survives a reboot. Each is a
// plain file the user can read and delete.
const (
	// TmpfilesPath holds one systemd-tmpfiles `w` line per pool: at boot,
	// systemd-tmpfiles-setup writes the count into the sysfs file.
	TmpfilesPath = "/etc/tmpfiles.d/rig-hugepages.conf"
	unitDir      = "/etc/systemd/system"
)

// PersistFile is one file with the content it must have.
type PersistFile struct {
	Path    string
	Content string
}

// Reservation is one wanted pool size.
type Reservation struct {
	SizeKB int64
	Node   int
	Count  int
	Exact  bool // shrink a bigger pool to Count; else Count is a minimum
}

// WantMount is one wanted hugetlbfs mount.
type WantMount struct {
	Path       string
	PageSizeKB int64
}

// PersistFiles returns the files that make reservations and mounts survive
// a reboot: a tmpfiles.d file for the counts (runtime reservation at early
// boot; 1 GiB pages may still need the kernel command line, which rig
// reports instead of editing the boot loader) and one systemd .mount unit
// per mount.
func PersistFiles(res []Reservation, mounts []WantMount) []PersistFile {
	var out []PersistFile
	if len(res) > 0 {
		var b strings.Builder
		b.WriteString("# Written by rig (hugepages persist: true). Delete this file to stop reserving at boot.\n")
		b.WriteString("# Type Path Mode User Group Age Argument\n")
		sorted := append([]Reservation(nil), res...)
		sort.Slice(sorted, func(i, j int) bool {
			if sorted[i].SizeKB != sorted[j].SizeKB {
				return sorted[i].SizeKB < sorted[j].SizeKB
			}
			return sorted[i].Node < sorted[j].Node
		})
		for _, r := range sorted {
			fmt.Fprintf(&b, "w %s - - - - %d\n", CountPath(r.SizeKB, r.Node), r.Count)
		}
		out = append(out, PersistFile{Path: TmpfilesPath, Content: b.String()})
	}
	for _, m := range mounts {
		name := MountUnitName(m.Path)
		content := fmt.Sprintf(`# Written by rig (hugepages persist: true). Disable and delete to stop mounting at boot.
[Unit]
Description=rig: hugetlbfs (pagesize=%[1]s) at %[2]s
DefaultDependencies=no
Before=sysinit.target
ConditionPathExists=/sys/kernel/mm/hugepages/hugepages-%[3]dkB

[Mount]
What=nodev
Where=%[2]s
Type=hugetlbfs
Options=pagesize=%[1]s

[Install]
WantedBy=sysinit.target
`, FormatSize(m.PageSizeKB), filepath.Clean(m.Path), m.PageSizeKB)
		out = append(out, PersistFile{Path: unitDir + "/" + name, Content: content})
	}
	return out
}

// MountUnitName is systemd's unit name for a mount point (systemd-escape
// --path --suffix=mount): /dev/hugepages -> dev-hugepages.mount.
func MountUnitName(p string) string {
	p = strings.Trim(filepath.Clean(p), "/")
	if p == "" {
		return "-.mount"
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '/':
			b.WriteByte('-')
		case c == '.' && (i == 0 || p[i-1] == '/'):
			fmt.Fprintf(&b, `\x%02x`, c)
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == ':', c == '_', c == '.':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, `\x%02x`, c)
		}
	}
	return b.String() + ".mount"
}
