package host

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// StartTied starts cmd inside the network namespace nsName (a name under
// /run/netns; "" = this process's) and ties the child's life to rig's: if
// rig dies (even by SIGKILL) the kernel sends the child SIGTERM
// (PR_SET_PDEATHSIG), so a killed rig never leaves a dataplane running.
//
// The child inherits the netns of the thread that forks it, and the death
// signal follows that thread, not the process: so the start runs on a
// goroutine that locks its thread, joins the netns, forks, and then keeps
// the thread until the caller calls release (after cmd.Wait). It never
// unlocks: when it returns, Go ends the thread and the namespace change
// goes with it (no other goroutine ever runs on it).
func StartTied(cmd *exec.Cmd, nsName string) (release func(), err error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
	errc := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		if nsName != "" {
			if err := joinNetNS(nsName); err != nil {
				errc <- err
				return
			}
		}
		errc <- cmd.Start()
		<-done
	}()
	if err := <-errc; err != nil {
		return func() {}, err
	}
	return func() { close(done) }, nil
}

func joinNetNS(nsName string) error {
	path := filepath.Join("/run/netns", nsName)
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("netns %s: %w (is it created? `ip netns list`)", nsName, err)
	}
	defer unix.Close(fd)
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("netns %s: setns: %w", nsName, err)
	}
	return nil
}
