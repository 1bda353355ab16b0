package card

import (
	"fmt"
	"strings"
	"testing"

	"rig/playbooks"
	"rig/provision"
	"rig/provision/steptest"
)

// Two playbooks set firmware parameters of one card (NUM_OF_VFS 8 and
// LINK_TYPE_P1 ETH before), brought up one after the other and down
// --firmware in either order, with a power cycle after each: with the same
// value (the second relies on the first's set: it records that and writes
// nothing) and with another one: the card's Next Boot values end where
// they began, and while one playbook is still up they keep what that one
// set.
func TestFirmwareDownTwoPlaybooksAnyOrder(t *testing.T) {
	a := playbooks.FirmwareDevice{Device: "*", Parameters: map[string]string{"NUM_OF_VFS": "16", "LINK_TYPE_P1": "IB"}}
	cases := map[string]map[string]playbooks.FirmwareDevice{
		"same":  {"A": a, "B": {Device: "0000:03:00.0", Parameters: map[string]string{"NUM_OF_VFS": "16"}}},
		"other": {"A": a, "B": {Device: "*", Parameters: map[string]string{"NUM_OF_VFS": "4"}}},
	}
	const bdf = "0000:03:00.0"
	for _, name := range []string{"same", "other"} {
		for _, order := range [][2]string{{"A", "B"}, {"B", "A"}} {
			t.Run(name+" down "+order[0]+","+order[1], func(t *testing.T) {
				r := newModeRig(t, map[string]string{bdf: "a2d6:dpu"})
				step := func(pb string) provision.Step {
					spec := &playbooks.FirmwareSpec{Devices: []playbooks.FirmwareDevice{cases[name][pb]}}
					if errs := spec.Validate(); len(errs) > 0 {
						t.Fatal(errs)
					}
					env := r.env()
					env.Playbook = pb
					s, err := NewFirmwareStep(env, spec)
					if err != nil {
						t.Fatal(err)
					}
					return s
				}
				snap := func() string {
					st, err := r.sim.Load()
					if err != nil {
						t.Fatal(err)
					}
					p := st.Devices[bdf].Params
					return fmt.Sprintf("NUM_OF_VFS=%v LINK_TYPE_P1=%v", p["NUM_OF_VFS"].Next, p["LINK_TYPE_P1"].Next)
				}
				cycle := func() {
					if _, err := r.sim.PowerCycle(); err != nil {
						t.Fatal(err)
					}
					r.reset()
				}
				before := snap()
				up := map[string]string{}
				for _, pb := range []string{"A", "B"} {
					if res := steptest.RunStep(t, step(pb)); res.Status == provision.StatusFailed {
						t.Fatalf("up %s: %s", pb, res.Error)
					}
					up[pb] = snap()
					if pb == "B" && name == "same" && len(r.writes()) != 0 {
						t.Fatalf("B's up wrote: %q", r.writes())
					}
					cycle()
				}
				if name == "same" {
					res := steptest.RunStep(t, step("B"))
					if res.Status != provision.StatusOK || len(r.writes()) != 0 {
						t.Fatalf("B's second up: %s %v writes %q", res.Status, res.Changes, r.writes())
					}
				}
				down := func(pb string) {
					t.Helper()
					for i := 0; i < 2; i++ { // restore (pending a power cycle), then forget
						res := steptest.RunStep(t, step(pb).(provision.Downer).Down(provision.DownOptions{Firmware: true}))
						if res.Status == provision.StatusFailed {
							t.Fatalf("down %s: %s", pb, res.Error)
						}
						cycle()
					}
				}
				down(order[0])
				want := up[order[1]]
				if order[0] == "A" { // A's LINK_TYPE_P1 (B sets none) is back to ETH(2)
					want = strings.Replace(up["B"], "LINK_TYPE_P1=1", "LINK_TYPE_P1=2", 1)
				}
				if got := snap(); got != want {
					t.Fatalf("after down %s, with %s still up: %s, want %s", order[0], order[1], got, want)
				}
				down(order[1])
				if got := snap(); got != before {
					t.Fatalf("after both downs %s, before %s", got, before)
				}
				for _, pb := range []string{"A", "B"} {
					env := r.env()
					env.Playbook = pb
					if st, err := provision.LoadState(env.State()); err != nil || st.Firmware != nil {
						t.Fatalf("%s's records left: %v %v", pb, st.Firmware, err)
					}
				}
			})
		}
	}
}
