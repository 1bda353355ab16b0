package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"rig/internal/host"
	"rig/lab/fwsim"
	"rig/mlxconfig"
	"rig/provision/card"
	"rig/smartnic"
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

// `rig mode show` answers on every fixture host under testdata/hosts, in
// text and JSON: each BlueField-2/-3 card with the mode its (simulated)
// firmware holds, each ConnectX card "n/a" (needing no firmware tool at
// all), exit 0.
func TestModeShowAllFixtureHosts(t *testing.T) {
	roots, err := filepath.Glob("../../testdata/hosts/*/sys")
	if err != nil || len(roots) < 4 {
		t.Fatalf("fixture hosts: %v %v", roots, err)
	}
	for _, sys := range roots {
		root := filepath.Dir(sys)
		t.Run(filepath.Base(root), func(t *testing.T) {
			inv, err := smartnic.Scan(host.New(root))
			if err != nil {
				t.Fatal(err)
			}
			sim := filepath.Join(t.TempDir(), "fw.json")
			devs := map[string]*fwsim.Device{}
			want := map[string]string{} // card (function 0) -> mode
			for _, f := range inv.Functions {
				if f.Kind != smartnic.FunctionNIC {
					continue
				}
				d, err := fwsim.NewDevice(f.DeviceID, mlxconfig.ModeDPU)
				if err != nil {
					t.Fatal(err)
				}
				devs[f.BDF] = d
				if strings.HasSuffix(f.BDF, ".0") {
					want[f.BDF] = map[bool]string{true: "dpu", false: "n/a"}[f.Family == "BlueField"]
				}
			}
			if len(want) == 0 {
				t.Fatal("no NIC card in the fixture")
			}
			if err := fwsim.New(sim).Init(devs); err != nil {
				t.Fatal(err)
			}
			args := []string{"--root", root, "mode", "show"}
			if !allNA(want) {
				args = append([]string{"--fw-sim", sim}, args...)
			}
			code, out, e := rig(t, args...)
			if code != exitOK {
				t.Fatalf("mode show: %d\n%s%s", code, out, e)
			}
			for bdf, m := range want {
				if !regexp.MustCompile(regexp.QuoteMeta(bdf) + `\s+\S+\s+` + regexp.QuoteMeta(m) + `\s+` + regexp.QuoteMeta(m) + `\s`).MatchString(out) {
					t.Errorf("%s not %s:\n%s", bdf, m, out)
				}
			}
			code, out, e = rig(t, append([]string{"-o", "json"}, args...)...)
			var v struct {
				SchemaVersion string
				Devices       []struct {
					BDF, Current, Next string
					Applicable         bool
				}
			}
			if err := json.Unmarshal([]byte(out), &v); code != exitOK || err != nil || v.SchemaVersion != "rig.mode/v1" || len(v.Devices) != len(want) {
				t.Fatalf("json: %d %v\n%s%s", code, err, out, e)
			}
			for _, d := range v.Devices {
				if m := want[d.BDF]; d.Current != m || d.Next != m || d.Applicable != (m != "n/a") {
					t.Errorf("json %+v, want %s", d, m)
				}
			}
		})
	}
}

func allNA(want map[string]string) bool {
	for _, m := range want {
		if m != "n/a" {
			return false
		}
	}
	return true
}

// The story behind exit 3: `rig mode set` asks for a power cycle, the
// user reboots instead, and the next `rig mode show`/`rig up` explains the
// tool's NV access error with the cold power cycle or mstfwreset fix. A
// ConnectX-only host refuses a playbook's mode section at plan time and
// shows n/a.
func TestModeCLIWarmRebootAndConnectX(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	writeFn := func(bdf, id string) {
		d := filepath.Join(root, "sys/bus/pci/devices", bdf)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(d, "vendor"), []byte("0x15b3\n"), 0o644)
		os.WriteFile(filepath.Join(d, "device"), []byte("0x"+id+"\n"), 0o644)
	}
	writeFn("0000:03:00.0", "a2d6")
	g := []string{"--root", root, "--fw-sim", filepath.Join(dir, "fw.json")}
	run := func(args ...string) (int, string, string) {
		return rig(t, append(append([]string{}, g...), args...)...)
	}
	if code, _, e := run("fwsim", "init", "--device", "0000:03:00.0=a2d6:separated"); code != 0 {
		t.Fatalf("init: %s", e)
	}
	if code, out, _ := run("mode", "set", "dpu", "--lock-file", filepath.Join(dir, "lock")); code != exitPowerCycle {
		t.Fatalf("set: %d %s", code, out)
	}
	if code, out, _ := run("fwsim", "reboot"); code != 0 || !strings.Contains(out, "0000:03:00.0 kept its running firmware") {
		t.Fatalf("reboot: %d %s", code, out)
	}
	code, out, e := run("mode", "show")
	if code != exitFailure || !strings.Contains(e, "rig: mode: 0000:03:00.0: query firmware config failed (nv-access-check-failed on 0000:03:00.0)") ||
		!strings.Contains(e, "-E- Error when trying to check if NV access registers are supported") ||
		!strings.Contains(e, "\n  cause: the firmware of 0000:03:00.0 does not answer NV configuration access") ||
		!strings.Contains(e, "\n  fix: cold power cycle the server") || !strings.Contains(e, "`mstfwreset -d 0000:03:00.0 reset`") {
		t.Fatalf("show after reboot: %d\n%s%s", code, out, e)
	}
	if code, _, _ := run("fwsim", "power-cycle"); code != 0 {
		t.Fatal("power-cycle")
	}
	if code, out, _ := run("mode", "show"); code != 0 || !strings.Contains(out, "0000:03:00.0  BlueField2  dpu      dpu") {
		t.Fatalf("show after power cycle: %d\n%s", code, out)
	}

	// a ConnectX-only host
	cx := filepath.Join(dir, "cx")
	root = cx
	writeFn("0000:5e:00.0", "101d")
	writeFn("0000:5e:00.1", "101d")
	pb := filepath.Join(dir, "pb.yaml")
	os.WriteFile(pb, []byte("name: t\nmode: {want: dpu}\n"), 0o644)
	code, out, e = rig(t, "--root", cx, "plan", "-p", pb)
	if code == exitOK || !strings.Contains(out+e, "mode.want: dpu: this host has no BlueField; the NIC found is 0000:5e:00.0 (ConnectX-6 Dx), and a ConnectX has no DPU mode") ||
		!strings.Contains(out+e, "remove the mode section from the playbook") {
		t.Fatalf("plan on ConnectX: %d\n%s%s", code, out, e)
	}
	code, out, e = rig(t, "--root", cx, "mode", "show")
	if code != exitOK || !strings.Contains(out, "0000:5e:00.0  ConnectX6DX  n/a      n/a        -") || !strings.Contains(out, "not applicable: a ConnectX has no DPU mode") {
		t.Fatalf("show on ConnectX: %d\n%s%s", code, out, e)
	}
}

// Without a Current column the text shows what was read (Next Boot) and
// says what was not: no running mode, no current values, pending unknown.
func TestPrintModesNoCurrentColumn(t *testing.T) {
	b, err := os.ReadFile("../../mlxconfig/testdata/q-bf3-real.txt")
	if err != nil {
		t.Fatal(err)
	}
	q, err := mlxconfig.ParseQuery(string(b))
	if err != nil {
		t.Fatal(err)
	}
	rep := card.ModeReport{BDF: "0000:03:00.0", Model: "BlueField-3", DeviceType: q.DeviceType, Generation: mlxconfig.BlueField3, Applicable: true,
		Current: mlxconfig.ModeNotRead, Next: mlxconfig.ModeDPU, Unread: []string{"current mode: mstconfig printed no Current column (the firmware does not report current values)"}}
	for _, name := range mlxconfig.ModeParams {
		p, _ := q.Param(name)
		rep.Params = append(rep.Params, p)
	}
	var out bytes.Buffer
	if err := printModes(&out, []card.ModeReport{rep}); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		"0000:03:00.0  BlueField3  not read  dpu        unknown              no",
		"  INTERNAL_CPU_MODEL            -        -        EMBEDDED_CPU(1)",
		"  not read: current mode: mstconfig printed no Current column",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %q in\n%s", want, s)
		}
	}
	if strings.Contains(s, "EMBEDDED_CPU(1)  EMBEDDED_CPU(1)") {
		t.Errorf("a current value was printed:\n%s", s)
	}
}

// A playbook with mode and firmware sections: a firmware value other than
// the mode's for one of its parameters is refused when the playbook is
// read (exit 2, file:line, both fields, the fix) before any tool runs; the
// mode's own value is written once (by the mode step), exit 3 until the
// power cycle, then 0.
func TestModeFirmwareCLI(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	d := filepath.Join(root, "sys/bus/pci/devices/0000:03:00.0")
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(d, "vendor"), []byte("0x15b3\n"), 0o644)
	os.WriteFile(filepath.Join(d, "device"), []byte("0xa2d6\n"), 0o644)
	g := []string{"--root", root, "--fw-sim", filepath.Join(dir, "fw.json")}
	lock := []string{"--lock-file", filepath.Join(dir, "lock")}
	run := func(args ...string) (int, string, string) {
		return rig(t, append(append([]string{}, g...), args...)...)
	}
	if code, _, e := run("fwsim", "init", "--device", "0000:03:00.0=a2d6:separated"); code != 0 {
		t.Fatalf("init: %s", e)
	}
	pb := filepath.Join(dir, "pb.yaml")
	body := "name: t\nmode: {want: dpu}\nfirmware:\n  devices:\n    - device: \"*\"\n      parameters:\n        NUM_OF_VFS: 16\n        INTERNAL_CPU_MODEL: %s\n"
	os.WriteFile(pb, []byte(fmt.Sprintf(body, "SEPARATED_HOST")), 0o644)
	for _, cmd := range [][]string{{"plan", "-p", pb}, append([]string{"up", "-p", pb}, lock...)} {
		code, out, e := run(cmd...)
		if code != exitUsage || !strings.Contains(e, pb+":8: firmware.devices[0].parameters.INTERNAL_CPU_MODEL: SEPARATED_HOST conflicts with mode.want: dpu") ||
			!strings.Contains(e, "remove INTERNAL_CPU_MODEL from this firmware entry") {
			t.Fatalf("%s: %d\n%s%s", cmd[0], code, out, e)
		}
	}
	if _, out, _ := run("mode", "show"); !strings.Contains(out, "0000:03:00.0  BlueField2  separated  separated") {
		t.Fatalf("the refused playbook changed the firmware:\n%s", out)
	}
	os.WriteFile(pb, []byte(fmt.Sprintf(body, "EMBEDDED_CPU")), 0o644)
	code, out, _ := run(append([]string{"up", "-p", pb}, lock...)...)
	if code != exitPowerCycle || strings.Count(out, "set INTERNAL_CPU_MODEL") != 1 || !strings.Contains(out, "set NUM_OF_VFS (next boot) 8 -> 16") {
		t.Fatalf("up: %d\n%s", code, out)
	}
	if code, out, _ = run("fwsim", "power-cycle"); code != 0 {
		t.Fatalf("power-cycle: %s", out)
	}
	if code, out, _ = run(append([]string{"up", "-p", pb}, lock...)...); code != exitOK {
		t.Fatalf("up after the power cycle: %d\n%s", code, out)
	}
}
