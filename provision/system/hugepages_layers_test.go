package system

import (
	"context"
	"strings"
	"testing"

	"rig/hugepages"
	"rig/internal/testutil/hugetest"
	"rig/playbooks"
	"rig/provision"
)

// hpStepOf is hpStep recording as playbook name (rig's state keeps each
// playbook's records apart).
func hpStepOf(t *testing.T, k *hugetest.FakeKernel, name string, spec *playbooks.HugepagesSpec) *HugepagesStep {
	s := hpStep(t, k, spec)
	s.state = s.state.For(name)
	return s
}

// Two playbooks on one hugepage pool and one hugetlbfs mount, both
// persisted, brought up one after the other and down in either order (and
// up in the other order): the pool, the mount and the boot-time files end
// where they began; while both are up the tmpfiles.d drop-in holds the
// pool as the two compose (the larger minimum), and while one playbook is
// still up the pool keeps what that one set, the drop-in holds that one's
// count and its mount unit stays enabled. A second up changes nothing.
func TestHugepagesDownTwoPlaybooksAnyOrder(t *testing.T) {
	specA := &playbooks.HugepagesSpec{Pages: []playbooks.HugepageReservation{{Size: "2M", Count: 128}}, Mounts: []playbooks.HugetlbfsMount{{Path: "/dev/hugepages"}}, Persist: true}
	specB := &playbooks.HugepagesSpec{Pages: []playbooks.HugepageReservation{{Size: "2M", Count: 256}}, Mounts: []playbooks.HugetlbfsMount{{Path: "/dev/hugepages"}}, Persist: true}
	unit := "/etc/systemd/system/dev-hugepages.mount"
	files := []string{"/dev/hugepages", hugepages.TmpfilesPath, unit, "/etc/systemd/system/sysinit.target.wants/dev-hugepages.mount"}
	specs := map[string]*playbooks.HugepagesSpec{"A": specA, "B": specB}
	tmpfiles := func(k *hugetest.FakeKernel, pb string) string { // the drop-in with pb's pools alone
		return "file " + hugepages.TmpfilesPath + " " + hugepages.PersistFiles(hpStep(t, k, specs[pb]).res, nil)[0].Content + "\n"
	}
	for _, c := range []struct {
		up, down [2]string
		mid      string // the 2M pool while the second down's playbook is still up
	}{
		{[2]string{"A", "B"}, [2]string{"A", "B"}, "total=256"},
		{[2]string{"A", "B"}, [2]string{"B", "A"}, "total=128"},
		{[2]string{"B", "A"}, [2]string{"B", "A"}, "total=256"},
		{[2]string{"B", "A"}, [2]string{"A", "B"}, "total=256"},
	} {
		name := "up " + strings.Join(c.up[:], ",") + " down " + strings.Join(c.down[:], ",")
		t.Run(name, func(t *testing.T) {
			k := hugetest.NewFakeKernel(t, 2048, []int64{2048}, []int{0})
			k.SetPool(2048, 0, 16)
			before := hostSnapshot(t, k, files...)
			for _, pb := range c.up {
				if res := runOne(t, hpStepOf(t, k, pb, specs[pb]), provision.RunApply); res.Status == provision.StatusFailed {
					t.Fatalf("up %s: %s", pb, res.Error)
				}
			}
			if got := hostSnapshot(t, k, hugepages.TmpfilesPath); !strings.Contains(got, tmpfiles(k, "B")) {
				t.Fatalf("after both ups the drop-in is not B's 256 pages:\n%s", got)
			}
			for _, pb := range c.up {
				if res := runOne(t, hpStepOf(t, k, pb, specs[pb]), provision.RunApply); res.Status != provision.StatusOK || len(res.Changes) != 0 {
					t.Fatalf("second up of %s: %s %v", pb, res.Status, res.Changes)
				}
			}
			res := runOne(t, hpStepOf(t, k, c.down[0], specs[c.down[0]]).Down(provision.DownOptions{}), provision.RunApply)
			if res.Status == provision.StatusFailed {
				t.Fatalf("down %s: %s %s", c.down[0], res.Status, res.Error)
			}
			mid := hostSnapshot(t, k, files...)
			if !strings.Contains(mid, "mount /dev/hugepages") || !strings.Contains(mid, c.mid) || !strings.Contains(mid, tmpfiles(k, c.down[1])) || !strings.Contains(mid, "file "+unit) {
				t.Fatalf("after down %s, with %s still up:\n%s\nchanges %v", c.down[0], c.down[1], mid, res.Changes)
			}
			res = runOne(t, hpStepOf(t, k, c.down[1], specs[c.down[1]]).Down(provision.DownOptions{}), provision.RunApply)
			if res.Status == provision.StatusFailed {
				t.Fatalf("down %s: %s %s", c.down[1], res.Status, res.Error)
			}
			if got := hostSnapshot(t, k, files...); got != before {
				t.Fatalf("after both downs:\n%s\nbefore:\n%s", got, before)
			}
			for _, pb := range c.up {
				if st, err := provision.LoadState(hpStepOf(t, k, pb, specs[pb]).state); err != nil || st.Hugepages != nil {
					t.Fatalf("%s's record left: %+v %v", pb, st.Hugepages, err)
				}
			}
		})
	}
}

// restarter is a step whose plan restarts something (the ovs step's
// down restarting ovs-vswitchd).
type restarter struct{ done *bool }

func (restarter) Name() string { return "ovs" }
func (r restarter) Check(context.Context) (provision.Plan, error) {
	p := provision.Plan{}
	if !*r.done {
		p.Restarts = []string{"restart of ovs-vswitchd"}
		p.Add(func(context.Context) error { *r.done = true; return nil }, provision.Change{Object: "ovs-vswitchd", Action: "restart"})
	}
	return p, nil
}

// rig plan --down predicts what rig down does: pages in use now that an
// earlier step of the down restarts their holder are planned to go back
// after that restart (would-change, naming it), not a failure; without
// such a step, or in an apply where the holder still holds them, it is
// the failure it was.
func TestHugepagesPlanDownCountsOnEarlierRestart(t *testing.T) {
	k := hugetest.NewFakeKernel(t, 2048, []int64{2048}, []int{0})
	spec := &playbooks.HugepagesSpec{Pages: []playbooks.HugepageReservation{{Size: "2M", Count: 128}}}
	if res := runOne(t, hpStep(t, k, spec), provision.RunApply); res.Status != provision.StatusChanged {
		t.Fatalf("up: %s %s", res.Status, res.Error)
	}
	// ovs-vswitchd holds 64 of them
	k.Put("/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages", "64\n")
	k.Put("/sys/devices/system/node/node0/hugepages/hugepages-2048kB/free_hugepages", "64\n")
	run := func(mode provision.RunMode, steps ...provision.Step) provision.StepResult {
		rep, err := (&provision.Runner{Steps: steps}).Execute(context.Background(), mode, provision.Selection{})
		if err != nil {
			t.Fatal(err)
		}
		return rep.Steps[len(rep.Steps)-1]
	}
	down := hpStep(t, k, spec).Down(provision.DownOptions{})
	res := run(provision.RunPlan, restarter{new(bool)}, down)
	if res.Status != provision.StatusWouldChange || !strings.Contains(changeText(res.Changes), "set nr_hugepages (back to before rig) once the ovs step's restart of ovs-vswitchd frees the 64 pages in use now 128 -> 0") {
		t.Fatalf("plan --down after a restart: %s %s %v", res.Status, res.Error, res.Changes)
	}
	if res := run(provision.RunPlan, down); res.Status != provision.StatusFailed || !strings.Contains(res.Error, "would free pages in use (64 of 128)") {
		t.Fatalf("plan --down, nothing restarts first: %s %s", res.Status, res.Error)
	}
	k.ResetWrites()
	if res := run(provision.RunApply, restarter{new(bool)}, down); res.Status != provision.StatusFailed || !strings.Contains(res.Error, "would free pages in use") || len(k.Writes) != 0 {
		t.Fatalf("down, the holder still holds them after its restart: %s %s writes %q", res.Status, res.Error, k.Writes)
	}
}

func changeText(cs []provision.Change) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.String())
	}
	return strings.Join(out, "\n")
}

// rig down -p A writes the tmpfiles.d drop-in with the pools of the
// playbooks still up, from their records: a record that would put there a
// pool the file does not hold now and A does not reserve (an edited state
// file) is refused before any write, naming it.
func TestHugepagesDownRefusesComposedAdds(t *testing.T) {
	specA := &playbooks.HugepagesSpec{Pages: []playbooks.HugepageReservation{{Size: "2M", Count: 128}}, Persist: true}
	specB := &playbooks.HugepagesSpec{Pages: []playbooks.HugepageReservation{{Size: "2M", Count: 256}}, Persist: true}
	k := hugetest.NewFakeKernel(t, 2048, []int64{2048}, []int{0})
	for _, pb := range []string{"A", "B"} {
		if res := runOne(t, hpStepOf(t, k, pb, map[string]*playbooks.HugepagesSpec{"A": specA, "B": specB}[pb]), provision.RunApply); res.Status == provision.StatusFailed {
			t.Fatalf("up %s: %s", pb, res.Error)
		}
	}
	b := hpStepOf(t, k, "B", specB)
	if err := provision.UpdateState(b.state, func(st *provision.RigState) {
		st.Hugepages.Persist = append(st.Hugepages.Persist, provision.PersistPool{SizeKB: 2048, Node: 0, Count: 64})
	}); err != nil {
		t.Fatal(err)
	}
	before := hostSnapshot(t, k, hugepages.TmpfilesPath)
	res := runOne(t, hpStepOf(t, k, "A", specA).Down(provision.DownOptions{}), provision.RunApply)
	if res.Status != provision.StatusFailed || !strings.Contains(res.Error, "would put there node0 2048kB: 64") {
		t.Fatalf("down A: %s %q", res.Status, res.Error)
	}
	if got := hostSnapshot(t, k, hugepages.TmpfilesPath); got != before {
		t.Fatalf("down A wrote:\n%s\nbefore:\n%s", got, before)
	}
}
