package main

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// Every JSON document rig prints names its schema: the simulator's state
// (`rig fwsim show`) and `rig fwsim power-cycle -o json`.
func TestFwSimJSONSchemaVersion(t *testing.T) {
	sim := filepath.Join(t.TempDir(), "fw.json")
	if code, _, e := rig(t, "fwsim", "init", "--fw-sim", sim, "--device", "0000:03:00.0=a2d6:separated"); code != exitOK {
		t.Fatalf("fwsim init: %d %s", code, e)
	}
	code, out, e := rig(t, "fwsim", "show", "--fw-sim", sim)
	var st struct {
		SchemaVersion string                     `json:"schemaVersion"`
		Devices       map[string]json.RawMessage `json:"devices"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &st) != nil || st.SchemaVersion != "rig.fwsim/v1" || len(st.Devices) != 1 {
		t.Fatalf("fwsim show: %d %s %s", code, out, e)
	}
	code, out, e = rig(t, "-o", "json", "fwsim", "power-cycle", "--fw-sim", sim)
	var pc struct {
		SchemaVersion string   `json:"schemaVersion"`
		Changed       []string `json:"changed"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &pc) != nil || pc.SchemaVersion != "rig.fwsim.power-cycle/v1" {
		t.Fatalf("fwsim power-cycle -o json: %d %s %s", code, out, e)
	}
}

func TestFwSimNeedsStateFile(t *testing.T) {
	if code, _, e := rig(t, "fwsim", "show"); code != exitUsage || e == "" {
		t.Fatalf("fwsim show without --fw-sim: %d %q", code, e)
	}
	sim := filepath.Join(t.TempDir(), "fw.json")
	if code, _, e := rig(t, "fwsim", "init", "--fw-sim", sim, "--device", "0000:03:00.0"); code != exitUsage || e == "" {
		t.Fatalf("fwsim init with a bad --device: %d %q", code, e)
	}
}
