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
// the thread until the caller calls release (after cmd.Wait). Then the
// thread goes back to rig's netns (lockedIn).
func StartTied(cmd *exec.Cmd, nsName string) (release func(), err error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
	errc := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		ns := ""
		if nsName != "" {
			ns = filepath.Join("/run/netns", nsName)
		}
		leave, err := lockedIn(ns)
		defer leave()
		if err != nil {
			errc <- fmt.Errorf("netns %s: %w (is it created? `ip netns list`)", nsName, err)
			return
		}
		errc <- cmd.Start()
		<-done
	}()
	if err := <-errc; err != nil {
		return func() {}, err
	}
	return func() { close(done) }, nil
}

// lockedIn locks the calling goroutine to its thread and moves the thread
// into the network namespace nsPath names ("" = stay). leave, which the
// goroutine defers, moves the thread back and unlocks it; when the way
// back fails the thread stays locked, and Go ends it with the goroutine.
// The way back matters: Go never ends a process's main thread, it parks
// it, and /proc/PID/ns/net is the main thread's, so a main thread left in
// a lab's netns made the whole process look like one of the lab's (and
// rig lab down ends those).
func lockedIn(nsPath string) (leave func(), err error) {
	runtime.LockOSThread()
	if nsPath == "" {
		return runtime.UnlockOSThread, nil
	}
	orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return func() {}, err // locked: the thread ends with the goroutine
	}
	back := func() {
		if unix.Setns(orig, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		unix.Close(orig)
	}
	if err := setnsPath(nsPath); err != nil {
		back()
		return func() {}, err
	}
	return back, nil
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
// writes is that namespace's. The thread is locked while fn runs and goes
// back to this process's netns after (lockedIn), so no other goroutine
// ever runs in the namespace (lab-notes.md: threads and setns).
func InNetNS(nsPath string, fn func() error) error {
	done := make(chan error, 1)
	go func() {
		leave, err := lockedIn(nsPath)
		defer leave()
		if err != nil {
			done <- fmt.Errorf("netns %s: %w", nsPath, err)
			return
		}
		done <- fn()
	}()
	return <-done
}
