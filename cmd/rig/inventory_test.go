package main

import (
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

var fixtureHosts = []string{"bf2-dpu-arm", "bf2-host", "bf3-dpu-arm", "cx6dx-host"}

// TestInventoryGolden runs `rig inventory`, `rig mst status` and `rig rdma
// links` (text and -o json) on every fixture host root and compares with
// testdata/golden/<host>/. Regenerate: go test ./cmd/rig -run Golden -update
func TestInventoryGolden(t *testing.T) {
	cases := []struct {
		file string
		args []string
	}{
		{"inventory.txt", []string{"inventory"}},
		{"inventory.json", []string{"inventory", "-o", "json"}},
		{"mst-status.txt", []string{"mst", "status"}},
		{"mst-status.json", []string{"mst", "status", "-o", "json"}},
		{"rdma-links.txt", []string{"rdma", "links"}},
		{"rdma-links.json", []string{"rdma", "links", "-o", "json"}},
	}
	for _, hostName := range fixtureHosts {
		for _, c := range cases {
			t.Run(hostName+"/"+c.file, func(t *testing.T) {
				args := append(append([]string{}, c.args...), "--root", "../../testdata/hosts/"+hostName)
				code, out, errOut := rig(t, args...)
				if code != exitOK || errOut != "" {
					t.Fatalf("rig %v: code %d, stderr %q", args, code, errOut)
				}
				if strings.HasSuffix(c.file, ".json") {
					var v map[string]any
					if err := json.Unmarshal([]byte(out), &v); err != nil {
						t.Fatalf("not JSON: %v", err)
					}
					if sv, _ := v["schemaVersion"].(string); !strings.HasPrefix(sv, "rig.") {
						t.Errorf("schemaVersion %q", sv)
					}
				}
				golden := filepath.Join("testdata", "golden", hostName, c.file)
				if *updateGolden {
					if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run with -update to create)", err)
				}
				if out != string(want) {
					t.Errorf("rig %v differs from %s:\n--- got\n%s--- want\n%s", args, golden, out, want)
				}
			})
		}
	}
}

// The BlueField-3 table against the verbatim sigcomm26 sample row
// (hardware-formats.md §2.2), end to end through the command.
func TestMSTStatusCommandSampleRow(t *testing.T) {
	_, out, _ := rig(t, "mst", "status", "--root", "../../testdata/hosts/bf3-dpu-arm")
	const row = "BlueField3(rev:1)       /dev/mst/mt41692_pciconf0.1   03:00.1   mlx5_1          net-p1,net-pf1hpf,net-en3f1pf1sf0       -1\n\n"
	if !strings.Contains(out, row) {
		t.Errorf("output lacks the sample row:\n%s", out)
	}
}

func TestInventoryBadRoot(t *testing.T) {
	code, _, errOut := rig(t, "inventory", "--root", t.TempDir())
	if code != exitFailure || !strings.Contains(errOut, "is sysfs mounted") {
		t.Errorf("code %d stderr %q", code, errOut)
	}
}

// plan --only rdma on the BF2 DPU fixture: both uplinks ACTIVE / LINK_UP.
func TestPlanBF2DPURDMA(t *testing.T) {
	code, out, errOut := rig(t, "plan", "-p", "bf2-dpu", "--only", "rdma", "--root", "../../testdata/hosts/bf2-dpu-arm", "-o", "json")
	if code != exitOK {
		t.Fatalf("code %d\n%s%s", code, out, errOut)
	}
	var rep struct {
		Steps []struct {
			Name, Status string
			Notes        []string
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Steps) != 1 || rep.Steps[0].Name != "rdma" || rep.Steps[0].Status != "ok" || len(rep.Steps[0].Notes) != 2 ||
		rep.Steps[0].Notes[0] != "rdma mlx5_0/1 (p0): ACTIVE / LINK_UP" {
		t.Errorf("report %+v", rep)
	}
}

// TestBF2DPUConvergesWithSimulator is the "done means": the
// embedded bf2-dpu playbook's firmware and link steps (--only mst,mode,rdma:
// the fixture has no hugepages sysfs, and its ovs writes are refused under
// --root) on the BF2 DPU fixture and the firmware simulator: plan -> apply
// (pending power cycle, exit 3) -> apply again (nothing written, still
// pending) -> power cycle -> all ok.
func TestBF2DPUConvergesWithSimulator(t *testing.T) {
	dir := t.TempDir()
	sim, lock := filepath.Join(dir, "fw.json"), filepath.Join(dir, "rig.lock")
	// a copy: the tree stays as checked in even if a regression put rig's
	// state file (the firmware values it changes) under --root again
	root := filepath.Join(dir, "root")
	if out, err := exec.Command("cp", "-a", "../../testdata/hosts/bf2-dpu-arm", root).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	if code, _, e := rig(t, "fwsim", "init", "--fw-sim", sim, "--device", "0000:03:00.0=a2d6:separated"); code != exitOK {
		t.Fatalf("fwsim init: %d %s", code, e)
	}
	type report struct {
		Steps []struct {
			Name, Status string
			Changes      []json.RawMessage
		}
	}
	step := func(args ...string) (int, map[string]string, map[string]int) {
		t.Helper()
		code, out, e := rig(t, append(args, "-p", "bf2-dpu", "--only", "mst,mode,rdma", "--root", root, "--fw-sim", sim, "-o", "json")...)
		var rep report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("rig %v: %v\n%s%s", args, err, out, e)
		}
		st, ch := map[string]string{}, map[string]int{}
		for _, s := range rep.Steps {
			st[s.Name], ch[s.Name] = s.Status, len(s.Changes)
		}
		return code, st, ch
	}
	code, st, ch := step("plan")
	if code != exitOK || st["mst"] != "ok" || st["mode"] != "would-change" || ch["mode"] != 5 || st["rdma"] != "ok" {
		t.Fatalf("plan: %d %v %v", code, st, ch)
	}
	code, st, ch = step("up", "--lock-file", lock)
	if code != exitPowerCycle || st["mode"] != "pending-reboot" || ch["mode"] != 5 || st["mst"] != "ok" || st["rdma"] != "ok" {
		t.Fatalf("first up: %d %v %v", code, st, ch)
	}
	code, st, ch = step("up", "--lock-file", lock)
	if code != exitPowerCycle || st["mode"] != "pending-reboot" || ch["mode"] != 0 {
		t.Fatalf("second up: %d %v %v", code, st, ch)
	}
	if code, _, e := rig(t, "fwsim", "power-cycle", "--fw-sim", sim); code != exitOK {
		t.Fatalf("power-cycle: %d %s", code, e)
	}
	code, st, _ = step("up", "--lock-file", lock)
	if code != exitOK || st["mst"] != "ok" || st["mode"] != "ok" || st["rdma"] != "ok" {
		t.Fatalf("after power cycle: %d %v", code, st)
	}
}
