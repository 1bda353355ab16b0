package search

import (
	"fmt"
	"strings"

	"rig/bench"

	"golang.org/x/sys/unix"
)

// UsableCPUs are the CPUs this process may run on: online and in its
// affinity mask (taskset, a cpuset cgroup). nil when unknown.
func UsableCPUs() []int {
	online := bench.OnlineCPUs()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return online
	}
	if online == nil {
		return nil
	}
	var out []int
	for _, c := range online {
		if set.IsSet(c) {
			out = append(out, c)
		}
	}
	return out
}

// cellLcores is the EAL lcore list of a run with cores workers on the
// usable CPUs: "" (the default 0-N) when those are CPUs 0..N, an explicit
// map onto the usable CPUs otherwise. With fewer CPUs than workers + 1 it
// runs only when forced, the workers sharing the CPUs after the main
// lcore's (sliced says so).
func cellLcores(cores int, usable []int, force bool) (lcores, sliced string, ok bool) {
	if usable == nil {
		return "", "", true
	}
	if len(usable) >= cores+1 {
		contiguous := true
		for i := 0; i <= cores; i++ {
			contiguous = contiguous && usable[i] == i
		}
		if contiguous {
			return "", "", true
		}
		return lcoreMap(cores, usable), "", true
	}
	if !force || len(usable) == 0 {
		return "", "", false
	}
	workers := max(len(usable)-1, 1)
	return lcoreMap(cores, usable), fmt.Sprintf("%d worker lcore(s) time-sliced on %d CPU(s) (forced)", cores, workers), true
}

// lcoreMap maps lcore 0 to the first usable CPU and the workers round-robin
// onto the others (onto the first when it is the only one).
func lcoreMap(cores int, usable []int) string {
	parts := []string{fmt.Sprintf("0@%d", usable[0])}
	rest := usable[1:]
	if len(rest) == 0 {
		rest = usable[:1]
	}
	for i := 1; i <= cores; i++ {
		parts = append(parts, fmt.Sprintf("%d@%d", i, rest[(i-1)%len(rest)]))
	}
	return strings.Join(parts, ",")
}
