package dataplane

import (
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Threads created while the process is being pinned, or after, from any
// thread, all end up on the CPU: a full pass must find every thread pinned.
func TestPinProcessCatchesNewThreads(t *testing.T) {
	var orig unix.CPUSet
	if err := unix.SchedGetaffinity(0, &orig); err != nil {
		t.Fatal(err)
	}
	var all []int
	for c := 0; c < 1024; c++ {
		if orig.IsSet(c) {
			all = append(all, c)
		}
	}
	defer func() {
		if _, err := pinProcess(all); err != nil {
			t.Errorf("restore affinity: %v", err)
		}
	}()
	cpu := all[len(all)-1]
	// goroutines that lock their thread force the runtime to start new
	// threads, from whichever thread runs the scheduler, while pinning runs
	stop := make(chan struct{})
	var wg sync.WaitGroup
	spawn := func(n int) {
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runtime.LockOSThread()
				<-stop
			}()
		}
	}
	spawn(20)
	passes, err := pinProcess([]int{cpu})
	if err != nil {
		t.Fatal(err)
	}
	spawn(20)
	time.Sleep(50 * time.Millisecond)
	ents, _ := os.ReadDir("/proc/self/task")
	for _, e := range ents {
		tid, _ := strconv.Atoi(e.Name())
		var got unix.CPUSet
		if unix.SchedGetaffinity(tid, &got) != nil {
			continue
		}
		if got.Count() != 1 || !got.IsSet(cpu) {
			t.Errorf("thread %d not on CPU %d after pinProcess (%d passes)", tid, cpu, passes)
		}
	}
	if len(ents) < 40 {
		t.Errorf("%d threads: the test did not make the runtime start threads", len(ents))
	}
	close(stop)
	wg.Wait()
}
