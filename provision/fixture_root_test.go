package provision

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rig/playbooks"
)

// Item 7 of issue 11: --root is for read-only fixture work. Each write
// that would land on this machine while the root is a fixture is planned
// (shown), and the apply refuses before its first write.

// refusedPlan checks a plan whose ops are all refused, naming what, and
// that says so in its notes (what rig plan shows).
func refusedPlan(t *testing.T, p Plan, want string) {
	t.Helper()
	if len(p.Ops) == 0 {
		t.Fatal("no ops planned")
	}
	if notes := strings.Join(p.Notes, "\n"); !strings.Contains(notes, "apply refuses") {
		t.Errorf("plan notes do not show the refusal: %q", p.Notes)
	}
	for _, op := range p.Ops {
		if op.Refused == nil || !strings.Contains(op.Refused.Error(), want) {
			t.Fatalf("op %v: refused %v, want %q", op.Changes, op.Refused, want)
		}
		if pr, ok := AsProblem(op.Refused); !ok || pr.Cause() == "" || pr.Fix() == "" {
			t.Fatalf("refusal without cause/fix: %v", op.Refused)
		}
	}
}

// rdma under a fixture root without --netns: setting the admin-down
// netdev up would be netlink on this machine.
func TestRDMAFixtureRootRefusesLinkUp(t *testing.T) {
	root := copyHostRoot(t, "cx6dx-host")
	flags := filepath.Join(root, "sys/class/net/enp59s0f1np1/flags")
	before, _ := os.ReadFile(flags)
	s, rec := rdmaStepOn(t, root, &playbooks.RDMASpec{Ports: []playbooks.RDMAPortSpec{{Netdev: "enp59s0f1np1"}}}, nil)
	plan, err := s.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	refusedPlan(t, plan, "setting netdev enp59s0f1np1 up would be a netlink write on this machine")
	if !strings.Contains(strings.Join(plan.Notes, "\n"), "apply refuses (give --netns") {
		t.Errorf("notes %q", plan.Notes)
	}
	res := runStepOnce(t, s, RunApply)
	if res.Status != StatusFailed || res.Phase != PhaseApply || !strings.Contains(res.Error, "refused: host root") || res.Fix == "" {
		t.Fatalf("apply: %+v", res)
	}
	if after, _ := os.ReadFile(flags); string(after) != string(before) || len(rec.Calls()) != 0 {
		t.Fatalf("apply wrote: flags %q -> %q, calls %q", before, after, rec.Calls())
	}
}

// mst start under a fixture root loads modules on this machine.
func TestMSTFixtureRootRefusesStart(t *testing.T) {
	h, rec := mstHost(t, "bf2-host", []string{"mst", "mlxconfig"}, []string{"mt41686_pciconf0"})
	st, _ := NewMSTStep(&Env{Host: h, FixtureRoot: h.Root}, &playbooks.MSTSpec{MinDevices: 1})
	plan, err := st.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	refusedPlan(t, plan, "would load MFT's kernel modules")
	rec.Reset()
	if res := runStepOnce(t, st, RunApply); res.Status != StatusFailed || !strings.Contains(res.Error, "refused: --root") {
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
		s, err := NewModeStep(&Env{Host: r.h, FixtureRoot: r.h.Root, FirmwareSim: sim}, &playbooks.ModeSpec{Want: "dpu"})
		if err != nil {
			t.Fatal(err)
		}
		plan, err := s.Check(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		r.reset()
		res := runStepOnce(t, s, RunApply)
		if sim {
			if res.Status != StatusPendingReboot || len(r.writes()) != 1 {
				t.Fatalf("with the simulator: %+v, writes %q", res, r.writes())
			}
			continue
		}
		refusedPlan(t, plan, "would run mstconfig set on this machine's firmware")
		if res.Status != StatusFailed || !strings.Contains(res.Fix, "--fw-sim") || len(r.writes()) != 0 {
			t.Fatalf("without the simulator: %+v, writes %q", res, r.writes())
		}
	}
}

// hugepages: the real hugetlbfs mount under a fixture root is refused by
// TestHugepagesRefusesRealMountUnderFixtureRoot (issue 8); nr_hugepages
// and persist files are written under the root itself (a fake kernel
// tree), never on this machine, so they need no refusal.
