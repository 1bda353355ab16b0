// Package fakeexec is the one fake of the host seam's exec function for
// tests: a Recorder records every argv, exactly, and answers each command
// through Answer, then Next, else as a tool that is not installed.
package fakeexec

import (
	"context"
	"os/exec"
	"strings"
	"sync"

	"rig/internal/host"
)

// Func is the exec seam's signature (host.Host.Exec).
type Func = func(ctx context.Context, name string, args ...string) ([]byte, error)

// Recorder is a fake exec seam. The zero value records every command and
// answers each one "not found".
type Recorder struct {
	// Answer answers a command (ok true) or passes it on (ok false).
	Answer func(name string, args []string) (out []byte, err error, ok bool)
	// Next answers what Answer passes on (a simulator, the real tool);
	// nil: "not found".
	Next Func

	mu   sync.Mutex
	argv [][]string
}

// Exec records argv and answers it; use it as host.Host.Exec.
func (r *Recorder) Exec(ctx context.Context, name string, args ...string) ([]byte, error) {
	r.Record(append([]string{name}, args...))
	if r.Answer != nil {
		if out, err, ok := r.Answer(name, args); ok {
			return out, err
		}
	}
	if r.Next != nil {
		return r.Next(ctx, name, args...)
	}
	return nil, NotFound(name, args...)
}

// Record adds one argv, for a test's own wrapper around Exec that answers
// a command without calling it.
func (r *Recorder) Record(argv []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.argv = append(r.argv, append([]string(nil), argv...))
}

// Calls returns every recorded argv, in order.
func (r *Recorder) Calls() [][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([][]string, len(r.argv))
	for i, a := range r.argv {
		out[i] = append([]string(nil), a...)
	}
	return out
}

// Lines returns every recorded command as one line ("mst start").
func (r *Recorder) Lines() []string {
	var out []string
	for _, a := range r.Calls() {
		out = append(out, strings.TrimSpace(strings.Join(a, " ")))
	}
	return out
}

// Filter returns the recorded argv lists keep accepts (e.g. the writes).
func (r *Recorder) Filter(keep func(argv []string) bool) [][]string {
	var out [][]string
	for _, a := range r.Calls() {
		if keep(a) {
			out = append(out, a)
		}
	}
	return out
}

// Reset forgets what was recorded.
func (r *Recorder) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.argv = nil
}

// NotFound is the error the exec seam gives for a tool that is not
// installed.
func NotFound(name string, args ...string) error {
	return &host.ToolError{Argv: append([]string{name}, args...), Err: exec.ErrNotFound}
}
