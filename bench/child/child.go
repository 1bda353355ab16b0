// Package child is the child-process protocol of a dataplane run, both
// ends: Child.Run (the parent) starts `rig bench run-json` with a
// bench.Config on its stdin, and RunJSON (the child) checks that config
// once, runs it in its own process (DPDK's EAL starts once per process)
// and answers with one JSON document: the Result or a RunJSONError.
package child

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"rig/bench"
	"rig/hugepages"
	"rig/internal/host"
)

// Child runs one dataplane in a child process (rig itself, `rig bench
// run-json`): EAL initialises once per process, so each run gets a fresh
// one, and a crash of the dataplane cannot take the caller down.
type Child struct {
	Exe    string   // the rig binary (os.Executable())
	Args   []string // default ["bench", "run-json"]
	NetNS  string   // start the child in this netns (a name under /run/netns); "" = ours
	Stderr io.Writer
	// Grace is how long the child has to stop after SIGINT (ctx cancelled)
	// before SIGKILL; 0 = DefaultChildGrace.
	Grace time.Duration
	// Ready, when set, is called once the child's dataplane runs (its
	// ports up, lcores polling): the child writes a line to a pipe whose
	// fd ReadyFDEnv names.
	Ready func()
}

// ReadyFDEnv names, in a child's environment, the fd `rig bench run-json`
// writes "ready" to once its dataplane runs (Child.Ready).
const ReadyFDEnv = "RIG_BENCH_READY_FD"

// DefaultChildGrace: a dataplane stops in well under a second; memif and
// vhost-user teardown waits up to a few.
const DefaultChildGrace = 10 * time.Second

// RunJSONError is what `rig bench run-json` writes on stdout when the run
// fails: the same schemaVersion as the Result, and error, cause and fix.
type RunJSONError struct {
	SchemaVersion string `json:"schemaVersion"`
	Error         string `json:"error"`
	Cause         string `json:"cause,omitempty"`
	Fix           string `json:"fix,omitempty"`
}

// NewRunJSONError is err as run-json reports it.
func NewRunJSONError(err error) RunJSONError {
	out := RunJSONError{SchemaVersion: bench.SchemaVersion, Error: err.Error()}
	var cf interface {
		Cause() string
		Fix() string
	}
	if errors.As(err, &cf) {
		out.Cause, out.Fix = cf.Cause(), cf.Fix()
	}
	return out
}

// Run starts the child with cfg on its stdin and returns its Result. A
// cancelled ctx sends SIGINT (the child returns a partial, Interrupted
// result), then SIGKILL after the grace period. A failed run is an *Error
// with the child's cause and fix; a Result with Invalid set is returned as
// a result (nil error): the caller judges it.
//
// With cfg.Release set the child holds its links after the run until the
// caller closes Release.Release (or cfg.Hold runs out): it says
// "measured" on the ready pipe (Release.Measured closes) and takes the
// end of its stdin as the release.
func (c Child) Run(ctx context.Context, cfg bench.Config) (*bench.Result, error) {
	rel := cfg.Release
	cfg.HoldReleasable = rel != nil
	in, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("bench child: config: %w", err)
	}
	args := c.Args
	if len(args) == 0 {
		args = []string{"bench", "run-json"}
	}
	cmd := exec.Command(c.Exe, args...)
	cmd.Stdin = bytes.NewReader(in)
	var stdinW *os.File
	if rel != nil {
		// the config, then an open pipe until the release
		r, w, err := os.Pipe()
		if err != nil {
			return nil, fmt.Errorf("bench child: stdin pipe: %w", err)
		}
		cmd.Stdin, stdinW = r, w
		defer r.Close()
		defer w.Close()
	}
	var stdout bytes.Buffer
	tail := &tailWriter{max: 4096}
	cmd.Stdout = &stdout
	cmd.Stderr = tail
	if c.Stderr != nil {
		cmd.Stderr = io.MultiWriter(c.Stderr, tail)
	}
	object := "dataplane child " + c.Exe
	if c.NetNS != "" {
		object += " in netns " + c.NetNS
	}
	readyR, err := c.readyPipe(cmd, rel != nil)
	if err != nil {
		return nil, bench.NewError(object, err, "", "")
	}
	_, statErr := os.Stat(hugepages.DPDKRunDir)
	baseMade := errors.Is(statErr, os.ErrNotExist)
	untie, err := host.StartTied(cmd, c.NetNS)
	if len(cmd.ExtraFiles) > 0 {
		cmd.ExtraFiles[0].Close() // the child's end
	}
	if err != nil {
		if readyR != nil {
			readyR.Close()
		}
		return nil, bench.NewError(object, err, "", "check that the rig binary exists and is executable, and that the netns exists (ip netns list)")
	}
	exited := make(chan struct{})
	if rel != nil {
		go func() {
			_, _ = stdinW.Write(in) // a pipe's buffer holds a config
			select {
			case <-rel.Release:
			case <-exited:
			}
			stdinW.Close()
		}()
	}
	readyDone := c.watchReady(readyR, rel)
	waitErr := c.wait(ctx, cmd)
	close(exited)
	<-readyDone
	untie()
	c.removeRuntimeDir(cfg, cmd.Process.Pid, baseMade)
	return decodeChild(object, stdout.Bytes(), waitErr, tail.String())
}

// readyPipe gives the child the write end of a pipe as fd 3 (ReadyFDEnv)
// when c.Ready is set or the run's hold may be released (it says
// "measured" there); it returns the read end.
func (c Child) readyPipe(cmd *exec.Cmd, releasable bool) (*os.File, error) {
	if c.Ready == nil && !releasable {
		return nil, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("ready pipe: %w", err)
	}
	cmd.ExtraFiles = []*os.File{w}
	cmd.Env = append(os.Environ(), ReadyFDEnv+"=3")
	return r, nil
}

// watchReady calls c.Ready when the child says "ready" on the pipe, and
// closes rel.Measured when it says "measured"; the channel closes when
// the child's end closes (it exited).
func (c Child) watchReady(r *os.File, rel *bench.HoldRelease) <-chan struct{} {
	done := make(chan struct{})
	if r == nil {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		defer r.Close()
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			switch sc.Text() {
			case readyLine:
				if c.Ready != nil {
					c.Ready()
				}
			case measuredLine:
				if rel != nil {
					rel.SetMeasured()
				}
			}
		}
		_, _ = io.Copy(io.Discard, r)
	}()
	return done
}

// What a child writes on its ready pipe: its dataplane runs; its figures
// are in (the run is over and drained, its links held).
const (
	readyLine    = "ready"
	measuredLine = "measured"
)

// ReadyPipe is the child's end of its ready pipe (ReadyFDEnv), nil when
// the parent passed none.
type ReadyPipe struct{ f *os.File }

// OpenReadyPipe takes the pipe whose fd ReadyFDEnv names (only a pipe: a
// number inherited without its fd may name one of this process's own, the
// Go runtime's epoll) and unsets the variable; nil when there is none.
func OpenReadyPipe() *ReadyPipe {
	fd, err := strconv.Atoi(os.Getenv(ReadyFDEnv))
	_ = os.Unsetenv(ReadyFDEnv) // for this process only
	var st unix.Stat_t
	if err != nil || fd < 3 || unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return nil
	}
	return &ReadyPipe{f: os.NewFile(uintptr(fd), "ready")}
}

// Ready says the dataplane runs.
func (p *ReadyPipe) Ready() { p.say(readyLine) }

// Measured says the run's figures are in.
func (p *ReadyPipe) Measured() { p.say(measuredLine) }

func (p *ReadyPipe) say(line string) {
	if p != nil {
		_, _ = p.f.Write([]byte(line + "\n"))
	}
}

// removeRuntimeDir removes the EAL runtime directory the ended child may
// have left (/var/run/dpdk/<its prefix>): a child that exits cleanly
// removes its own, one killed (the grace ran out) or aborted by a PMD
// cannot. Its prefix is unique to it (rig<child pid> unless cfg names one).
// baseMade: /var/run/dpdk was not there before the child started, so it
// goes too when empty (a fresh host has none).
func (c Child) removeRuntimeDir(cfg bench.Config, pid int, baseMade bool) {
	if os.Geteuid() != 0 {
		return // EAL's runtime dirs of non-root users live elsewhere; rig hugepages clean finds them
	}
	prefix := cfg.FilePrefix
	if prefix == "" {
		prefix = bench.DefaultFilePrefix(pid)
	}
	if err := hugepages.RemoveDeadRuntimeDir(filepath.Join(hugepages.DPDKRunDir, prefix)); err != nil && c.Stderr != nil {
		fmt.Fprintf(c.Stderr, "rig: dataplane child %d left %s/%s: %v; `rig hugepages clean` removes it\n", pid, hugepages.DPDKRunDir, prefix, err)
	}
	if baseMade {
		_ = os.Remove(hugepages.DPDKRunDir) // only when empty: another process's runtime dir keeps it
	}
}

// wait waits for cmd; a cancelled ctx gets SIGINT, then SIGKILL.
func (c Child) wait(ctx context.Context, cmd *exec.Cmd) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	_ = cmd.Process.Signal(os.Interrupt) // by pid: our own child
	grace := c.Grace
	if grace <= 0 {
		grace = DefaultChildGrace
	}
	select {
	case err := <-done:
		return err
	case <-time.After(grace):
		_ = cmd.Process.Kill()
		return <-done
	}
}

// decodeChild reads the one JSON document run-json wrote.
func decodeChild(object string, stdout []byte, waitErr error, stderrTail string) (*bench.Result, error) {
	var probe struct {
		SchemaVersion string `json:"schemaVersion"`
		Error         string `json:"error"`
	}
	if len(bytes.TrimSpace(stdout)) == 0 || json.Unmarshal(stdout, &probe) != nil || probe.SchemaVersion != bench.SchemaVersion {
		why := "it wrote no " + bench.SchemaVersion + " JSON document"
		var xe *exec.ExitError
		if errors.As(waitErr, &xe) {
			if ws, ok := xe.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				why = "it was killed by " + SignalText(ws.Signal())
			} else {
				why += fmt.Sprintf(" and exited %d", xe.ExitCode())
			}
		} else if waitErr != nil {
			why += ": " + waitErr.Error()
		}
		return nil, bench.NewError(object, errors.New("the dataplane ended without a result"),
			why+"; its last output: "+lastLines(stderrTail, 5),
			"run the same config with `rig bench loop|gen|rx|fwd` to see it fail in the open; a crash of a PMD names the port in the lines above")
	}
	if probe.Error != "" {
		var e RunJSONError
		_ = json.Unmarshal(stdout, &e)
		return nil, bench.NewError(object, errors.New(e.Error), e.Cause, e.Fix)
	}
	var r bench.Result
	if err := json.Unmarshal(stdout, &r); err != nil {
		return nil, bench.NewError(object, fmt.Errorf("result: %w", err), "", "the child is a different rig version: use the same binary")
	}
	return &r, nil
}

// lastLines is the last n non-empty lines of s, joined with " | ".
func lastLines(s string, n int) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	if len(out) == 0 {
		return "(nothing on stderr)"
	}
	return strings.Join(out, " | ")
}

// tailWriter keeps the last max bytes written to it.
type tailWriter struct {
	max int
	b   []byte
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailWriter) String() string { return string(t.b) }

// SignalText names a signal for a message: "SIGABRT (aborted)" (Go's own
// string for it alone reads "killed by aborted").
func SignalText(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n + " (" + sig.String() + ")"
	}
	return fmt.Sprintf("signal %d", int(sig))
}
