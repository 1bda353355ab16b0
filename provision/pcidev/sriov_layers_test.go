package pcidev

import (
	"fmt"
	"testing"

	"rig/playbooks"
	"rig/provision"
	"rig/provision/steptest"
)

// Two playbooks on one PF (2 legacy VFs before), brought up one after the
// other and down in either order: with the same settings (4 VFs in
// switchdev: the second relies on the first's, records that and writes
// nothing) and with others (the second asks 6 VFs and no mode): the PF
// ends where it began, and while one playbook is still up it keeps what
// that one set.
func TestSRIOVDownTwoPlaybooksAnyOrder(t *testing.T) {
	a := []playbooks.SRIOVPF{{PF: "enp59s0f0np0", NumVFs: intp(4), Eswitch: "switchdev"}}
	cases := map[string]map[string][]playbooks.SRIOVPF{
		"same":  {"A": a, "B": {{PF: "0000:3b:00.0", NumVFs: intp(4), Eswitch: "switchdev"}}},
		"other": {"A": a, "B": {{PF: "enp59s0f0np0", NumVFs: intp(6)}}},
	}
	for _, name := range []string{"same", "other"} {
		for _, order := range [][2]string{{"A", "B"}, {"B", "A"}} {
			t.Run(name+" down "+order[0]+","+order[1], func(t *testing.T) {
				k := &sriovKernel{t: t, root: steptest.CopyHostRoot(t, "cx6dx-host"), mode: "legacy"}
				snap := func() string { return fmt.Sprintf("%d VFs, %s", k.numvfs(), k.mode) }
				step := func(pb string) *sriovStep {
					s := sriovStepFor(t, k, cases[name][pb], "")
					s.state = s.state.For(pb)
					return s
				}
				before := snap()
				up := map[string]string{}
				for _, pb := range []string{"A", "B"} {
					if res := steptest.RunStep(t, step(pb)); res.Status != provision.StatusChanged {
						t.Fatalf("up %s: %s %s", pb, res.Status, res.Error)
					}
					up[pb] = snap()
				}
				if name == "same" {
					st, err := provision.LoadState(step("B").state)
					if want := []provision.SRIOVRecord{{BDF: "0000:3b:00.0", NumVFs: 4, Eswitch: "switchdev"}}; err != nil || fmt.Sprint(st.SRIOV) != fmt.Sprint(want) {
						t.Fatalf("B's records %+v %v", st.SRIOV, err)
					}
					if len(k.writes) != 2 || len(k.sets) != 1 { // A's: numvfs 0, switchdev, numvfs 4
						t.Fatalf("B's up wrote: writes %q sets %q", k.writes, k.sets)
					}
					k.writes, k.sets = nil, nil
					if res := steptest.RunStep(t, step("B")); res.Status != provision.StatusOK || len(k.writes)+len(k.sets) != 0 {
						t.Fatalf("B's second up: %s %v writes %q sets %q", res.Status, res.Changes, k.writes, k.sets)
					}
				}
				res := steptest.RunStep(t, step(order[0]).Down(provision.DownOptions{}))
				if res.Status == provision.StatusFailed {
					t.Fatalf("down %s: %s", order[0], res.Error)
				}
				want := up[order[1]] // what that playbook left at its up (B, after A)
				if got := snap(); got != want {
					t.Fatalf("after down %s, with %s still up: %s, want %s\nchanges %v", order[0], order[1], got, want, res.Changes)
				}
				if res := steptest.RunStep(t, step(order[1]).Down(provision.DownOptions{})); res.Status == provision.StatusFailed {
					t.Fatalf("down %s: %s", order[1], res.Error)
				}
				if got := snap(); got != before {
					t.Fatalf("after both downs %s, before %s", got, before)
				}
				for _, pb := range []string{"A", "B"} {
					if st, err := provision.LoadState(step(pb).state); err != nil || len(st.SRIOV) != 0 {
						t.Fatalf("%s's records left: %+v %v", pb, st.SRIOV, err)
					}
				}
			})
		}
	}
}
