package system

import (
	"fmt"
	"strings"

	"rig/internal/labinfo"
	"rig/provision"
)

// Inside a virtual lab (rig lab up), the lab keeps the boot configuration
// (/etc/default/grub.d, /boot/grub, /proc/cmdline) and /etc/sysctl.d to
// itself, and its network namespace gives it its own net.* sysctls; every
// other sysctl is the real host's kernel. So the kernel step refuses, at
// plan time and before any write, a sysctl outside net.* in a lab.

// labOf returns the lab rig runs in (nil on a real host).
func (s *kernelStep) labOf() (*labinfo.Info, error) {
	in, err := labinfo.Read(s.h.Root)
	if err != nil {
		return nil, &provision.Problem{Object: "kernel", Err: err}
	}
	return in, nil
}

// refuseHostSysctls is the plan-time error for the sysctls a lab does not
// own (nil on a real host, or when every key is net.*).
func (s *kernelStep) refuseHostSysctls(in *labinfo.Info) error {
	if in == nil {
		return nil
	}
	var host []string
	for _, k := range s.keys {
		if !strings.HasPrefix(k, "net.") {
			host = append(host, k)
		}
	}
	if len(host) == 0 {
		return nil
	}
	return &provision.Problem{Object: "sysctl " + strings.Join(host, ", "),
		Err:       fmt.Errorf("refusing to set %s inside lab %s: only net.* sysctls belong to the lab (its network namespace); these are the real host's kernel settings, shared with everything on it; nothing was written", strings.Join(host, ", "), in.Name),
		CauseText: "a lab is namespaces on this host: /proc/sys outside net/ is the host kernel's",
		FixText:   "leave these keys out of the playbook you run in the lab (or --skip kernel), and set them on a real host"}
}

// labMissingSysctl explains a net.* key the lab's namespace does not have:
// the kernel shows global-only net keys (net.core.rmem_max, ...) in the
// host's initial namespace alone.
func labMissingSysctl(in *labinfo.Info, key string) *provision.Problem {
	return &provision.Problem{Object: "sysctl " + key,
		Err:       fmt.Errorf("no %s in lab %s's network namespace; nothing was written", sysctlPath(key), in.Name),
		CauseText: "the kernel shows net keys that are global (not per network namespace), like net.core.rmem_max, only in the host's initial namespace; the lab cannot set them without changing the host",
		FixText:   "leave the key out of the playbook you run in the lab, and set it on a real host (or check its name: sysctl -a | grep ...)"}
}
