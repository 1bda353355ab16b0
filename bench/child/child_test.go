package child

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"rig/bench"
)

// What the child wrote decides what Child.Run returns: a Result, its error
// with cause and fix, or the crash said in words.
func TestDecodeChild(t *testing.T) {
	r, err := decodeChild("child", []byte(`{"schemaVersion":"rig.bench/v1","mode":"loop","sent":10,"received":10,"invalid":["x"]}`+"\n"), nil, "")
	if err != nil || r.Sent != 10 || r.Received != 10 || len(r.Invalid) != 1 {
		t.Errorf("result: %+v, %v", r, err)
	}
	_, err = decodeChild("child", []byte(`{"schemaVersion":"rig.bench/v1","error":"bench: port net_memif1: link down after 10s","cause":"c","fix":"f"}`), errors.New("exit status 1"), "")
	var be *bench.Error
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "link down after 10s") || be.Cause() != "c" || be.Fix() != "f" {
		t.Errorf("error document: %v", err)
	}
	// a crash: killed by a signal, nothing on stdout
	cmd := exec.Command("sh", "-c", "kill -SEGV $$")
	werr := cmd.Run()
	_, err = decodeChild("child", nil, werr, "EAL: x\nmemif: y\n")
	if !errors.As(err, &be) || !strings.Contains(be.Cause(), "killed by SIGSEGV (segmentation fault)") || !strings.Contains(be.Cause(), "EAL: x | memif: y") || be.Fix() == "" {
		t.Errorf("crash: %v (cause %q)", err, be.Cause())
	}
	// the signal by its name, then Go's words for it (not "killed by aborted")
	werr = exec.Command("sh", "-c", "kill -ABRT $$").Run()
	_, err = decodeChild("child", nil, werr, "")
	if !errors.As(err, &be) || !strings.Contains(be.Cause(), "it was killed by SIGABRT (aborted)") {
		t.Errorf("abort: %v (cause %q)", err, be.Cause())
	}
	_, err = decodeChild("child", []byte("not json"), nil, "")
	if !errors.As(err, &be) || !strings.Contains(be.Cause(), "no rig.bench/v1 JSON document") {
		t.Errorf("garbage: %v", err)
	}
}

// Child.Ready: the child says on the fd ReadyFDEnv names when its
// dataplane runs; a child that never says so is never reported ready.
func TestChildReady(t *testing.T) {
	for _, c := range []struct {
		script    string
		wantReady bool
	}{
		{`echo ready >&$` + ReadyFDEnv + `; sleep 0.1; echo '{"schemaVersion":"` + bench.SchemaVersion + `","mode":"rx"}'`, true},
		{`echo '{"schemaVersion":"` + bench.SchemaVersion + `","mode":"rx"}'`, false},
	} {
		var ready atomic.Int32
		r, err := Child{Exe: "/bin/sh", Args: []string{"-c", c.script}, Ready: func() { ready.Add(1) }}.Run(context.Background(), bench.Config{FilePrefix: "rigtestready"})
		if err != nil || r.Role != bench.RoleRx || (ready.Load() == 1) != c.wantReady || ready.Load() > 1 {
			t.Errorf("%s: %+v %v, ready %d", c.script, r, err, ready.Load())
		}
	}
}
