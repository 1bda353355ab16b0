package playbooks

import (
	"fmt"
	"path/filepath"
	"strings"
	"unicode"

	"rig/hugepages"
)

// HugepagesSpec is the `hugepages` section.
//
//	hugepages:
//	  pages:
//	    - size: 2M        # 2M / 2048kB / 1G
//	      count: 512      # at least 512: a bigger pool is left alone
//	      node: 0         # optional; absent = system-wide
//	      exact: false    # true = shrink a bigger pool to count (never below the pages in use)
//	  mounts:
//	    - path: /dev/hugepages  # absolute, no "..", not a system directory (/etc, /usr, /dev, /mnt, ...)
//	      pagesize: 2M
//	  persist: true       # write /etc/tmpfiles.d + a mount unit so it survives reboot
//
// count is a minimum unless exact is true: other DPDK processes may be using
// a bigger pool, and rig never takes pages away unless asked. Even with
// exact, rig refuses to free pages that are in use (nr_hugepages -
// free_hugepages, plus reserved pages system-wide). A count whose memory
// (count x size) exceeds MemTotal is refused at plan.
type HugepagesSpec struct {
	Pages   []HugepageReservation `yaml:"pages"`
	Mounts  []HugetlbfsMount      `yaml:"mounts"`
	Persist bool                  `yaml:"persist"`
}

// HugepageReservation asks for Count pages of Size, on one NUMA node or system-wide.
type HugepageReservation struct {
	Size  string `yaml:"size"`
	Count int    `yaml:"count"`
	Node  *int   `yaml:"node"`
	// Exact shrinks a bigger pool to Count; without it Count is a minimum.
	Exact bool `yaml:"exact"`
}

// isSystemDir reports directories hugetlbfs must never be mounted over:
// the mount would hide what is there (a mount over /etc hides the host's
// configuration until unmounted). Their subdirectories are fine unless the
// whole tree is refused (see systemTree).
func isSystemDir(p string) bool {
	switch p {
	case "/", "/etc", "/usr", "/bin", "/sbin", "/boot", "/dev", "/proc", "/sys", "/run", "/var",
		"/home", "/root", "/tmp", "/srv", "/opt", "/mnt", "/media", "/snap", "/lost+found", "/efi",
		"/dev/shm", "/dev/pts", "/dev/mqueue", "/run/user", "/run/lock", "/run/dpdk",
		"/var/lib", "/var/log", "/var/run", "/var/tmp", "/var/cache", "/var/spool", "/var/run/dpdk":
		return true
	}
	return isLibDir(p)
}

// systemTree returns the system tree p is inside (no directory in it may be
// a hugetlbfs mount point), or "".
func systemTree(p string) string {
	for _, t := range []string{"/etc", "/usr", "/bin", "/sbin", "/boot", "/proc", "/sys"} {
		if strings.HasPrefix(p, t+"/") {
			return t
		}
	}
	if top := topDir(p); top != p && isLibDir(top) {
		return top
	}
	return ""
}

// CheckMountPath says what is wrong with a hugetlbfs mount path, and the fix
// ("" when fine): it must be absolute, have no ".." component and not be a
// system directory. Used for playbooks and `rig hugepages set --mount`.
func CheckMountPath(p string) string {
	const fix = "use a dedicated directory such as /dev/hugepages, /mnt/huge or /run/hugepages"
	if p == "" {
		return "empty; " + fix
	}
	for i, r := range p {
		if r < 0x20 || r == 0x7f || unicode.IsControl(r) {
			what := fmt.Sprintf("the control character %U", r)
			if r == 0 {
				what = "a NUL byte"
			}
			return fmt.Sprintf("%q holds %s at byte %d (the kernel would cut the path there or take it literally); write the path without it", p, what, i)
		}
	}
	if !strings.HasPrefix(p, "/") {
		return fmt.Sprintf("%q is relative; give an absolute path (%s)", p, fix)
	}
	for _, c := range strings.Split(p, "/") {
		if c == ".." {
			return fmt.Sprintf("%q has a \"..\" component (it resolves to %s); write the path without \"..\"", p, filepath.Clean(p))
		}
	}
	c := filepath.Clean(p)
	if isSystemDir(c) {
		return fmt.Sprintf("%q is a system directory: hugetlbfs mounted there hides its contents; %s", p, fix)
	}
	if t := systemTree(c); t != "" {
		return fmt.Sprintf("%q is inside the system directory %s: hugetlbfs mounted there hides its contents; %s", p, t, fix)
	}
	return ""
}

// isLibDir matches /lib, /lib32, /lib64, /libx32 and /libexec.
func isLibDir(p string) bool {
	switch p {
	case "/lib", "/lib32", "/lib64", "/libx32", "/libexec":
		return true
	}
	return false
}

func topDir(p string) string {
	if i := strings.IndexByte(p[1:], '/'); i >= 0 {
		return p[:i+1]
	}
	return p
}

// HugetlbfsMount asks for hugetlbfs mounted at Path with pagesize=PageSize.
type HugetlbfsMount struct {
	Path     string `yaml:"path"`
	PageSize string `yaml:"pagesize"`
}

// Validate checks the section's values.
func (s *HugepagesSpec) Validate() []FieldError {
	var errs []FieldError
	type key struct {
		kb   int64
		node int
	}
	seen := map[key]int{}
	for i, r := range s.Pages {
		f := fmt.Sprintf("pages[%d]", i)
		kb, err := hugepages.ParsePageSize(r.Size)
		if err != nil {
			errs = append(errs, FieldError{f + ".size", err.Error()})
		}
		if r.Count < 0 {
			errs = append(errs, FieldError{f + ".count", fmt.Sprintf("must be >= 0, got %d", r.Count)})
		}
		node := -1
		if r.Node != nil {
			if *r.Node < 0 || *r.Node > 1023 {
				errs = append(errs, FieldError{f + ".node", fmt.Sprintf("NUMA node must be 0..1023, got %d", *r.Node)})
			}
			node = *r.Node
		}
		if err == nil {
			k := key{kb, node}
			if j, dup := seen[k]; dup {
				errs = append(errs, FieldError{f, fmt.Sprintf("same size and node as pages[%d]", j)})
			}
			seen[k] = i
		}
	}
	// a system-wide and a per-node entry for the same size fight each other
	for k, i := range seen {
		if k.node >= 0 {
			if j, ok := seen[key{k.kb, -1}]; ok {
				errs = append(errs, FieldError{fmt.Sprintf("pages[%d].node", i),
					fmt.Sprintf("size also reserved system-wide in pages[%d]; use per-node entries or one system-wide entry", j)})
			}
		}
	}
	paths := map[string]int{}
	for i, m := range s.Mounts {
		f := fmt.Sprintf("mounts[%d]", i)
		if msg := CheckMountPath(m.Path); msg != "" {
			errs = append(errs, FieldError{f + ".path", msg})
		} else if j, dup := paths[filepath.Clean(m.Path)]; dup {
			errs = append(errs, FieldError{f + ".path", fmt.Sprintf("same path as mounts[%d]", j)})
		} else {
			paths[filepath.Clean(m.Path)] = i
		}
		if strings.ContainsAny(m.Path, " ,\\") { // tabs, line breaks: CheckMountPath
			errs = append(errs, FieldError{f + ".path", "must not contain spaces, commas or backslashes"})
		}
		if m.PageSize != "" {
			if _, err := hugepages.ParsePageSize(m.PageSize); err != nil {
				errs = append(errs, FieldError{f + ".pagesize", err.Error()})
			}
		}
	}
	return errs
}
