package dataplane

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// pinProcess pins every thread of this process to cpus. It runs before
// rte_eal_init, so Go's runtime threads (GC, sysmon, goroutines), and every
// thread they or EAL create later, inherit the mask: EAL then moves only its
// worker lcores onto their own CPUs, and its control threads onto the main
// lcore's (the initial affinity minus the lcores' CPUs is empty, so EAL
// falls back to the main lcore's cpuset).
//
// A thread created from a not-yet-pinned parent while a pass runs may be
// missed by that pass, so passes repeat until one finds every thread
// already pinned. It returns how many passes that took.
func pinProcess(cpus []int) (int, error) {
	var want unix.CPUSet
	for _, c := range cpus {
		want.Set(c)
	}
	if want.Count() == 0 {
		return 0, fmt.Errorf("pin threads: no CPU given")
	}
	for pass := 1; pass <= 100; pass++ {
		ents, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return pass, fmt.Errorf("pin threads: %w", err)
		}
		moved := 0
		for _, e := range ents {
			tid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			var got unix.CPUSet
			if err := unix.SchedGetaffinity(tid, &got); err != nil {
				continue // the thread exited meanwhile
			}
			if got == want {
				continue
			}
			if err := unix.SchedSetaffinity(tid, &want); err != nil {
				if err == unix.ESRCH {
					continue
				}
				return pass, fmt.Errorf("pin thread %d to CPUs %v: %w", tid, cpus, err)
			}
			moved++
		}
		if moved == 0 {
			return pass, nil
		}
	}
	return 100, fmt.Errorf("pin threads to CPUs %v: threads still unpinned after 100 passes", cpus)
}
