package lab

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"

	"rig/internal/host"
)

// Entering namespaces from Go (lab-notes.md, measured): setns(CLONE_NEWNS)
// works only on a thread that first unshared CLONE_FS, and only that
// thread moves. So every entry happens on a locked thread that is never
// unlocked: its goroutine either execs (Exec) or ends, and Go then kills
// the thread with its namespaces.

// setnsFile joins the namespace of kind nstype that file p names.
func setnsFile(p string, nstype int) error {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", p, err)
	}
	defer unix.Close(fd)
	if err := unix.Setns(fd, nstype); err != nil {
		return fmt.Errorf("setns %s: %w", p, err)
	}
	return nil
}

// enter moves the calling goroutine's thread into the lab's network and
// mount namespaces (locked for good) and returns to the working directory.
func (l Lab) enter() error { return l.enterMachine(machineArm) }

// enterMachine is enter for one machine of the lab: the Arm (the lab's
// namespaces), the host (its network namespace and its view), the peer
// (its network namespace and, as `ip netns exec` gives, a new mount
// namespace with a sysfs of that network namespace).
func (l Lab) enterMachine(machine string) error {
	runtime.LockOSThread()
	wd, _ := os.Getwd()
	if err := unix.Unshare(unix.CLONE_FS); err != nil {
		return fmt.Errorf("unshare CLONE_FS: %w", err)
	}
	var err error
	switch machine {
	case machineArm:
		if err = setnsFile(l.NetNSPath(), unix.CLONE_NEWNET); err == nil {
			err = setnsFile(l.MntPath(), unix.CLONE_NEWNS)
		}
	case machineHost:
		if err = setnsFile(l.HostNetNSPath(), unix.CLONE_NEWNET); err == nil {
			err = setnsFile(l.HostMntPath(), unix.CLONE_NEWNS)
		}
	case machinePeer:
		if err = setnsFile(l.PeerNetNSPath(), unix.CLONE_NEWNET); err != nil {
			break
		}
		if err = unix.Unshare(unix.CLONE_NEWNS); err != nil {
			err = fmt.Errorf("unshare CLONE_NEWNS: %w", err)
			break
		}
		if err = unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
			err = fmt.Errorf("make / a slave: %w", err)
			break
		}
		err = remountSysfs()
	default:
		err = fmt.Errorf("no machine %q (want one of %v)", machine, MachineNames())
	}
	if err != nil {
		return err
	}
	if wd != "" {
		if err := unix.Chdir(wd); err != nil {
			_ = unix.Chdir("/")
		}
	}
	return nil
}

// runInside runs cmd inside the lab and waits for it.
func (l Lab) runInside(cmd *exec.Cmd) error {
	done := make(chan error, 1)
	go func() {
		if err := l.enter(); err != nil {
			done <- fmt.Errorf("lab %s: enter: %w", l.Name, err)
			return // the locked thread ends with this goroutine
		}
		done <- cmd.Run()
	}()
	return <-done
}

// labEnv is env with the lab's bin dir first on PATH.
func (l Lab) labEnv(env []string) []string {
	out := make([]string, 0, len(env)+1)
	path := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			path = v
			continue
		}
		if strings.HasPrefix(e, "RIG_STATE_FILE=") {
			continue
		}
		out = append(out, e)
	}
	// rig's record of what it changed (for rig down) stays in the lab's
	// private /run/rig, not the host's /var/lib/rig
	return append(out, "PATH="+l.BinDir()+":"+path, "RIG_STATE_FILE=/run/rig/state.json")
}

// lookPath finds a command on the lab's PATH.
func (l Lab) lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			for _, dir := range strings.Split(v, ":") {
				p := dir + "/" + name
				if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
					return p, nil
				}
			}
		}
	}
	return "", fmt.Errorf("%s: not found on the lab's PATH", name)
}

// Exec replaces the calling process with argv run inside the lab (network
// and mount namespace, PATH with the lab's bin dir first). It returns only
// on failure.
func (l Lab) Exec(argv []string) error { return l.ExecOn(machineArm, argv) }

// ExecOn is Exec on one machine of the lab ("arm", "host", "peer"; ""
// is the Arm). The host and the peer have the rig binary first on PATH
// (FarBinDir); the host's rig keeps its state in the host's private
// /run/rig, the peer's where the caller's does (the peer is a network
// namespace, its files the system's, as with `ip netns exec`).
func (l Lab) ExecOn(machine string, argv []string) error {
	if len(argv) == 0 {
		return errors.New("lab exec: no command")
	}
	if machine == "" {
		machine = machineArm
	}
	if !l.isUp() {
		return notFound(l.Name)
	}
	env := l.labEnv(os.Environ())
	if machine != machineArm {
		rec, err := l.readRecord()
		if err != nil {
			return err
		}
		if !rec.machines() {
			return &Error{Lab: l.Name, Err: fmt.Errorf("no machine %s: its far ends are %q (the lab is the card's machine only)", machine, rec.FarEnds),
				FixText: "run it on the card's machine (--on arm, the default); a DPU kind's lab (bf2-dpu, bf3-dpu) has a host and a peer when made without --far-ends wire"}
		}
		env = l.farEnv(os.Environ(), machine)
	}
	bin, err := l.lookPath(argv[0], env)
	if err != nil {
		return &Error{Lab: l.Name, Err: err, FixText: "give the command's full path"}
	}
	done := make(chan error, 1)
	go func() {
		if err := l.enterMachine(machine); err != nil {
			done <- fmt.Errorf("lab %s: enter %s: %w", l.Name, machine, err)
			return
		}
		done <- unix.Exec(bin, argv, env)
	}()
	err = <-done
	return fmt.Errorf("lab %s: exec %s on %s: %w", l.Name, bin, machine, err)
}

// farEnv is env for the host or the peer: FarBinDir first on PATH; on the
// host, rig's state file in the host's private /run/rig.
func (l Lab) farEnv(env []string, machine string) []string {
	out := make([]string, 0, len(env)+1)
	path := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			path = v
			continue
		}
		if machine == machineHost && strings.HasPrefix(e, "RIG_STATE_FILE=") {
			continue
		}
		out = append(out, e)
	}
	out = append(out, "PATH="+l.FarBinDir()+":"+path)
	if machine == machineHost {
		out = append(out, "RIG_STATE_FILE=/run/rig/state.json")
	}
	return out
}

// startInit starts the lab's init (the rig binary's hidden `lab __init`)
// in the machine's network namespace (the Arm's, the host's) and a new
// mount namespace, waits for its "ready", binds its mount namespace on
// MntPath (HostMntPath), and lets it exit.
func (l Lab) startInit(binary, machine string) error {
	nsPath, mnt := l.NetNSPath(), l.MntPath()
	if machine == machineHost {
		nsPath, mnt = l.HostNetNSPath(), l.HostMntPath()
	}
	cmd := exec.Command(binary, "lab", "__init", l.Name, machine)
	cmd.SysProcAttr = &unix.SysProcAttr{Cloneflags: unix.CLONE_NEWNS}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := host.InNetNS(nsPath, cmd.Start); err != nil {
		return fmt.Errorf("lab %s: start the %s's init: %w", l.Name, machine, err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		stdin.Close()
		werr := cmd.Wait()
		return fmt.Errorf("lab %s: init failed (%v): %s", l.Name, werr, strings.TrimSpace(line+stderr.String()))
	}
	if err := os.WriteFile(mnt, nil, 0o600); err != nil {
		return err
	}
	bindErr := unix.Mount(fmt.Sprintf("/proc/%d/ns/mnt", cmd.Process.Pid), mnt, "", unix.MS_BIND, "")
	stdin.Close()
	_, _ = io.Copy(io.Discard, stdout)
	werr := cmd.Wait()
	if bindErr != nil {
		return fmt.Errorf("lab %s: bind the %s's mount namespace on %s: %w", l.Name, machine, mnt, bindErr)
	}
	if werr != nil {
		return fmt.Errorf("lab %s: init: %w: %s", l.Name, werr, stderr.String())
	}
	return nil
}

// isMounted reports whether p is a mount point in this mount namespace
// (mountinfo: a bind of the same filesystem has the same device).
func isMounted(p string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	p = filepath.Clean(p)
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 5 && unescapeMount(f[4]) == p {
			return true
		}
	}
	return false
}

// isUp: both namespaces exist and the mount namespace is bound.
func (l Lab) isUp() bool {
	_, err1 := os.Stat(l.NetNSPath())
	return err1 == nil && isMounted(l.MntPath())
}

// quietIPv6 turns IPv6 off in network namespace ns (all and default, so
// the veths made after inherit it): a card's netdevs and their far ends
// then carry no kernel chatter (router and neighbour solicitations, MLD
// reports) that a check through the lab's cables would receive as frames
// not its own. A kernel without IPv6 has nothing to quiet.
func quietIPv6(nsPath string) error {
	if _, err := os.Stat("/proc/sys/net/ipv6"); err != nil {
		return nil
	}
	return host.InNetNS(nsPath, func() error {
		var errs []error
		for _, c := range []string{"all", "default"} {
			p := "/proc/sys/net/ipv6/conf/" + c + "/disable_ipv6"
			if err := os.WriteFile(p, []byte("1"), 0); err != nil {
				errs = append(errs, fmt.Errorf("%s in %s: %w", p, nsPath, err))
			}
		}
		return errors.Join(errs...)
	})
}
