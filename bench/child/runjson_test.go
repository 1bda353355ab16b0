package child

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"rig/bench"
)

// The child side checks its config once: a config that does not decode
// or validate is a ConfigError, said on stdout as a RunJSONError, and
// nothing runs; a valid one runs defaulted, and its result (or the run's
// error, with cause and fix) is the one JSON document on stdout.
func TestRunJSON(t *testing.T) {
	ran := 0
	run := func(_ context.Context, c bench.Config, _ bench.Progress) (*bench.Result, error) {
		ran++
		if len(c.Ports) != 2 || c.FilePrefix == "" || c.Burst != 32 {
			t.Errorf("the run got a config without its defaults: %+v", c)
		}
		return &bench.Result{SchemaVersion: bench.SchemaVersion, Role: c.Role, Sent: 7, Invalid: []string{"x"}}, nil
	}
	for _, c := range []struct {
		in        string
		config    bool   // a ConfigError
		errSub    string // in the error and in stdout's error
		wantSent7 bool
	}{
		{in: `not json`, config: true, errSub: "bench run-json: config on stdin: "},
		{in: `{"role":"loop","nosuchfield":1}`, config: true, errSub: `unknown field "nosuchfield"`},
		{in: `{"role":"x","vdevs":["net_null0"]}`, config: true, errSub: `role "x": want gen, rx, fwd or loop`},
		{in: `{"role":"loop","vdevs":["net_null0","net_null1"],"rate":"fail"}`, config: true, errSub: `--rate: `},
		{in: `{"role":"loop","vdevs":["net_null0","net_null1"]}`, wantSent7: true},
	} {
		ran = 0
		var out bytes.Buffer
		res, err := RunJSON(context.Background(), strings.NewReader(c.in), &out, io.Discard, run)
		var ce *ConfigError
		if c.config != errors.As(err, &ce) || (c.errSub != "" && (err == nil || !strings.Contains(err.Error(), c.errSub))) {
			t.Errorf("%s: %v, want a config error %v with %q", c.in, err, c.config, c.errSub)
		}
		if c.config && ran != 0 {
			t.Errorf("%s: ran %d times, want none", c.in, ran)
		}
		var doc RunJSONError
		if jerr := json.Unmarshal(out.Bytes(), &doc); jerr != nil || doc.SchemaVersion != bench.SchemaVersion || !strings.Contains(doc.Error, c.errSub) {
			t.Errorf("%s: stdout %q (%v)", c.in, out.String(), jerr)
		}
		if c.wantSent7 && (err != nil || res == nil || res.Sent != 7 || !strings.Contains(out.String(), `"sent":7`) || ran != 1) {
			t.Errorf("%s: %+v, %v; stdout %q", c.in, res, err, out.String())
		}
	}
	// the run's own failure: its error, with cause and fix on stdout
	var out bytes.Buffer
	failing := func(context.Context, bench.Config, bench.Progress) (*bench.Result, error) {
		return nil, bench.NewError("port net_null0", errors.New("link down"), "no peer", "connect it")
	}
	_, err := RunJSON(context.Background(), strings.NewReader(`{"role":"loop","vdevs":["net_null0","net_null1"]}`), &out, io.Discard, failing)
	var doc RunJSONError
	var ce *ConfigError
	if err == nil || errors.As(err, &ce) || json.Unmarshal(out.Bytes(), &doc) != nil || doc.Error != "bench: port net_null0: link down" || doc.Cause != "no peer" || doc.Fix != "connect it" {
		t.Errorf("failed run: %v; stdout %q", err, out.String())
	}
}

// A child whose hold may be released holds until its stdin ends (after
// the config).
func TestRunJSONHoldReleasedByStdin(t *testing.T) {
	pr, pw := io.Pipe()
	released := make(chan bool, 1)
	run := func(_ context.Context, c bench.Config, _ bench.Progress) (*bench.Result, error) {
		if c.Release == nil {
			released <- false
			return &bench.Result{SchemaVersion: bench.SchemaVersion}, nil
		}
		c.Release.SetMeasured()
		select {
		case <-c.Release.Release:
			released <- true
		case <-time.After(10 * time.Second):
			released <- false
		}
		return &bench.Result{SchemaVersion: bench.SchemaVersion}, nil
	}
	go func() {
		_, _ = pw.Write([]byte(`{"role":"loop","vdevs":["net_null0","net_null1"],"holdReleasable":true}` + "\n"))
		time.Sleep(50 * time.Millisecond)
		pw.Close()
	}()
	if _, err := RunJSON(context.Background(), pr, io.Discard, io.Discard, run); err != nil || !<-released {
		t.Errorf("held run: %v; released by the end of stdin: false", err)
	}
}
