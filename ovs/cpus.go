package ovs

import (
	"fmt"

	"rig/internal/cpuset"
)

// CheckCPUMask checks that every CPU mask (other_config key key) selects
// is online on host h. It returns "" when it is, else what is wrong and the
// online set.
func CheckCPUMask(h Host, key, mask string) (string, error) {
	cpus, err := cpuset.ParseCPUMask(mask)
	if err != nil {
		return "", err
	}
	raw, err := ReadString(h, cpuset.OnlineCPUsFile)
	if err != nil {
		return "", fmt.Errorf("read the online CPUs: %w", err)
	}
	online, err := cpuset.ParseCPUList(raw)
	if err != nil {
		return "", fmt.Errorf("%s: %w", h.Path(cpuset.OnlineCPUsFile), err)
	}
	on := map[int]bool{}
	for _, c := range online {
		on[c] = true
	}
	var missing []int
	for _, c := range cpus {
		if !on[c] {
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 {
		return "", nil
	}
	return fmt.Sprintf("%s %s selects CPU(s) %s, which this host does not have online (online CPUs: %s, from %s)",
		key, mask, cpuset.FormatCPUList(missing), cpuset.FormatCPUList(online), cpuset.OnlineCPUsFile), nil
}
