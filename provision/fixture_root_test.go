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

// hugepages: the real hugetlbfs mount under a fixture root is refused by
// TestHugepagesRefusesRealMountUnderFixtureRoot (issue 8); nr_hugepages
// and persist files are written under the root itself (a fake kernel
// tree), never on this machine, so they need no refusal.
