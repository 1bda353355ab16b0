package card

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"rig/internal/host"
	"rig/internal/testutil/fakeexec"
	"rig/lab/fwsim"
	"rig/playbooks"
	"rig/provision"
	"rig/provision/steptest"
)

// mstHost: a fixture copy plus a fake exec where the listed tools exist.
// The fake `mst start` does what MFT does: creates /dev/mst nodes (here
// regular files named like MFT's) for the names given.
func mstHost(t *testing.T, fixture string, tools []string, startCreates []string) (*host.Host, *fakeexec.Recorder) {
	t.Helper()
	root := steptest.CopyHostRoot(t, fixture)
	have := map[string]bool{}
	for _, x := range tools {
		have[x] = true
	}
	rec := &fakeexec.Recorder{}
	rec.Answer = func(name string, args []string) ([]byte, error, bool) {
		if !have[name] {
			return nil, nil, false // not found
		}
		if name == "mst" && len(args) == 1 && args[0] == "start" {
			for _, n := range startCreates {
				p := filepath.Join(root, "dev/mst", n)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					return nil, err, true
				}
				if err := os.WriteFile(p, nil, 0o600); err != nil {
					return nil, err, true
				}
			}
			return []byte("Starting MST (Mellanox Software Tools) driver set\nCreate devices\n"), nil, true
		}
		return []byte(name + " version\n"), nil, true
	}
	return &host.Host{Root: root, Exec: rec.Exec}, rec
}

func writesOf(calls []string) []string {
	var w []string
	for _, c := range calls {
		if c == "mst start" {
			w = append(w, c)
		}
	}
	return w
}

func TestMSTStartApplyTwice(t *testing.T) {
	h, rec := mstHost(t, "bf2-host", []string{"mst", "mlxconfig"}, []string{"mt41686_pciconf0", "mt41686_pciconf0.1"})
	st, _ := NewMSTStep(&provision.Env{Host: h}, &playbooks.MSTSpec{MinDevices: 1})
	plan, err := st.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []provision.Change{{Object: "mst", Action: "mst start", From: "/dev/mst empty", To: "/dev/mst/mt41686_pciconf0,/dev/mst/mt41686_pciconf0.1"}}
	if !reflect.DeepEqual(plan.Changes(), want) {
		t.Errorf("plan %+v", plan.Changes())
	}
	wantProbes := []string{"mstconfig -v", "mlxconfig -v", "mst version"}
	if c := rec.Lines(); !reflect.DeepEqual(c, wantProbes) {
		t.Errorf("check ran %q, want only the read-only probes %q", c, wantProbes)
	}
	rec.Reset()
	r := steptest.RunStepOnce(t, st, provision.RunApply)
	if r.Status != provision.StatusChanged {
		t.Fatalf("first apply: %s %s", r.Status, r.Error)
	}
	if w := writesOf(rec.Lines()); !reflect.DeepEqual(w, []string{"mst start"}) {
		t.Errorf("first apply ran %q", rec.Lines())
	}
	if len(r.Notes) != 1 || r.Notes[0] != "mst devices: /dev/mst/mt41686_pciconf0 (0000:e1:00.0 BlueField-2), /dev/mst/mt41686_pciconf0.1 (0000:e1:00.1 BlueField-2)" {
		t.Errorf("notes %q", r.Notes)
	}
	rec.Reset()
	r = steptest.RunStepOnce(t, st, provision.RunApply)
	if r.Status != provision.StatusOK || len(r.Changes) != 0 {
		t.Errorf("second apply: %s %v", r.Status, r.Changes)
	}
	if w := writesOf(rec.Lines()); len(w) != 0 {
		t.Errorf("second apply wrote: %q", rec.Lines())
	}
}

// mstflint only (Debian): no mst start, a note that tools use the BDF.
func TestMSTMstflintOnlyApplyTwice(t *testing.T) {
	h, rec := mstHost(t, "bf2-dpu-arm", []string{"mstconfig"}, nil)
	st, _ := NewMSTStep(&provision.Env{Host: h}, &playbooks.MSTSpec{})
	for i := 0; i < 2; i++ {
		r := steptest.RunStepOnce(t, st, provision.RunApply)
		if r.Status != provision.StatusOK || len(r.Changes) != 0 {
			t.Fatalf("apply %d: %s %v %s", i, r.Status, r.Changes, r.Error)
		}
		want := "NVIDIA MFT (mst) not installed: mstflint tools address devices by PCI BDF and need no `mst start`; devices: " +
			"0000:03:00.0 (BlueField-2, mst name mt41686_pciconf0), 0000:03:00.1 (BlueField-2, mst name mt41686_pciconf0.1)"
		if len(r.Notes) != 1 || r.Notes[0] != want {
			t.Errorf("notes %q", r.Notes)
		}
	}
	if w := writesOf(rec.Lines()); len(w) != 0 {
		t.Errorf("wrote %q", w)
	}
}

func TestMSTNoTools(t *testing.T) {
	h, rec := mstHost(t, "bf2-host", []string{"mst"}, nil) // MFT's mst alone is not enough
	st, _ := NewMSTStep(&provision.Env{Host: h}, &playbooks.MSTSpec{})
	r := steptest.RunStepOnce(t, st, provision.RunApply)
	if r.Status != provision.StatusFailed || !strings.Contains(r.Error, "neither mstconfig (mstflint) nor mlxconfig (NVIDIA MFT) is installed") ||
		!strings.Contains(r.Fix, "Debian package mstflint") || !strings.Contains(r.Fix, "apt-get install mstflint") {
		t.Errorf("%s: %s / %s", r.Status, r.Error, r.Fix)
	}
	if w := writesOf(rec.Lines()); len(w) != 0 {
		t.Errorf("wrote %q", w)
	}
}

// A tool that exists but fails its probe still counts as installed.
func TestMSTProbeFailureIsNotAbsence(t *testing.T) {
	h, rec := mstHost(t, "bf2-dpu-arm", nil, nil)
	rec.Answer = func(name string, args []string) ([]byte, error, bool) {
		if name == "mstconfig" {
			return nil, &host.ToolError{Argv: append([]string{name}, args...), Err: errors.New("exit status 1")}, true
		}
		return nil, nil, false
	}
	st, _ := NewMSTStep(&provision.Env{Host: h}, &playbooks.MSTSpec{})
	if r := steptest.RunStepOnce(t, st, provision.RunPlan); r.Status != provision.StatusOK {
		t.Errorf("%s %s", r.Status, r.Error)
	}
}

func TestMSTStartCreatesNothing(t *testing.T) {
	h, _ := mstHost(t, "bf2-host", []string{"mst", "mstconfig"}, nil)
	st, _ := NewMSTStep(&provision.Env{Host: h}, &playbooks.MSTSpec{})
	r := steptest.RunStepOnce(t, st, provision.RunApply)
	if r.Status != provision.StatusFailed || !strings.Contains(r.Error, "created no /dev/mst devices") || !strings.Contains(r.Fix, "--with_unknown") {
		t.Errorf("%s: %s / %s", r.Status, r.Error, r.Fix)
	}
}

func TestMSTStartDisabledAndMinDevices(t *testing.T) {
	h, rec := mstHost(t, "cx6dx-host", []string{"mst", "mlxconfig"}, nil)
	no := false
	st, _ := NewMSTStep(&provision.Env{Host: h}, &playbooks.MSTSpec{Start: &no})
	r := steptest.RunStepOnce(t, st, provision.RunApply)
	if r.Status != provision.StatusOK || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "mst.start is false") {
		t.Errorf("%s %q", r.Status, r.Notes)
	}
	if w := writesOf(rec.Lines()); len(w) != 0 {
		t.Errorf("wrote %q", w)
	}
	st, _ = NewMSTStep(&provision.Env{Host: h}, &playbooks.MSTSpec{MinDevices: 3})
	r = steptest.RunStepOnce(t, st, provision.RunPlan)
	if r.Status != provision.StatusFailed || !strings.Contains(r.Error, "found 2 Mellanox NIC functions") {
		t.Errorf("%s %s", r.Status, r.Error)
	}
	if errs := (&playbooks.MSTSpec{MinDevices: -1}).Validate(); len(errs) != 1 {
		t.Errorf("min_devices -1: %v", errs)
	}
}

// With the firmware simulator behind the seam (rig --fw-sim), its answer
// to the `mstconfig -v` / `mlxconfig -v` probes (exit 0, mstflint's version
// line) counts as installed; `mst` still goes to the host and is absent.
func TestMSTWithFirmwareSimulator(t *testing.T) {
	h, rec := mstHost(t, "bf2-dpu-arm", nil, nil)
	sim := fwsim.New(filepath.Join(t.TempDir(), "fw.json")).Exec(rec.Exec)
	answers := map[string]string{}
	h.Exec = func(ctx context.Context, name string, args ...string) ([]byte, error) {
		out, err := sim(ctx, name, args...)
		if err == nil {
			answers[strings.Join(append([]string{name}, args...), " ")] = string(out)
		}
		return out, err
	}
	st, _ := NewMSTStep(&provision.Env{Host: h}, &playbooks.MSTSpec{})
	r := steptest.RunStepOnce(t, st, provision.RunPlan)
	if r.Status != provision.StatusOK || len(r.Notes) != 1 || !strings.HasPrefix(r.Notes[0], "NVIDIA MFT (mst) not installed") {
		t.Fatalf("%s %s %q", r.Status, r.Error, r.Notes)
	}
	want := map[string]string{"mstconfig -v": fwsim.VersionLine + "\n", "mlxconfig -v": fwsim.VersionLine + "\n"}
	if !reflect.DeepEqual(answers, want) {
		t.Errorf("simulator answered %q, want %q", answers, want)
	}
	if c := rec.Lines(); !reflect.DeepEqual(c, []string{"mst version"}) {
		t.Errorf("passed to the host: %q", c)
	}
}
