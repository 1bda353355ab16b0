package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// End to end through the CLI: a BlueField-2 host root, the firmware
// simulator behind --fw-sim, mode show/set and a playbook with a mode section.
func TestModeCLIConverges(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	for _, fn := range []string{"0", "1"} {
		d := filepath.Join(root, "sys/bus/pci/devices/0000:03:00."+fn)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(d, "vendor"), []byte("0x15b3\n"), 0o644)
		os.WriteFile(filepath.Join(d, "device"), []byte("0xa2d6\n"), 0o644)
	}
	pbPath := filepath.Join(dir, "pb.yaml")
	os.WriteFile(pbPath, []byte("name: t\nmode: {want: dpu}\n"), 0o644)
	g := []string{"--root", root, "--fw-sim", filepath.Join(dir, "fw.json")}
	lock := []string{"--lock-file", filepath.Join(dir, "lock")}
	rig := func(args ...string) (int, string, string) {
		var o, e bytes.Buffer
		code := run(append(append([]string{}, g...), args...), &o, &e)
		return code, o.String(), e.String()
	}
	if code, _, e := rig("fwsim", "init", "--device", "0000:03:00.0=a2d6:separated"); code != 0 {
		t.Fatalf("init: %d %s", code, e)
	}
	code, out, _ := rig("mode", "show")
	if code != 0 || !strings.Contains(out, "0000:03:00.0  BlueField2  separated  separated") {
		t.Fatalf("show: %d\n%s", code, out)
	}
	if code, out, _ = rig("plan", "-p", pbPath); code != 0 || !strings.Contains(out, "would-change") {
		t.Fatalf("plan: %d\n%s", code, out)
	}
	if code, out, _ = rig(append([]string{"up", "-p", pbPath}, lock...)...); code != exitPowerCycle {
		t.Fatalf("up: %d\n%s", code, out)
	}
	if code, out, _ = rig(append([]string{"mode", "set", "dpu"}, lock...)...); code != exitPowerCycle || !strings.Contains(out, "a host reboot does not reload NIC firmware") {
		t.Fatalf("set again: %d\n%s", code, out)
	}
	if code, out, _ = rig("fwsim", "power-cycle"); code != 0 || !strings.Contains(out, "0000:03:00.0 loaded") {
		t.Fatalf("power-cycle: %d %s", code, out)
	}
	if code, out, _ = rig(append([]string{"-o", "json", "up", "-p", pbPath}, lock...)...); code != 0 {
		t.Fatalf("up after power cycle: %d\n%s", code, out)
	}
	code, out, _ = rig("-o", "json", "mode", "show")
	var v struct {
		Devices []struct{ BDF, Current, Next string }
	}
	if err := json.Unmarshal([]byte(out), &v); code != 0 || err != nil || len(v.Devices) != 1 || v.Devices[0].Current != "dpu" {
		t.Fatalf("json show: %d %v\n%s", code, err, out)
	}
	if code, _, _ = rig("fwsim", "restrict"); code != 0 {
		t.Fatal("restrict")
	}
	if code, out, _ = rig(append([]string{"mode", "set", "nic"}, lock...)...); code != exitFailure || !strings.Contains(out, "zero-trust") {
		t.Fatalf("restricted: %d\n%s", code, out)
	}
	if code, _, e := rig("mode", "set", "turbo"); code != exitUsage {
		t.Fatalf("bad mode: %d %s", code, e)
	}
}
