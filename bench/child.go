package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

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
	out := RunJSONError{SchemaVersion: SchemaVersion, Error: err.Error()}
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
func (c Child) Run(ctx context.Context, cfg Config) (*Result, error) {
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
	readyR, err := c.readyPipe(cmd)
	if err != nil {
		return nil, failure(object, err, "", "")
	}
	release, err := host.StartTied(cmd, c.NetNS)
	if len(cmd.ExtraFiles) > 0 {
		cmd.ExtraFiles[0].Close() // the child's end
	}
	if err != nil {
		if readyR != nil {
			readyR.Close()
		}
		return nil, failure(object, err, "", "check that the rig binary exists and is executable, and that the netns exists (ip netns list)")
	}
	readyDone := c.watchReady(readyR)
	waitErr := c.wait(ctx, cmd)
	<-readyDone
	release()
	c.removeRuntimeDir(cfg, cmd.Process.Pid)
	return decodeChild(object, stdout.Bytes(), waitErr, tail.String())
}

// readyPipe gives the child the write end of a pipe as fd 3 (ReadyFDEnv)
// when c.Ready is set; it returns the read end.
func (c Child) readyPipe(cmd *exec.Cmd) (*os.File, error) {
	if c.Ready == nil {
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

// watchReady calls c.Ready when the child writes to the pipe; the channel
// closes when the child's end closes (it exited).
func (c Child) watchReady(r *os.File) <-chan struct{} {
	done := make(chan struct{})
	if r == nil {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		defer r.Close()
		b := make([]byte, 16)
		if n, _ := r.Read(b); n > 0 {
			c.Ready()
		}
		_, _ = io.Copy(io.Discard, r)
	}()
	return done
}

// removeRuntimeDir removes the EAL runtime directory the ended child may
// have left (/var/run/dpdk/<its prefix>): a child that exits cleanly
// removes its own, one killed (the grace ran out) or aborted by a PMD
// cannot. Its prefix is unique to it (rig<child pid> unless cfg names one).
func (c Child) removeRuntimeDir(cfg Config, pid int) {
	if os.Geteuid() != 0 {
		return // EAL's runtime dirs of non-root users live elsewhere; rig hugepages clean finds them
	}
	prefix := cfg.FilePrefix
	if prefix == "" {
		prefix = DefaultFilePrefix(pid)
	}
	if err := hugepages.RemoveDeadRuntimeDir(filepath.Join("/var/run/dpdk", prefix)); err != nil && c.Stderr != nil {
		fmt.Fprintf(c.Stderr, "rig: dataplane child %d left /var/run/dpdk/%s: %v; `rig hugepages clean` removes it\n", pid, prefix, err)
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
func decodeChild(object string, stdout []byte, waitErr error, stderrTail string) (*Result, error) {
	var probe struct {
		SchemaVersion string `json:"schemaVersion"`
		Error         string `json:"error"`
	}
	if len(bytes.TrimSpace(stdout)) == 0 || json.Unmarshal(stdout, &probe) != nil || probe.SchemaVersion != SchemaVersion {
		why := "it wrote no " + SchemaVersion + " JSON document"
		var xe *exec.ExitError
		if errors.As(waitErr, &xe) {
			if ws, ok := xe.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				why = fmt.Sprintf("it was killed by %v", ws.Signal())
			} else {
				why += fmt.Sprintf(" and exited %d", xe.ExitCode())
			}
		} else if waitErr != nil {
			why += ": " + waitErr.Error()
		}
		return nil, failure(object, errors.New("the dataplane ended without a result"),
			why+"; its last output: "+lastLines(stderrTail, 5),
			"run the same config with `rig bench loop|gen|rx|fwd` to see it fail in the open; a crash of a PMD names the port in the lines above")
	}
	if probe.Error != "" {
		var e RunJSONError
		_ = json.Unmarshal(stdout, &e)
		return nil, failure(object, errors.New(e.Error), e.Cause, e.Fix)
	}
	var r Result
	if err := json.Unmarshal(stdout, &r); err != nil {
		return nil, failure(object, fmt.Errorf("result: %w", err), "", "the child is a different rig version: use the same binary")
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
