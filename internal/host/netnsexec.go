package host

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// StartInNetNS starts cmd inside the network namespace nsName (a name
// under /run/netns; "" = this process's). The child inherits the netns of
// the thread that forks it, so the start runs on a goroutine that locks
// its thread, joins the netns and never unlocks: when it returns, Go ends
// the thread and the namespace change goes with it (no other goroutine
// ever runs on it). cmd.Wait is the caller's, from any goroutine.
func StartInNetNS(cmd *exec.Cmd, nsName string) error {
	if nsName == "" {
		return cmd.Start()
	}
	path := filepath.Join("/run/netns", nsName)
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			errc <- fmt.Errorf("netns %s: %w (is it created? `ip netns list`)", nsName, err)
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("netns %s: setns: %w", nsName, err)
			return
		}
		errc <- cmd.Start()
	}()
	return <-errc
}
