package system

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rig/playbooks"
	"rig/provision"
	"rig/provision/steptest"
)

// Item 7 of issue 11: --root is for read-only fixture work. Each write
// that would land on this machine while the root is a fixture is planned
// (shown), and the apply refuses before its first write.

// rdma under a fixture root without --netns: setting the admin-down
// netdev up would be netlink on this machine.
func TestRDMAFixtureRootRefusesLinkUp(t *testing.T) {
	root := steptest.CopyHostRoot(t, "cx6dx-host")
	flags := filepath.Join(root, "sys/class/net/enp59s0f1np1/flags")
	before, _ := os.ReadFile(flags)
	s, rec := rdmaStepOn(t, root, &playbooks.RDMASpec{Ports: []playbooks.RDMAPortSpec{{Netdev: "enp59s0f1np1"}}}, nil)
	plan, err := s.Check(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	steptest.RefusedPlan(t, plan, "setting netdev enp59s0f1np1 up would be a netlink write on this machine")
	if !strings.Contains(strings.Join(plan.Notes, "\n"), "apply refuses (give --netns") {
		t.Errorf("notes %q", plan.Notes)
	}
	res := steptest.RunStepOnce(t, s, provision.RunApply)
	if res.Status != provision.StatusFailed || res.Phase != provision.PhaseApply || !strings.Contains(res.Error, "refused: host root") || res.Fix == "" {
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
