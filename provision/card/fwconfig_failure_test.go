package card

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rig/internal/host"
	"rig/playbooks"
	"rig/provision"
	"rig/provision/steptest"
)

// failQuery makes the rig's fake exec answer the mode query (mstconfig
// -e -d BDF q ...) as a failing tool: stdout and stderr as given, exit 3.
// Every other command goes on to the simulator.
func (r *modeRig) failQuery(stdout, stderr string) {
	r.rec.Answer = func(name string, args []string) ([]byte, error, bool) {
		if name != "mstconfig" || len(args) < 4 || args[3] != "q" {
			return nil, nil, false
		}
		return []byte(stdout), &host.ToolError{Argv: append([]string{name}, args...), Stdout: stdout, Stderr: stderr, Err: errors.New("exit status 3")}, true
	}
}

// stepProblem runs the step once (apply) and returns its result and the
// Problem it failed with.
func stepProblem(t *testing.T, s provision.Step) (provision.StepResult, *provision.Problem) {
	t.Helper()
	res := steptest.RunStep(t, s)
	p, ok := provision.AsProblem(res.Err)
	if res.Status != provision.StatusFailed || !ok {
		t.Fatalf("%s %v", res.Status, res.Err)
	}
	var te *host.ToolError
	if !errors.As(res.Err, &te) || te.Argv[0] != "mstconfig" {
		t.Fatalf("no tool error (argv, output) in %v", res.Err)
	}
	if res.Cause != p.Cause() || res.Fix != p.Fix() || res.Cause == "" || res.Fix == "" {
		t.Fatalf("result cause %q fix %q, problem cause %q fix %q", res.Cause, res.Fix, p.Cause(), p.Fix())
	}
	return res, p
}

// Through the mode step with a fake exec: the one text mstconfig prints
// for every open failure ("-E- Failed to open the device", twice on a
// query: mlxcfg_commander.cpp Commander::create, then mlxcfg_ui.cpp
// queryDevsCfg) is explained by what the host shows, and the step's
// Problem carries the cause and the fix; the tool's lines may sit among
// log lines, with a prefix, on stderr.
func TestFirmwareToolFailureThroughModeStep(t *testing.T) {
	const open = "-E- Failed to open the device\n-E- Failed to open the device\n"
	const bdf = "0000:03:00.0"
	for name, tc := range map[string]struct {
		stdout, stderr string
		setup          func(t *testing.T, r *modeRig, env *provision.Env)
		kind           string
		causeHas       []string
		fixHas         string
	}{
		"not root": {open, "", func(t *testing.T, r *modeRig, env *provision.Env) { env.Geteuid = func() int { return 1000 } },
			"no-permission on 0000:03:00.0", []string{"rig runs as uid 1000, not root"}, "run rig as root"},
		"driver not bound": {open, "", func(t *testing.T, r *modeRig, env *provision.Env) {
			removeFile(t, r, "sys/bus/pci/devices/"+bdf+"/driver")
		},
			"driver-not-loaded on 0000:03:00.0", []string{"no driver bound", "no /sys/bus/pci/drivers/mlx5_core/" + bdf}, "modprobe mlx5_core"},
		// issue #416's two lines, the perror on stderr, with a lockdown file
		"lockdown": {open, "write counter to semaphore: Permission denied\n", func(t *testing.T, r *modeRig, env *provision.Env) {
			writeFile(t, r, "sys/kernel/security/lockdown", "none [integrity] confidentiality\n")
		}, "no-permission on 0000:03:00.0", []string{"locked down", "write counter to semaphore: Permission denied", "[integrity]"}, "Secure Boot off"},
		// the same lines behind a log's timestamps, among -I- and plain lines
		"embedded": {"2026-12-04 10:00:01 mode query\n2026-12-04 10:00:01 -E- Failed to open the device\n-I- Please reboot machine to load new configurations.\n", "[mstconfig] write counter to semaphore: Permission denied\n",
			nil, "no-permission on 0000:03:00.0", []string{"refused mstconfig access", "write counter to semaphore: Permission denied"}, "lockdown"},
		// an -E- line rig does not know, on stderr with a timestamp
		"unknown": {"\nDevice #1:\n----------\n", "2026-12-04 10:00:01 -E- Failed to frobnicate the TLV cache (0x2a)\n", nil,
			"unclassified tool-error on 0000:03:00.0", []string{`unclassified: mstconfig printed "-E- Failed to frobnicate the TLV cache (0x2a)"`},
			"run `mstconfig -e -d 0000:03:00.0 q INTERNAL_CPU_MODEL INTERNAL_CPU_PAGE_SUPPLIER INTERNAL_CPU_ESWITCH_MANAGER INTERNAL_CPU_IB_VPORT0 INTERNAL_CPU_OFFLOAD_ENGINE` by hand"},
		"no -E- line": {"", "Segmentation fault\n", nil, "unclassified tool-error on 0000:03:00.0",
			[]string{"mstconfig failed (exit status 3) without printing an -E- line"}, "mstconfig -e -d 0000:03:00.0 q INTERNAL_CPU_MODEL"},
	} {
		t.Run(name, func(t *testing.T) {
			r := newModeRig(t, map[string]string{bdf: "a2d6:separated"})
			env := r.env()
			if tc.setup != nil {
				tc.setup(t, r, env)
			}
			r.failQuery(tc.stdout, tc.stderr)
			s, err := NewModeStep(env, &playbooks.ModeSpec{Want: "dpu"})
			if err != nil {
				t.Fatal(err)
			}
			res, p := stepProblem(t, s)
			if p.Object != "mode: "+bdf || !strings.Contains(res.Error, "query firmware config failed ("+tc.kind+")") ||
				!strings.Contains(res.Error, "mstconfig -e -d 0000:03:00.0 q INTERNAL_CPU_MODEL") {
				t.Errorf("object %q error %s", p.Object, res.Error)
			}
			for _, want := range tc.causeHas {
				if !strings.Contains(res.Cause, want) {
					t.Errorf("cause %q lacks %q", res.Cause, want)
				}
			}
			if !strings.Contains(res.Fix, tc.fixHas) {
				t.Errorf("fix %q lacks %q", res.Fix, tc.fixHas)
			}
			if w := r.writes(); len(w) != 0 {
				t.Errorf("writes %v", w)
			}
		})
	}
}

// The simulator answers any user: behind --fw-sim rig's uid is not a
// cause, the device the simulator does not hold is explained by its
// words alone (and `rig mode show` explains it the same way).
func TestFirmwareSimFailureIgnoresUID(t *testing.T) {
	ctx := context.Background()
	r := newModeRig(t, map[string]string{"0000:03:00.0": "a2d6:dpu"})
	writePCIFunction(t, r.h.Root, "0000:04:00.0", "15b3", "a2d6") // on PCI, not in the simulator
	bindDriver(t, r.h.Root, "0000:04:00.0", "mlx5_core")
	env := &provision.Env{Host: r.h, FirmwareSim: true, Geteuid: func() int { return 1000 }}
	s, err := NewModeStep(env, &playbooks.ModeSpec{Want: "dpu", Devices: []string{"0000:04:00.0"}})
	if err != nil {
		t.Fatal(err)
	}
	res, p := stepProblem(t, s)
	if !strings.Contains(res.Error, "open-failed on 0000:04:00.0") || strings.Contains(p.Cause(), "uid 1000") || !strings.Contains(p.Fix(), "lspci -s 0000:04:00.0") {
		t.Errorf("%s\ncause %q\nfix %q", res.Error, p.Cause(), p.Fix())
	}
	_, err = ShowModes(ctx, env, []string{"0000:04:00.0"})
	if sp, ok := provision.AsProblem(err); !ok || sp.Cause() != p.Cause() || sp.Fix() != p.Fix() {
		t.Errorf("show: %v", err)
	}
}

// The set's failure paths carry a cause and a fix too: an unclassified
// -E- line from the set, and a set that exits 0 without "Done!"; so does
// a query that exits 0 with output rig cannot read.
func TestFirmwareWriteAndOutputProblems(t *testing.T) {
	ctx := context.Background()
	for name, tc := range map[string]struct {
		out    string
		fail   bool
		errHas string
		fixHas string
	}{
		"set unknown": {"-E- TLV write refused by policy 7\n", true, "set firmware config failed (unclassified tool-error on 0000:03:00.0)",
			"run `mstconfig -y -d 0000:03:00.0 set INTERNAL_CPU_PAGE_SUPPLIER=ECPF INTERNAL_CPU_ESWITCH_MANAGER=ECPF INTERNAL_CPU_IB_VPORT0=ECPF INTERNAL_CPU_OFFLOAD_ENGINE=ENABLED` by hand"},
		"set no done": {"Applying... \n", false, "exited 0 but did not report success", "check Next Boot with `mstconfig -e -d 0000:03:00.0 q`"},
	} {
		r := newModeRig(t, map[string]string{"0000:03:00.0": "a2d6:nic"})
		plan, err := modeStepFor(t, r, "dpu").Check(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r.rec.Answer = func(name string, args []string) ([]byte, error, bool) {
			if len(args) < 4 || args[3] != "set" {
				return nil, nil, false
			}
			if !tc.fail {
				return []byte(tc.out), nil, true
			}
			return []byte(tc.out), &host.ToolError{Argv: append([]string{name}, args...), Stdout: tc.out, Err: errors.New("exit status 3")}, true
		}
		err = plan.Apply(ctx)
		p, ok := provision.AsProblem(err)
		if !ok || !strings.Contains(err.Error(), tc.errHas) || p.Cause() == "" || !strings.Contains(p.Fix(), tc.fixHas) {
			t.Errorf("%s: %v", name, err)
		}
	}
	r := newModeRig(t, map[string]string{"0000:03:00.0": "a2d6:dpu"})
	r.answerQuery("garbage the tool never prints\n", false)
	_, err := modeStepFor(t, r, "dpu").Check(ctx)
	if p, ok := provision.AsProblem(err); !ok || !strings.Contains(err.Error(), "`mstconfig -e -d 0000:03:00.0 q INTERNAL_CPU_MODEL") || !strings.Contains(p.Cause(), "exited 0") || !strings.Contains(p.Fix(), "by hand") {
		t.Errorf("output: %v", err)
	}
}

func removeFile(t *testing.T, r *modeRig, p string) {
	t.Helper()
	if err := os.Remove(filepath.Join(r.h.Root, p)); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, r *modeRig, p, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(r.h.Root, p)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.h.Root, p), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}
