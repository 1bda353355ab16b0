package hugepages

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Mount is one hugetlbfs mount from /proc/mounts.
type Mount struct {
	Path       string `json:"path"`
	PageSizeKB int64  `json:"pageSizeKB"`
	Options    string `json:"options"`
}

// unescapeMount undoes /proc/mounts' octal escapes (\040 for space etc).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOct(s[i+1]) && isOct(s[i+2]) && isOct(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOct(c byte) bool { return c >= '0' && c <= '7' }

// ParseMounts returns the hugetlbfs entries of /proc/mounts text. A mount
// without pagesize= uses the default size.
func ParseMounts(b []byte, defaultKB int64) ([]Mount, error) {
	var out []Mount
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || f[2] != "hugetlbfs" {
			continue
		}
		m := Mount{Path: unescapeMount(f[1]), PageSizeKB: defaultKB, Options: f[3]}
		for _, o := range strings.Split(f[3], ",") {
			if v, ok := strings.CutPrefix(o, "pagesize="); ok {
				kb, err := ParsePageSize(v)
				if err != nil {
					return nil, fmt.Errorf("/proc/mounts: %s: %w", m.Path, err)
				}
				m.PageSizeKB = kb
			}
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// ReadMounts reads hugetlbfs mounts from /proc/mounts under the root.
func ReadMounts(fs FS, defaultKB int64) ([]Mount, error) {
	b, err := fs.ReadFile("/proc/mounts")
	if err != nil {
		return nil, fmt.Errorf("hugepages: /proc/mounts: %w", err)
	}
	return ParseMounts(b, defaultKB)
}

// MountAt returns the mount whose path is dir (last one wins, as in the kernel).
func MountAt(mounts []Mount, dir string) (Mount, bool) {
	dir = filepath.Clean(dir)
	var found Mount
	ok := false
	for _, m := range mounts {
		if filepath.Clean(m.Path) == dir {
			found, ok = m, true
		}
	}
	return found, ok
}

// OtherMountAt reports a non-hugetlbfs filesystem mounted exactly at dir.
func OtherMountAt(procMounts []byte, dir string) (fstype string, ok bool) {
	sc := bufio.NewScanner(bytes.NewReader(procMounts))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 3 && filepath.Clean(unescapeMount(f[1])) == filepath.Clean(dir) {
			fstype, ok = f[2], true
		}
	}
	if fstype == "hugetlbfs" {
		return "", false
	}
	return fstype, ok
}

// Mounter mounts hugetlbfs. The real one calls mount(2) at the host path
// resolved under the root; tests give a fake.
type Mounter interface {
	MountHugetlbfs(dir string, pageSizeKB int64) error
	UnmountHugetlbfs(dir string) error
}

// SysMounter mounts for real: mkdir -p, then
// `mount -t hugetlbfs -o pagesize=<size> nodev <dir>`.
type SysMounter struct {
	Resolve func(hostPath string) string // host.Host.Path
}

// MountHugetlbfs implements Mounter.
func (m SysMounter) MountHugetlbfs(dir string, pageSizeKB int64) error {
	full := dir
	if m.Resolve != nil {
		full = m.Resolve(dir)
	}
	if err := os.MkdirAll(full, 0o755); err != nil {
		return fmt.Errorf("hugepages: mount %s: %w", dir, err)
	}
	opts := fmt.Sprintf("pagesize=%s", FormatSize(pageSizeKB))
	if err := unix.Mount("nodev", full, "hugetlbfs", 0, opts); err != nil {
		return fmt.Errorf("hugepages: mount -t hugetlbfs -o %s nodev %s: %w (needs root/CAP_SYS_ADMIN and a kernel with %dkB pages)",
			opts, dir, err, pageSizeKB)
	}
	return nil
}

// UnmountHugetlbfs implements Mounter: umount(2) of a hugetlbfs rig mounted.
func (m SysMounter) UnmountHugetlbfs(dir string) error {
	full := dir
	if m.Resolve != nil {
		full = m.Resolve(dir)
	}
	if err := unix.Unmount(full, 0); err != nil {
		if errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("hugepages: umount %s: %w (a process still has files there: a DPDK application or ovs-vswitchd; stop it first)", dir, err)
		}
		return fmt.Errorf("hugepages: umount %s: %w", dir, err)
	}
	return nil
}
