package child

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/signal"
	"syscall"

	"rig/bench"
)

// The child side: `rig bench run-json`, the process Child.Run starts.

// DataplaneFunc runs one config, which Defaults filled and Validate
// passed, in this process (dataplane.RunValid).
type DataplaneFunc func(ctx context.Context, c bench.Config, prog bench.Progress) (*bench.Result, error)

// ConfigError is a config on stdin that does not decode or validate: a
// usage error (rig exits 2), as a bad flag is.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// RunJSON is the child side of Child.Run: it reads one bench.Config as
// JSON on stdin, checks it once (Defaults, then Validate), runs it with
// run (live lines on stderr; "ready" and "measured" on the ready pipe,
// ReadyFDEnv) and writes one JSON document on stdout: the Result, or the
// error as a RunJSONError. A config that does not decode or validate is a
// *ConfigError; a failed run is run's error. A Result with Invalid set
// comes back with a nil error: the caller judges it. With HoldReleasable
// set, the end of stdin (after the config) ends the run's hold.
func RunJSON(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, run DataplaneFunc) (*bench.Result, error) {
	// the parent may be gone (rig killed: SIGTERM by PR_SET_PDEATHSIG):
	// a write to its pipes must fail, not kill this process by SIGPIPE
	// before the EAL cleanup removes /var/run/dpdk/<prefix>
	signal.Ignore(syscall.SIGPIPE)
	fail := func(err error) error {
		_ = json.NewEncoder(stdout).Encode(NewRunJSONError(err))
		return err
	}
	dec := json.NewDecoder(stdin)
	dec.DisallowUnknownFields()
	var cfg bench.Config
	if err := dec.Decode(&cfg); err != nil {
		return nil, fail(&ConfigError{fmt.Errorf("bench run-json: config on stdin: %w", err)})
	}
	cfg.Defaults() // a zero field means its default here
	if err := cfg.Validate(); err != nil {
		return nil, fail(&ConfigError{err})
	}
	pipe := OpenReadyPipe()
	prog := bench.Progress{W: stderr}
	if pipe != nil {
		prog.Ready = pipe.Ready
	}
	if cfg.HoldReleasable {
		// the parent reads what the held links show, then closes
		// our stdin: the hold ends there
		cfg.Release = bench.NewHoldRelease()
		go func() {
			<-cfg.Release.Measured
			pipe.Measured()
		}()
		go func() {
			_, _ = io.Copy(io.Discard, io.MultiReader(dec.Buffered(), stdin))
			cfg.Release.Done()
		}()
	}
	res, err := run(ctx, cfg, prog)
	if err != nil {
		return nil, fail(err)
	}
	if err := json.NewEncoder(stdout).Encode(res); err != nil {
		return nil, err
	}
	return res, nil
}
