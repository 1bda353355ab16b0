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
	if err := setnsPath(filepath.Join("/run/netns", nsName)); err != nil {
		return fmt.Errorf("netns %s: %w (is it created? `ip netns list`)", nsName, err)
	}
	return nil
}

// setnsPath moves the calling thread into the network namespace that the
// file nsPath names (/run/netns/NAME, /proc/PID/ns/net).
func setnsPath(nsPath string) error {
	fd, err := unix.Open(nsPath, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("setns %s: %w", nsPath, err)
	}
	return nil
}

// InNetNS runs fn on a thread of its own inside the network namespace
// nsPath names: a process fn starts is born there, a /proc/sys/net file fn
// writes is that namespace's. The thread is locked and never unlocked, so
// Go ends it when fn returns and no other goroutine ever runs in the
// namespace (lab-notes.md: threads and setns).
func InNetNS(nsPath string, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := setnsPath(nsPath); err != nil {
			done <- fmt.Errorf("netns %s: %w", nsPath, err)
			return
		}
		done <- fn()
	}()
	return <-done
}
