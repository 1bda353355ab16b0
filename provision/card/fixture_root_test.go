package card

import (
	"context"
	"strings"
	"testing"

	"rig/playbooks"
	"rig/provision"
	"rig/provision/steptest"
)

// Item 7 of issue 11: --root is for read-only fixture work. Each write
// that would land on this machine while the root is a fixture is planned
// (shown), and the apply refuses before its first write.

// mst start under a fixture root loads modules on this machine.
func TestMSTFixtureRootRefusesStart(t *testing.T) {
	h, rec := mstHost(t, "bf2-host", []string{"mst", "mlxconfig"}, []string{"mt41686_pciconf0"})
	st, _ := NewMSTStep(&provision.Env{Host: h, FixtureRoot: h.Root}, &playbooks.MSTSpec{MinDevices: 1})
	plan, err := st.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	steptest.RefusedPlan(t, plan, "would load MFT's kernel modules")
	rec.Reset()
	if res := steptest.RunStepOnce(t, st, provision.RunApply); res.Status != provision.StatusFailed || !strings.Contains(res.Error, "refused: --root") {
		t.Fatalf("apply: %+v", res)
	}
	if w := writesOf(callStrings(rec.Calls())); len(w) != 0 {
		t.Fatalf("apply ran %q", w)
	}
}

func callStrings(calls [][]string) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = strings.Join(c, " ")
	}
	return out
}

// mode under a fixture root writes real firmware unless the tools are the
// simulator (--fw-sim): refused without it, allowed with it.
func TestModeFixtureRootRefusesRealFirmware(t *testing.T) {
	for _, sim := range []bool{false, true} {
		r := newModeRig(t, map[string]string{"0000:03:00.0": "a2d6:separated"})
		s, err := NewModeStep(&provision.Env{Host: r.h, FixtureRoot: r.h.Root, FirmwareSim: sim}, &playbooks.ModeSpec{Want: "dpu"})
		if err != nil {
			t.Fatal(err)
		}
		plan, err := s.Check(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		r.reset()
		res := steptest.RunStepOnce(t, s, provision.RunApply)
		if sim {
			if res.Status != provision.StatusPendingReboot || len(r.writes()) != 1 {
				t.Fatalf("with the simulator: %+v, writes %q", res, r.writes())
			}
			continue
		}
		steptest.RefusedPlan(t, plan, "would run mstconfig set on this machine's firmware")
		if res.Status != provision.StatusFailed || !strings.Contains(res.Fix, "--fw-sim") || len(r.writes()) != 0 {
			t.Fatalf("without the simulator: %+v, writes %q", res, r.writes())
		}
	}
}
