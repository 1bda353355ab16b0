package pcidev

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"rig/playbooks"
	"rig/provision"
	"rig/provision/steptest"
)

// Two playbooks bind one function, brought up one after the other and
// down in either order, with the same driver (the second relies on the
// first's bind: it records that and writes nothing) and with another one
// (the second rebinds it): the function ends where it began, and while one
// playbook is still up it keeps that one's driver.
func TestBindDownTwoPlaybooksAnyOrder(t *testing.T) {
	specs := map[string]map[string]*playbooks.BindSpec{
		"same driver": {
			"A": {Devices: []string{"ens5"}},
			"B": {Devices: []string{"0000:00:04.0"}},
		},
		"other driver": {
			"A": {Devices: []string{"ens5"}},
			"B": {Driver: "uio_pci_generic", Devices: []string{"ens5"}},
		},
	}
	for _, sp := range []string{"same driver", "other driver"} {
		for _, order := range [][2]string{{"A", "B"}, {"B", "A"}} {
			t.Run(sp+" down "+order[0]+","+order[1], func(t *testing.T) {
				root := bindRoot(t)
				os.MkdirAll(filepath.Join(root, "sys/bus/pci/drivers/uio_pci_generic"), 0o755)
				before := bindSnapshot(t, root)
				step := func(pb string) *bindStep {
					s, _, _ := bindStepFor(t, root, specs[sp][pb], "")
					s.state = s.state.For(pb)
					return s
				}
				for _, pb := range []string{"A", "B"} {
					if res := steptest.RunStep(t, step(pb)); res.Status != provision.StatusChanged {
						t.Fatalf("up %s: %s %s", pb, res.Status, res.Error)
					}
				}
				if sp == "same driver" { // B relies on A's bind: a record, no write
					st, err := provision.LoadState(step("B").state)
					want := []provision.BoundDevice{{BDF: "0000:00:04.0", Netdev: "ens5", Original: "vfio-pci", Driver: "vfio-pci"}}
					if err != nil || !reflect.DeepEqual(st.Bound, want) {
						t.Fatalf("B's records %+v %v", st.Bound, err)
					}
					s, k, _ := bindStepFor(t, root, specs[sp]["B"], "")
					s.state = s.state.For("B")
					if res := steptest.RunStep(t, s); res.Status != provision.StatusOK || len(k.writes) != 0 {
						t.Fatalf("B's second up: %s %v writes %q", res.Status, res.Changes, k.writes)
					}
				}
				s := step(order[0])
				res := steptest.RunStep(t, s.Down(provision.DownOptions{}))
				if res.Status == provision.StatusFailed {
					t.Fatalf("down %s: %s", order[0], res.Error)
				}
				mid := bindSnapshot(t, root)
				if want := "driver=../../../bus/pci/drivers/" + specs[sp][order[1]].DriverName() + " "; !strings.HasPrefix(mid, want) {
					t.Fatalf("after down %s, with %s still up: %s, want %s...\nchanges %v", order[0], order[1], mid, want, res.Changes)
				}
				if res := steptest.RunStep(t, step(order[1]).Down(provision.DownOptions{})); res.Status == provision.StatusFailed {
					t.Fatalf("down %s: %s", order[1], res.Error)
				}
				if got := bindSnapshot(t, root); got != before {
					t.Fatalf("after both downs %s, before %s", got, before)
				}
				for _, pb := range []string{"A", "B"} {
					if st, err := provision.LoadState(step(pb).state); err != nil || len(st.Bound) != 0 {
						t.Fatalf("%s's records left: %+v %v", pb, st.Bound, err)
					}
				}
			})
		}
	}
}
