package card

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"rig/internal/host"
	"rig/internal/testutil/fakeexec"
	"rig/lab/fwsim"
	"rig/mlxconfig"
	"rig/playbooks"
	"rig/provision"
)

// modeRig is a fake host root with BlueField PCI functions, the firmware
// simulator behind the exec seam, and a recorder of every argv.
type modeRig struct {
	h   *host.Host
	sim *fwsim.Sim
	rec *fakeexec.Recorder
}

func newModeRig(t *testing.T, devs map[string]string) *modeRig {
	t.Helper()
	root := t.TempDir()
	sims := map[string]*fwsim.Device{}
	for bdf, spec := range devs {
		id, mode, _ := strings.Cut(spec, ":")
		writePCIFunction(t, root, bdf, "15b3", id)
		bindDriver(t, root, bdf, "mlx5_core")
		m, err := mlxconfig.ParseDPUMode(mode)
		if err != nil {
			t.Fatal(err)
		}
		d, err := fwsim.NewDevice(id, m)
		if err != nil {
			t.Fatal(err)
		}
		sims[bdf] = d
	}
	r := &modeRig{sim: fwsim.New(filepath.Join(t.TempDir(), "fw.json"))}
	if err := r.sim.Init(sims); err != nil {
		t.Fatal(err)
	}
	r.rec = &fakeexec.Recorder{Next: r.sim.Exec(func(ctx context.Context, name string, args ...string) ([]byte, error) {
		return nil, fakeexec.NotFound(name, args...)
	})}
	r.h = &host.Host{Root: root, Exec: r.rec.Exec}
	return r
}

// env is the steps' environment on the rig's host, rig running as root.
func (r *modeRig) env() *provision.Env {
	return &provision.Env{Host: r.h, Geteuid: func() int { return 0 }}
}

// writePCIFunction creates sys/bus/pci/devices/<bdf> under root with its
// vendor and (when given) device id files, as sysfs shows them ("0x15b3").
func writePCIFunction(t *testing.T, root, bdf, vendor, device string) {
	t.Helper()
	dir := filepath.Join(root, "sys/bus/pci/devices", bdf)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"vendor": vendor, "device": device}
	for f, v := range files {
		if v == "" {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte("0x"+v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// bindDriver links sys/bus/pci/devices/<bdf>/driver to drivers/<driver>
// under root, as the kernel shows a bound function.
func bindDriver(t *testing.T, root, bdf, driver string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(root, "sys/bus/pci/drivers", driver), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../drivers/"+driver, filepath.Join(root, "sys/bus/pci/devices", bdf, "driver")); err != nil {
		t.Fatal(err)
	}
}

// writes returns the recorded commands that write firmware config.
func (r *modeRig) writes() []string {
	var out []string
	for _, a := range r.rec.Calls() {
		for _, x := range a {
			if x == "set" || x == "s" || x == "r" || x == "p" {
				out = append(out, strings.Join(a, " "))
				break
			}
		}
	}
	return out
}

func (r *modeRig) reset() { r.rec.Reset() }

func modeStepFor(t *testing.T, r *modeRig, want string, devices ...string) provision.Step {
	t.Helper()
	s, err := NewModeStep(r.env(), &playbooks.ModeSpec{Want: want, Devices: devices})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkAndApply is one step's check followed by its plan's ops, without
// the runner's re-check.
func checkAndApply(ctx context.Context, s provision.Step) error {
	p, err := s.Check(ctx)
	if err != nil {
		return err
	}
	return p.Apply(ctx)
}

func changeStrings(p provision.Plan) []string {
	var out []string
	for _, c := range p.Changes() {
		out = append(out, c.String())
	}
	return out
}

func TestModeSeparatedToDPU(t *testing.T) {
	for _, tc := range []struct {
		name, id, bdf string
	}{
		{"BlueField-2", "a2d6", "0000:03:00.0"},
		{"BlueField-3", "a2dc", "0000:b1:00.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			fn1 := strings.TrimSuffix(tc.bdf, "0") + "1"
			r := newModeRig(t, map[string]string{tc.bdf: tc.id + ":separated", fn1: tc.id + ":separated"})
			s := modeStepFor(t, r, "dpu") // auto: function 0 only
			plan, err := s.Check(ctx)
			if err != nil {
				t.Fatal(err)
			}
			obj := "mode " + tc.bdf + ": set "
			want := []string{
				obj + "INTERNAL_CPU_MODEL (next boot) SEPARATED_HOST(0) -> EMBEDDED_CPU(1)",
				obj + "INTERNAL_CPU_PAGE_SUPPLIER (next boot) EXT_HOST_PF(1) -> ECPF(0)",
				obj + "INTERNAL_CPU_ESWITCH_MANAGER (next boot) EXT_HOST_PF(1) -> ECPF(0)",
				obj + "INTERNAL_CPU_IB_VPORT0 (next boot) EXT_HOST_PF(1) -> ECPF(0)",
				obj + "INTERNAL_CPU_OFFLOAD_ENGINE (next boot) DISABLED(1) -> ENABLED(0)",
			}
			if got := changeStrings(plan); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("plan:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if !strings.Contains(plan.Pending, "power cycle required") {
				t.Errorf("plan pending = %q", plan.Pending)
			}
			if w := r.writes(); len(w) != 0 {
				t.Fatalf("Check wrote: %v", w)
			}
			if q := strings.Join(r.rec.Calls()[0], " "); q != "mstconfig -e -d "+tc.bdf+" q INTERNAL_CPU_MODEL INTERNAL_CPU_PAGE_SUPPLIER INTERNAL_CPU_ESWITCH_MANAGER INTERNAL_CPU_IB_VPORT0 INTERNAL_CPU_OFFLOAD_ENGINE" {
				t.Errorf("query argv = %q", q)
			}

			r.reset()
			if err := plan.Apply(ctx); err != nil {
				t.Fatal(err)
			}
			wantSet := "mstconfig -y -d " + tc.bdf + " set INTERNAL_CPU_MODEL=EMBEDDED_CPU INTERNAL_CPU_PAGE_SUPPLIER=ECPF INTERNAL_CPU_ESWITCH_MANAGER=ECPF INTERNAL_CPU_IB_VPORT0=ECPF INTERNAL_CPU_OFFLOAD_ENGINE=ENABLED"
			if w := r.writes(); len(w) != 1 || w[0] != wantSet {
				t.Fatalf("apply writes:\n%q\nwant exactly\n%q", w, wantSet)
			}

			// next boot holds DPU, running firmware does not: pending, no changes
			after, err := s.Check(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(after.Changes()) != 0 || !strings.Contains(after.Pending, "power cycle required: "+tc.bdf+" next boot holds dpu mode but the running firmware is in separated mode") ||
				!strings.Contains(after.Pending, "a host reboot does not reload NIC firmware in DPU mode") {
				t.Fatalf("after apply: %+v", after)
			}
			r.reset()
			if err := after.Apply(ctx); err != nil {
				t.Fatal(err)
			}
			if w := r.writes(); len(w) != 0 {
				t.Fatalf("second apply wrote: %v", w)
			}
			rep, err := (&provision.Runner{Steps: []provision.Step{s}}).Execute(ctx, provision.RunApply, provision.Selection{})
			if err != nil || rep.Steps[0].Status != provision.StatusPendingReboot || len(rep.Steps[0].Changes) != 0 {
				t.Fatalf("runner: %+v %v", rep, err)
			}

			if _, err := r.sim.PowerCycle(); err != nil {
				t.Fatal(err)
			}
			ok, err := s.Check(ctx)
			if err != nil || !ok.Satisfied() || ok.Pending != "" {
				t.Fatalf("after power cycle: %+v %v", ok, err)
			}
			reps, err := ShowModes(ctx, r.env(), nil)
			if err != nil || len(reps) != 1 || reps[0].Current != mlxconfig.ModeDPU || reps[0].Pending {
				t.Fatalf("show: %+v %v", reps, err)
			}
		})
	}
}

func TestModeApplyTwice(t *testing.T) {
	ctx := context.Background()
	r := newModeRig(t, map[string]string{"0000:03:00.0": "a2dc:dpu"})
	s := modeStepFor(t, r, "nic", "03:00.0")
	run := &provision.Runner{Steps: []provision.Step{s}}
	rep, err := run.Execute(ctx, provision.RunApply, provision.Selection{})
	if err != nil || rep.Steps[0].Status != provision.StatusPendingReboot || len(rep.Steps[0].Changes) != 1 {
		t.Fatalf("first: %+v %v", rep.Steps, err)
	}
	// BlueField-3 NIC mode = INTERNAL_CPU_OFFLOAD_ENGINE only
	if w := r.writes(); len(w) != 1 || w[0] != "mstconfig -y -d 0000:03:00.0 set INTERNAL_CPU_OFFLOAD_ENGINE=DISABLED" {
		t.Fatalf("writes: %q", w)
	}
	r.reset()
	rep, err = run.Execute(ctx, provision.RunApply, provision.Selection{})
	if err != nil || rep.Steps[0].Status != provision.StatusPendingReboot || len(rep.Steps[0].Changes) != 0 || len(r.writes()) != 0 {
		t.Fatalf("second: %+v %v writes %v", rep.Steps, err, r.writes())
	}
	if _, err := r.sim.PowerCycle(); err != nil {
		t.Fatal(err)
	}
	rep, err = run.Execute(ctx, provision.RunApply, provision.Selection{})
	if err != nil || rep.Steps[0].Status != provision.StatusOK || len(r.writes()) != 0 {
		t.Fatalf("after power cycle: %+v %v", rep.Steps, err)
	}
}

func TestModeRestrictedHost(t *testing.T) {
	ctx := context.Background()
	r := newModeRig(t, map[string]string{"0000:03:00.0": "a2d6:separated"})
	if err := r.sim.SetRestricted("", true); err != nil {
		t.Fatal(err)
	}
	s := modeStepFor(t, r, "dpu")
	_, err := s.Check(ctx)
	p, ok := provision.AsProblem(err)
	if !ok || !strings.Contains(err.Error(), "zero-trust") ||
		!strings.Contains(err.Error(), "The 'RO' shows parameters which are for read only and cannot be changed") ||
		!strings.Contains(err.Error(), "level                         : RESTRICTED") || !strings.Contains(p.Fix(), "mstprivhost -d 0000:03:00.0 p") {
		t.Fatalf("check: %v", err)
	}
	if err := checkAndApply(ctx, s); err == nil {
		t.Fatal("apply on a restricted host succeeded")
	}
	rep, err := (&provision.Runner{Steps: []provision.Step{s}}).Execute(ctx, provision.RunApply, provision.Selection{})
	if err != nil || rep.Steps[0].Status != provision.StatusFailed {
		t.Fatalf("runner: %+v %v", rep, err)
	}
	if w := r.writes(); len(w) != 0 {
		t.Fatalf("restricted host got writes: %v", w)
	}
	// already in the wanted mode: restriction does not matter
	r2 := newModeRig(t, map[string]string{"0000:03:00.0": "a2d6:dpu"})
	_ = r2.sim.SetRestricted("0000:03:00.0", true)
	plan, err := modeStepFor(t, r2, "dpu").Check(ctx)
	if err != nil || !plan.Satisfied() || plan.Pending != "" {
		t.Fatalf("restricted but satisfied: %+v %v", plan, err)
	}
}

// An older mstflint hides TLVs the host cannot write: the set fails with
// the tool's own text, which the step reports as a restricted host.
func TestModeSetRefusedByTool(t *testing.T) {
	ctx := context.Background()
	r := newModeRig(t, map[string]string{"0000:03:00.0": "a2d6:separated"})
	inner := r.h.Exec
	refuse := "\nDevice #1:\n----------\n\nDevice type:        BlueField2          \n\nConfigurations:                                          Next Boot       New\n-E- The Device doesn't support INTERNAL_CPU_MODEL parameter\n"
	r.h.Exec = func(ctx context.Context, name string, args ...string) ([]byte, error) {
		if len(args) > 3 && args[3] == "set" {
			r.rec.Record(append([]string{name}, args...))
			return []byte(refuse), &host.ToolError{Argv: append([]string{name}, args...), Stdout: refuse, Err: errors.New("exit status 1")}
		}
		return inner(ctx, name, args...)
	}
	err := checkAndApply(ctx, modeStepFor(t, r, "dpu"))
	if _, ok := provision.AsProblem(err); !ok || !strings.Contains(err.Error(), "-E- The Device doesn't support INTERNAL_CPU_MODEL parameter") {
		t.Fatalf("apply: %v", err)
	}
}

func TestModeToolSelection(t *testing.T) {
	ctx := context.Background()
	r := newModeRig(t, map[string]string{"0000:03:00.0": "a2d6:dpu"})
	inner := r.h.Exec
	r.h.Exec = func(ctx context.Context, name string, args ...string) ([]byte, error) {
		if name == "mstconfig" {
			r.rec.Record([]string{name})
			return nil, &host.ToolError{Argv: append([]string{name}, args...), Err: exec.ErrNotFound}
		}
		return inner(ctx, name, args...)
	}
	s := modeStepFor(t, r, "separated")
	plan, err := s.Check(ctx)
	if err != nil || len(plan.Changes()) != 1 {
		t.Fatalf("%+v %v", plan, err)
	}
	r.reset()
	if err := plan.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	if w := r.writes(); len(w) != 1 || w[0] != "mlxconfig -y -d 0000:03:00.0 set INTERNAL_CPU_MODEL=SEPARATED_HOST" {
		t.Fatalf("writes: %q", w)
	}

	// neither tool: name the package
	r.h.Exec = func(ctx context.Context, name string, args ...string) ([]byte, error) {
		return nil, &host.ToolError{Argv: append([]string{name}, args...), Err: exec.ErrNotFound}
	}
	_, err = modeStepFor(t, r, "dpu").Check(ctx)
	if p, ok := provision.AsProblem(err); !ok || !strings.Contains(p.Fix(), "mstflint") {
		t.Fatalf("no tool: %v", err)
	}
}

func TestModeDevices(t *testing.T) {
	ctx := context.Background()
	r := newModeRig(t, map[string]string{"0000:03:00.0": "a2d6:dpu", "0000:03:00.1": "a2d6:dpu", "0000:5e:00.0": "101d:dpu"})
	// auto: function 0 of each BlueField device, from the smartnic
	// inventory; under a fixture root discovery runs no tool
	if devs, skipped, err := modeTargets(ctx, r.h, nil, mlxconfig.ModeDPU); err != nil || len(devs) != 1 || devs[0].BDF != "0000:03:00.0" || devs[0].Generation != mlxconfig.BlueField2 || strings.Join(skipped, ";") != "0000:5e:00.0 (ConnectX-6 Dx): a ConnectX has no DPU mode; left alone" {
		t.Fatalf("auto: %+v %v %v", devs, skipped, err)
	}
	if devs, _, err := modeTargets(ctx, r.h, []string{"0000:03:00.1"}, mlxconfig.ModeDPU); err != nil || len(devs) != 1 || devs[0].BDF != "0000:03:00.1" || devs[0].Generation != mlxconfig.BlueField2 {
		t.Fatalf("explicit function 1: %+v %v", devs, err)
	}
	if len(r.rec.Calls()) != 0 {
		t.Fatalf("discovery ran tools: %q", r.rec.Calls())
	}
	if _, err := modeStepFor(t, r, "dpu", "0000:5e:00.0").Check(ctx); err == nil || !strings.Contains(err.Error(), "mode.devices: 0000:5e:00.0 (ConnectX-6 Dx): a ConnectX has no DPU mode") {
		t.Errorf("CX6Dx: %v", err)
	}
	if _, err := modeStepFor(t, r, "dpu", "0000:99:00.0").Check(ctx); err == nil || !strings.Contains(err.Error(), "not present") {
		t.Errorf("absent: %v", err)
	}
	// a function that is present but not Mellanox
	writePCIFunction(t, r.h.Root, "0000:00:1f.0", "8086", "")
	if _, err := modeStepFor(t, r, "dpu", "00:1f.0").Check(ctx); err == nil || !strings.Contains(err.Error(), "not a BlueField-2/-3 PF (not a Mellanox function)") {
		t.Errorf("non-Mellanox: %v", err)
	}
	empty := &host.Host{Root: t.TempDir(), Exec: r.h.Exec}
	s, _ := NewModeStep(&provision.Env{Host: empty}, &playbooks.ModeSpec{Want: "dpu"})
	if _, err := s.Check(ctx); err == nil || !strings.Contains(err.Error(), "no BlueField found") {
		t.Errorf("none: %v", err)
	}
	if w := r.writes(); len(w) != 0 {
		t.Errorf("writes: %v", w)
	}
}

// A BlueField whose mode parameters rig does not know (BlueField-4, a2df)
// is left alone by auto discovery with a note, and refused when named.
func TestModeUnknownGeneration(t *testing.T) {
	ctx := context.Background()
	r := newModeRig(t, map[string]string{"0000:03:00.0": "a2d6:dpu"})
	writePCIFunction(t, r.h.Root, "0000:b1:00.0", "15b3", "a2df")
	plan, err := modeStepFor(t, r, "dpu").Check(ctx)
	if err != nil || !plan.Satisfied() || !strings.Contains(strings.Join(plan.Notes, "\n"), "0000:b1:00.0 (BlueField-4): rig knows the mode parameters of BlueField-2 and BlueField-3 only") {
		t.Fatalf("auto: %+v %v", plan, err)
	}
	for _, a := range r.rec.Calls() {
		if strings.Contains(strings.Join(a, " "), "b1:00.0") {
			t.Errorf("the BlueField-4 was queried: %q", a)
		}
	}
	_, err = modeStepFor(t, r, "dpu", "0000:b1:00.0").Check(ctx)
	if p, ok := provision.AsProblem(err); !ok || !strings.Contains(err.Error(), "not a BlueField-2/-3 PF (BlueField-4, device id a2df)") || p.Fix() == "" {
		t.Fatalf("explicit: %v", err)
	}
	// only unknown generations: the no-BlueField Problem names what was found
	r2 := newModeRig(t, map[string]string{})
	writePCIFunction(t, r2.h.Root, "0000:b1:00.0", "15b3", "a2df")
	_, err = modeStepFor(t, r2, "dpu").Check(ctx)
	if _, ok := provision.AsProblem(err); !ok || !strings.Contains(err.Error(), "no BlueField found") || !strings.Contains(err.Error(), "found only 0000:b1:00.0 (BlueField-4)") {
		t.Fatalf("only BlueField-4: %v", err)
	}
}

// mlxSample reads a real-format tool output from mlxconfig/testdata.
func mlxSample(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "mlxconfig", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// answerQuery makes the rig's mstconfig answer every query with out (and
// exit 3 with a ToolError when fail), recording the argv; other commands
// go to the simulator.
func (r *modeRig) answerQuery(out string, fail bool) {
	inner := r.h.Exec
	r.h.Exec = func(ctx context.Context, name string, args ...string) ([]byte, error) {
		if name == "mstconfig" && len(args) > len(mlxconfig.ModeParams) && args[len(args)-len(mlxconfig.ModeParams)-1] == "q" {
			argv := append([]string{name}, args...)
			r.rec.Record(argv)
			if fail {
				return []byte(out), &host.ToolError{Argv: argv, Stdout: out, Err: errors.New("exit status 3")}
			}
			return []byte(out), nil
		}
		return inner(ctx, name, args...)
	}
}

// A mode change followed by a warm reboot (not the power cycle rig asked
// for with exit 3) leaves the firmware refusing NV access: Check and
// `rig mode show` explain it, name the device, wrap the tool's argv and
// output, and write nothing; a power cycle heals it.
func TestModeWarmRebootExplained(t *testing.T) {
	ctx := context.Background()
	r := newModeRig(t, map[string]string{"0000:03:00.0": "a2d6:separated"})
	s := modeStepFor(t, r, "dpu")
	if err := checkAndApply(ctx, s); err != nil {
		t.Fatal(err)
	}
	if _, err := r.sim.WarmReboot(); err != nil {
		t.Fatal(err)
	}
	r.reset()
	for name, check := range map[string]func() error{
		"check": func() error { _, err := s.Check(ctx); return err },
		"show":  func() error { _, err := ShowModes(ctx, r.env(), nil); return err },
	} {
		err := check()
		p, ok := provision.AsProblem(err)
		var te *host.ToolError
		if !ok || !errors.As(err, &te) || te.Argv[0] != "mstconfig" || !strings.Contains(te.Stdout, "NV access registers") {
			t.Fatalf("%s: %v", name, err)
		}
		if p.Object != "mode: 0000:03:00.0" || !strings.Contains(err.Error(), "nv-access-check-failed on 0000:03:00.0") ||
			!strings.Contains(p.Cause(), "only rebooted") || !strings.Contains(p.Fix(), "mstfwreset -d 0000:03:00.0 reset") || !strings.Contains(p.Fix(), "cold power cycle") {
			t.Errorf("%s: object %q\n%v\ncause %q\nfix %q", name, p.Object, err, p.Cause(), p.Fix())
		}
	}
	if w := r.writes(); len(w) != 0 {
		t.Fatalf("writes: %v", w)
	}
	if _, err := r.sim.PowerCycle(); err != nil {
		t.Fatal(err)
	}
	if plan, err := s.Check(ctx); err != nil || !plan.Satisfied() || plan.Pending != "" {
		t.Fatalf("after power cycle: %+v %v", plan, err)
	}
}

// Query failures of each family, and a failing set, become Problems with
// cause and fix; the tool error (argv, output) stays in the chain.
func TestModeToolFailureTexts(t *testing.T) {
	ctx := context.Background()
	for file, want := range map[string]string{
		"err-open.txt":        "open-failed on 0000:03:00.0",
		"err-unsupported.txt": "unsupported-device on 0000:03:00.0",
		"err-livefish.txt":    "livefish on 0000:03:00.0",
		"err-nv-rc.txt":       "nv-access-check-failed on 0000:03:00.0 (ME_REG_ACCESS_DEV_BUSY)",
		"err-nv-disabled.txt": "nv-access-unsupported on 0000:03:00.0 (ME_REG_ACCESS_BAD_PARAM)",
	} {
		r := newModeRig(t, map[string]string{"0000:03:00.0": "a2d6:dpu"})
		r.answerQuery(mlxSample(t, file), true)
		_, err := modeStepFor(t, r, "dpu").Check(ctx)
		p, ok := provision.AsProblem(err)
		var te *host.ToolError
		if !ok || !errors.As(err, &te) || !strings.Contains(err.Error(), want) || p.Cause() == "" || p.Fix() == "" ||
			!strings.Contains(err.Error(), "mstconfig -e -d 0000:03:00.0 q INTERNAL_CPU_MODEL") {
			t.Errorf("%s: %v", file, err)
		}
	}
	// a set on a device that lost NV access between plan and apply
	r := newModeRig(t, map[string]string{"0000:03:00.0": "a2d6:separated"})
	plan, err := modeStepFor(t, r, "dpu").Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	inner := r.h.Exec
	r.h.Exec = func(ctx context.Context, name string, args ...string) ([]byte, error) {
		if len(args) > 3 && args[3] == "set" {
			out := mlxSample(t, "err-set-nv.txt")
			return []byte(out), &host.ToolError{Argv: append([]string{name}, args...), Stdout: out, Err: errors.New("exit status 3")}
		}
		return inner(ctx, name, args...)
	}
	err = plan.Apply(ctx)
	if p, ok := provision.AsProblem(err); !ok || !strings.Contains(err.Error(), "set firmware config failed (nv-access-check-failed on 0000:03:00.0)") ||
		!strings.Contains(p.Fix(), "mstfwreset -d 0000:03:00.0 reset") || !strings.Contains(err.Error(), "mstconfig -y -d 0000:03:00.0 set") {
		t.Fatalf("set: %v", err)
	}
}

// A table without some mode rows (truncated output, older firmware) is
// not a diff: the plan stops and names the rows; nothing is written.
func TestModeIncompleteQuery(t *testing.T) {
	ctx := context.Background()
	real := mlxSample(t, "q-bf3-real.txt")
	cut := real[:strings.Index(real, "        INTERNAL_CPU_IB_VPORT0")]
	for want, missing := range map[string]string{
		"dpu": "INTERNAL_CPU_IB_VPORT0 (no row), INTERNAL_CPU_OFFLOAD_ENGINE (no row)",
		"nic": "INTERNAL_CPU_OFFLOAD_ENGINE (no row)", // BF3 NIC mode needs MODEL and OFFLOAD_ENGINE only
	} {
		r := newModeRig(t, map[string]string{"0000:03:00.0": "a2dc:separated"})
		r.answerQuery(cut, false)
		s := modeStepFor(t, r, want)
		_, err := s.Check(ctx)
		p, ok := provision.AsProblem(err)
		if !ok || !strings.Contains(err.Error(), "printed no readable Next Boot value for "+missing) || !strings.Contains(p.Cause(), "truncated") {
			t.Errorf("%s: %v", want, err)
		}
		if err := checkAndApply(ctx, s); err == nil || len(r.writes()) != 0 {
			t.Errorf("%s: applied %v, writes %v", want, err, r.writes())
		}
	}
	// a row marked pending whose values cannot be read is present,
	// pending, unreadable: not "(no row)"
	r0 := newModeRig(t, map[string]string{"0000:03:00.0": "a2dc:dpu"})
	r0.answerQuery(strings.Replace(real, "        INTERNAL_CPU_OFFLOAD_ENGINE                 ENABLED(0)      ", "*       INTERNAL_CPU_OFFLOAD_ENGINE", 1), false)
	if _, err := modeStepFor(t, r0, "dpu").Check(ctx); err == nil || !strings.Contains(err.Error(), "INTERNAL_CPU_OFFLOAD_ENGINE (present, pending, unreadable)") ||
		strings.Contains(err.Error(), "no row") || len(r0.writes()) != 0 {
		t.Errorf("pending, unreadable: %v", err)
	}
	// an N/A value is not read either
	r := newModeRig(t, map[string]string{"0000:03:00.0": "a2dc:dpu"})
	r.answerQuery(strings.Replace(real, "ENABLED(0)      ", "N/A             ", 1), false)
	if _, err := modeStepFor(t, r, "dpu").Check(ctx); err == nil || !strings.Contains(err.Error(), `INTERNAL_CPU_OFFLOAD_ENGINE (Next Boot "N/A")`) {
		t.Errorf("N/A: %v", err)
	}
}

// Without a Current column (firmware that cannot report it; the real
// BlueField-3 sample is a plain query) only Next Boot is known: the plan
// says so instead of claiming a running mode, and show marks current as
// not read.
func TestModeNoCurrentColumn(t *testing.T) {
	ctx := context.Background()
	r := newModeRig(t, map[string]string{"0000:03:00.0": "a2dc:dpu"})
	r.answerQuery(mlxSample(t, "q-bf3-real.txt"), false)
	plan, err := modeStepFor(t, r, "dpu").Check(ctx)
	if err != nil || !plan.Satisfied() || plan.Pending != "" || !strings.Contains(strings.Join(plan.Notes, "\n"), "printed no Current column") {
		t.Fatalf("dpu: %+v %v", plan, err)
	}
	plan, err = modeStepFor(t, r, "nic").Check(ctx)
	if err != nil || strings.Join(changeStrings(plan), "\n") != "mode 0000:03:00.0: set INTERNAL_CPU_OFFLOAD_ENGINE (next boot) ENABLED(0) -> DISABLED(1)" ||
		!strings.Contains(strings.Join(plan.Notes, "\n"), "running not-read mode, next boot dpu mode") {
		t.Fatalf("nic: %q %+v %v", changeStrings(plan), plan, err)
	}
	reps, err := ShowModes(ctx, r.env(), nil)
	if err != nil || len(reps) != 1 {
		t.Fatal(reps, err)
	}
	rep := reps[0]
	if rep.CurrentRead || rep.Current != mlxconfig.ModeNotRead || rep.Next != mlxconfig.ModeDPU || rep.Pending || len(rep.Params) != 5 ||
		len(rep.Unread) != 1 || !strings.Contains(rep.Unread[0], "current mode: mstconfig printed no Current column") {
		t.Fatalf("show: %+v", rep)
	}
	for _, p := range rep.Params {
		if p.Current.Present {
			t.Errorf("%s has a current value", p.Name)
		}
	}
}

// A ConnectX has no DPU mode: `rig mode show` says n/a without running a
// tool, and a playbook mode section for a ConnectX-only host is refused at
// plan time, naming the field, the card and the fix.
func TestModeConnectXOnly(t *testing.T) {
	ctx := context.Background()
	r := newModeRig(t, map[string]string{})
	writePCIFunction(t, r.h.Root, "0000:5e:00.0", "15b3", "101d")
	writePCIFunction(t, r.h.Root, "0000:5e:00.1", "15b3", "101d")
	reps, err := ShowModes(ctx, r.env(), nil)
	if err != nil || len(reps) != 1 || reps[0].BDF != "0000:5e:00.0" || reps[0].Applicable || reps[0].Current != mlxconfig.ModeNotApplicable ||
		reps[0].Next != mlxconfig.ModeNotApplicable || reps[0].Model != "ConnectX-6 Dx" || !strings.Contains(reps[0].Note, "not applicable") {
		t.Fatalf("show: %+v %v", reps, err)
	}
	if reps, err := ShowModes(ctx, r.env(), []string{"5e:00.1"}); err != nil || len(reps) != 1 || reps[0].Current != mlxconfig.ModeNotApplicable {
		t.Fatalf("show --device: %+v %v", reps, err)
	}
	for _, want := range []string{"dpu", "nic", "separated"} {
		_, err = modeStepFor(t, r, want).Check(ctx)
		p, ok := provision.AsProblem(err)
		if !ok || p.Object != "mode.want: "+want || !strings.Contains(err.Error(), "the NIC found is 0000:5e:00.0 (ConnectX-6 Dx), and a ConnectX has no DPU mode") ||
			!strings.Contains(p.Fix(), "remove the mode section") {
			t.Errorf("%s: %v", want, err)
		}
	}
	if c := r.rec.Calls(); len(c) != 0 {
		t.Errorf("ran tools: %q", c)
	}
}
