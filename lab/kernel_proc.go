package lab

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"rig/lab/card"
)

// startKernel starts the lab's kernel (`rig lab __kernel NAME`) inside the
// lab (network and mount namespace, its own session), waits for its
// "ready" (its watches are in place: no write is missed), and records its
// PID in lab.state. Its stderr is KernelLog.
func (l Lab) startKernel(binary string) error {
	logf, err := os.OpenFile(l.KernelLog(), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("lab %s: %w", l.Name, err)
	}
	defer logf.Close()
	cmd := exec.Command(binary, "lab", "__kernel", l.Name)
	cmd.SysProcAttr = &unix.SysProcAttr{Setsid: true}
	cmd.Stderr = logf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	started := make(chan error, 1)
	go func() {
		if err := l.enter(); err != nil {
			started <- fmt.Errorf("enter: %w", err)
			return // the locked thread ends with this goroutine
		}
		started <- cmd.Start()
	}()
	if err := <-started; err != nil {
		return fmt.Errorf("lab %s: start the lab kernel: %w", l.Name, err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		werr := cmd.Wait()
		log, _ := os.ReadFile(l.KernelLog())
		return fmt.Errorf("lab %s: the lab kernel failed (%v): %s", l.Name, werr, lastLines(string(log), 5))
	}
	rec, err := l.readRecord()
	if err != nil {
		return err
	}
	rec.KernelPID = cmd.Process.Pid
	if err := l.writeRecord(rec); err != nil {
		return err
	}
	return cmd.Process.Release()
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// kernelRunning reports whether pid is this lab's kernel (alive, and its
// command line is `… lab __kernel NAME`: a reused PID is not).
func (l Lab) kernelRunning(pid int) bool {
	if pid <= 0 || !alive(pid) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return err == nil && strings.HasSuffix(string(b), "\x00lab\x00__kernel\x00"+l.Name+"\x00")
}

// stopKernel ends the lab's kernel by its recorded PID (SIGTERM, up to
// 2 s, then SIGKILL), before the lab's other processes: a kernel stopped
// first makes no VF while the lab goes.
func (l Lab) stopKernel() error {
	rec, err := l.readRecord()
	if err != nil || !l.kernelRunning(rec.KernelPID) {
		return nil
	}
	_ = syscall.Kill(rec.KernelPID, syscall.SIGTERM)
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if !alive(rec.KernelPID) {
			return nil
		}
	}
	_ = syscall.Kill(rec.KernelPID, syscall.SIGKILL)
	return nil
}

// KernelStatus is the lab kernel as `rig lab status` shows it.
type KernelStatus struct {
	PID     int          `json:"pid"`
	Running bool         `json:"running"`
	Log     string       `json:"log"`
	PFs     []SRIOVState `json:"pfs"`
}

// SRIOVState is one SR-IOV PF of the card as the lab kernel left it.
type SRIOVState struct {
	BDF     string `json:"bdf"`
	NumVFs  string `json:"numVfs"`
	Eswitch string `json:"eswitch,omitempty"` // compat/devlink/mode, "" = none
	// Netdevs: its VFs' netdevs and its VF representors.
	Netdevs []string `json:"netdevs"`
}

// sriovState reads the card tree (sriov_numvfs, the uplink's mode, the
// VF netdevs under virtfnN, the representors on the PF).
func (l Lab) sriovState(c card.Card) []SRIOVState {
	out := []SRIOVState{}
	for _, pf := range c.SRIOVPFs() {
		dir := filepath.Join(l.CardRoot(), "sys/devices", pf.Path)
		st := SRIOVState{BDF: pf.BDF, NumVFs: l.readCard(filepath.Join("sys/devices", pf.Path, "sriov_numvfs")), Netdevs: []string{}}
		if up, ok := c.Uplink(pf); ok && up.Mode != "" {
			st.Eswitch = l.readCard(filepath.Join("sys/devices", up.Parent, "net", up.Name, "compat/devlink/mode"))
		}
		vfs, _ := filepath.Glob(filepath.Join(dir, "virtfn*", "net", "*"))
		for _, p := range vfs {
			st.Netdevs = append(st.Netdevs, filepath.Base(p))
		}
		reps, _ := filepath.Glob(filepath.Join(dir, "net", "*", "phys_port_name"))
		for _, p := range reps {
			if b, err := os.ReadFile(p); err == nil && vfRepPPN.MatchString(strings.TrimSpace(string(b))) {
				st.Netdevs = append(st.Netdevs, filepath.Base(filepath.Dir(p)))
			}
		}
		out = append(out, st)
	}
	return out
}

// vfRepPPN is a VF representor's phys_port_name (pf0vf1, c1pf0vf1).
var vfRepPPN = regexp.MustCompile(`^(c\d+)?pf\d+vf\d+$`)

func (l Lab) kernelStatus(rec record, c card.Card, problems *[]string) *KernelStatus {
	k := &KernelStatus{PID: rec.KernelPID, Running: l.kernelRunning(rec.KernelPID), Log: l.KernelLog(), PFs: l.sriovState(c)}
	if !k.Running {
		*problems = append(*problems, fmt.Sprintf("the lab kernel (pid %d) is not running: a write to sriov_numvfs or compat/devlink/mode makes nothing; `rig lab power-cycle %s` starts it again (see %s)",
			rec.KernelPID, l.Name, l.KernelLog()))
	}
	return k
}
