package bench

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// pinThreads moves every thread of this process except the worker lcores
// onto cpu: Go's runtime threads (GC, sysmon, goroutines) and EAL's control
// threads then never preempt a forwarding core. Threads created later
// inherit the mask of their creator.
func pinThreads(cpu int, except map[int]bool) (int, error) {
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0, fmt.Errorf("pin Go threads: %w", err)
	}
	var set unix.CPUSet
	set.Set(cpu)
	n := 0
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil || except[tid] {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil {
			continue // the thread may have exited meanwhile
		}
		n++
	}
	return n, nil
}
