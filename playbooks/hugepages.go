package playbooks

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// HugepagesSpec is the `hugepages` section.
//
//	hugepages:
//	  pages:
//	    - size: 2M        # 2M / 2048kB / 1G
//	      count: 512
//	      node: 0         # optional; absent = system-wide
//	  mounts:
//	    - path: /dev/hugepages
//	      pagesize: 2M
//	  persist: true       # write /etc/tmpfiles.d + a mount unit so it survives reboot
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
}

// HugetlbfsMount asks for hugetlbfs mounted at Path with pagesize=PageSize.
type HugetlbfsMount struct {
	Path     string `yaml:"path"`
	PageSize string `yaml:"pagesize"`
}

// ParsePageSize turns "2M", "2MB", "2048kB", "1G", "1GB", "1Gi", "2097152"
// (bytes) into kB. Only sizes the kernel offers are checked later, against sysfs.
func ParsePageSize(s string) (int64, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return 0, fmt.Errorf("empty page size; use e.g. 2M or 1G")
	}
	low := strings.ToLower(in)
	low = strings.TrimSuffix(low, "b")
	low = strings.TrimSuffix(low, "i")
	mult := int64(0)
	switch {
	case strings.HasSuffix(low, "k"):
		mult, low = 1, strings.TrimSuffix(low, "k")
	case strings.HasSuffix(low, "m"):
		mult, low = 1024, strings.TrimSuffix(low, "m")
	case strings.HasSuffix(low, "g"):
		mult, low = 1024*1024, strings.TrimSuffix(low, "g")
	default:
		mult = -1 // bytes
	}
	n, err := strconv.ParseInt(low, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("page size %q: want a size like 2M, 2048kB or 1G", in)
	}
	var kb int64
	if mult < 0 {
		if n%1024 != 0 {
			return 0, fmt.Errorf("page size %q: bytes must be a multiple of 1024", in)
		}
		kb = n / 1024
	} else {
		if n > (1<<40)/mult {
			return 0, fmt.Errorf("page size %q: too large", in)
		}
		kb = n * mult
	}
	if kb&(kb-1) != 0 {
		return 0, fmt.Errorf("page size %q: not a power of two", in)
	}
	return kb, nil
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
		kb, err := ParsePageSize(r.Size)
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
		if !filepath.IsAbs(m.Path) || filepath.Clean(m.Path) == "/" {
			errs = append(errs, FieldError{f + ".path", fmt.Sprintf("want an absolute directory other than /, got %q", m.Path)})
		} else if j, dup := paths[filepath.Clean(m.Path)]; dup {
			errs = append(errs, FieldError{f + ".path", fmt.Sprintf("same path as mounts[%d]", j)})
		} else {
			paths[filepath.Clean(m.Path)] = i
		}
		if strings.ContainsAny(m.Path, " \t\n,\\") {
			errs = append(errs, FieldError{f + ".path", "must not contain spaces, commas or backslashes"})
		}
		if m.PageSize != "" {
			if _, err := ParsePageSize(m.PageSize); err != nil {
				errs = append(errs, FieldError{f + ".pagesize", err.Error()})
			}
		}
	}
	return errs
}
