package playbooks

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"rig/hugepages"
)

// KernelSpec is the `kernel` section: kernel boot parameters (through a
// GRUB drop-in, live after the next boot) and sysctls (persisted in
// /etc/sysctl.d and set live).
//
//	kernel:
//	  default-hugepagesz: 1G          # default_hugepagesz=
//	  hugepages:                      # boot-time pools: 1 GiB pages need these
//	    - size: 1G
//	      count: 8                    # hugepagesz=1G hugepages=8
//	  args: [iommu=pt, intel_iommu=on, isolcpus=2-7, nohz_full=2-7]
//	  sysctl:
//	    vm.swappiness: 10
//	    net.core.rmem_max: 268435456
//
// The boot parameters go to /etc/default/grub.d/rig.cfg, which Debian's
// grub-mkconfig (update-grub) reads after /etc/default/grub; they are
// compared with /proc/cmdline, so "written but not live" is a pending
// reboot. A value is never passed through a shell by rig, but GRUB's
// configuration is a shell fragment, so parameters are limited to the
// characters kernel parameters use (no quotes, spaces, $ or backslashes).
type KernelSpec struct {
	DefaultHugepagesz string            `yaml:"default-hugepagesz"`
	Hugepages         []BootHugepages   `yaml:"hugepages"`
	Args              []string          `yaml:"args"`
	Sysctl            map[string]string `yaml:"sysctl"`
}

// BootHugepages is one boot-time hugepage pool (hugepagesz=SIZE hugepages=COUNT).
type BootHugepages struct {
	Size  string `yaml:"size"`
	Count int    `yaml:"count"`
}

// kernelArg is a kernel parameter as rig writes it: name[=value], the name
// of letters, digits, '_', '-' and '.', the value without shell or GRUB
// meta characters.
var (
	kernelArgRE   = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*(=[A-Za-z0-9_.,:/+@%-]*)?$`)
	sysctlKeyRE   = regexp.MustCompile(`^[a-z0-9_]+(\.[A-Za-z0-9_-]+)+$`)
	sysctlValueRE = regexp.MustCompile(`^[A-Za-z0-9_.,:/+@%\- \t]*$`)
)

// argsOwnedBySection are parameters the section's own fields set; in args
// they would be written twice with possibly different values.
var argsOwnedBySection = map[string]string{
	"hugepages":          "hugepages",
	"hugepagesz":         "hugepages",
	"default_hugepagesz": "default-hugepagesz",
}

// Validate checks every value before anything is written.
func (s *KernelSpec) Validate() []FieldError {
	var errs []FieldError
	if s.DefaultHugepagesz != "" {
		if _, err := hugepages.ParsePageSize(s.DefaultHugepagesz); err != nil {
			errs = append(errs, FieldError{"default-hugepagesz", err.Error()})
		}
	}
	seen := map[int64]bool{}
	for i, h := range s.Hugepages {
		f := fmt.Sprintf("hugepages[%d]", i)
		kb, err := hugepages.ParsePageSize(h.Size)
		switch {
		case err != nil:
			errs = append(errs, FieldError{f + ".size", err.Error()})
		case seen[kb]:
			errs = append(errs, FieldError{f + ".size", fmt.Sprintf("%s listed twice; give each page size once", h.Size)})
		}
		seen[kb] = true
		if h.Count < 0 || h.Count > 1<<24 {
			errs = append(errs, FieldError{f + ".count", fmt.Sprintf("want 0..%d pages, got %d", 1<<24, h.Count)})
		}
	}
	names := map[string]bool{}
	for i, a := range s.Args {
		f := fmt.Sprintf("args[%d]", i)
		name, _, _ := strings.Cut(a, "=")
		switch {
		case len(a) > 256 || !kernelArgRE.MatchString(a):
			errs = append(errs, FieldError{f, fmt.Sprintf("%q is not a kernel parameter rig writes: want name or name=value, of letters, digits and _ . , : / + @ %% - (no spaces, quotes or $)", a)})
		case argsOwnedBySection[name] != "":
			errs = append(errs, FieldError{f, fmt.Sprintf("%s is set by the section's %s field; move it there", name, argsOwnedBySection[name])})
		case names[name]:
			errs = append(errs, FieldError{f, fmt.Sprintf("%s given twice; the kernel would use the last one", name)})
		}
		names[name] = true
	}
	errs = append(errs, s.validateSysctl()...)
	return errs
}

func (s *KernelSpec) validateSysctl() []FieldError {
	var errs []FieldError
	keys := make([]string, 0, len(s.Sysctl))
	for k := range s.Sysctl {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := s.Sysctl[k]
		f := "sysctl." + k
		if len(k) > 200 || !sysctlKeyRE.MatchString(k) {
			errs = append(errs, FieldError{f, fmt.Sprintf("%q is not a sysctl name: want dotted lower-case words like vm.swappiness", k)})
			continue
		}
		if strings.TrimSpace(v) == "" || len(v) > 256 || !sysctlValueRE.MatchString(v) {
			errs = append(errs, FieldError{f, fmt.Sprintf("value %q: want a non-empty value of letters, digits, spaces and _ . , : / + @ %% -", v)})
		}
	}
	return errs
}
