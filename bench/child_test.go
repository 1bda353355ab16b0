package bench

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// What the child wrote decides what Child.Run returns: a Result, its error
// with cause and fix, or the crash said in words.
func TestDecodeChild(t *testing.T) {
	r, err := decodeChild("child", []byte(`{"schemaVersion":"rig.bench/v1","mode":"loop","sent":10,"received":10,"invalid":["x"]}`+"\n"), nil, "")
	if err != nil || r.Sent != 10 || r.Received != 10 || len(r.Invalid) != 1 {
		t.Errorf("result: %+v, %v", r, err)
	}
	_, err = decodeChild("child", []byte(`{"schemaVersion":"rig.bench/v1","error":"bench: port net_memif1: link down after 10s","cause":"c","fix":"f"}`), errors.New("exit status 1"), "")
	var be *Error
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "link down after 10s") || be.Cause() != "c" || be.Fix() != "f" {
		t.Errorf("error document: %v", err)
	}
	// a crash: killed by a signal, nothing on stdout
	cmd := exec.Command("sh", "-c", "kill -SEGV $$")
	werr := cmd.Run()
	_, err = decodeChild("child", nil, werr, "EAL: x\nmemif: y\n")
	if !errors.As(err, &be) || !strings.Contains(be.Cause(), "killed by segmentation fault") || !strings.Contains(be.Cause(), "EAL: x | memif: y") || be.Fix() == "" {
		t.Errorf("crash: %v (cause %q)", err, be.Cause())
	}
	_, err = decodeChild("child", []byte("not json"), nil, "")
	if !errors.As(err, &be) || !strings.Contains(be.Cause(), "no rig.bench/v1 JSON document") {
		t.Errorf("garbage: %v", err)
	}
}
