package smartnic

import (
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"rig/internal/host"
	"rig/internal/testutil"
)

// TestRdmamapAgreesOnFixtures runs the real github.com/Mellanox/rdmamap
// against each fixture and compares it with rootMapper, the root-aware
// reader that stands in for it under --root. rdmamap reads fixed /sys
// paths, so one locked OS thread unshares its mount namespace, makes it a
// slave (nothing propagates back to the host) and binds the fixture's sys
// over /sys, as measured in lab-notes.md. The thread is never unlocked, so
// Go discards it (and the namespace) when the goroutine returns.
func TestPrivilegedRdmamapAgreesOnFixtures(t *testing.T) {
	testutil.RequirePrivileged(t) // CAP_SYS_ADMIN to unshare a mount namespace
	for _, name := range []string{"bf2-dpu-arm", "bf2-host", "bf3-dpu-arm", "cx6dx-host"} {
		t.Run(name, func(t *testing.T) {
			root, err := filepath.Abs(hostsDir + name)
			if err != nil {
				t.Fatal(err)
			}
			inv := scanFixture(t, name)
			m := rootMapper{&host.Host{Root: root}}
			type view struct {
				All   []string
				ByPCI map[string][]string
				ByAux map[string][]string
				Ports map[string][]string
			}
			want := view{ByPCI: map[string][]string{}, ByAux: map[string][]string{}, Ports: map[string][]string{}}
			for _, f := range inv.Functions {
				for _, d := range f.RDMA {
					want.All = append(want.All, d.Name)
				}
				want.ByPCI[f.BDF] = sorted(m.DevicesForPCI(f.BDF))
				for _, sf := range f.SFs {
					for _, d := range sf.RDMA {
						want.All = append(want.All, d.Name)
					}
					want.ByAux[sf.Name] = sorted(m.DevicesForAux(sf.Name))
				}
			}
			sort.Strings(want.All)
			for _, d := range want.All {
				want.Ports[d] = sorted(m.Ports(d))
			}
			type result struct {
				v   view
				err error
			}
			ch := make(chan result, 1)
			go func() {
				runtime.LockOSThread() // never unlocked: the thread dies with its namespace
				var r result
				defer func() { ch <- r }()
				if r.err = unix.Unshare(unix.CLONE_NEWNS); r.err != nil {
					return
				}
				if r.err = unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); r.err != nil {
					return
				}
				if r.err = unix.Mount(root+"/sys", "/sys", "", unix.MS_BIND|unix.MS_REC, ""); r.err != nil {
					return
				}
				r.v = view{All: sorted(rdmamapMapper{}.rdmaDeviceList()), ByPCI: map[string][]string{}, ByAux: map[string][]string{}, Ports: map[string][]string{}}
				for bdf := range want.ByPCI {
					r.v.ByPCI[bdf] = sorted(rdmamapMapper{}.DevicesForPCI(bdf))
				}
				for aux := range want.ByAux {
					r.v.ByAux[aux] = sorted(rdmamapMapper{}.DevicesForAux(aux))
				}
				for _, d := range r.v.All {
					r.v.Ports[d] = sorted(rdmamapMapper{}.Ports(d))
				}
			}()
			r := <-ch
			if r.err != nil {
				t.Fatalf("mount namespace: %v", r.err)
			}
			if !reflect.DeepEqual(r.v, want) {
				t.Errorf("rdmamap sees %+v\nroot reader sees %+v", r.v, want)
			}
			if len(want.All) == 0 {
				t.Error("fixture has no RDMA devices")
			}
			if strings.HasSuffix(name, "-dpu-arm") && len(want.ByAux) != 2 {
				t.Errorf("BlueField Arm fixture: SF RDMA devices %v, want 2 SFs", want.ByAux)
			}
		})
	}
	// The host's own /sys is untouched.
	if _, err := unix.Open("/sys/bus/pci/devices", unix.O_RDONLY, 0); err != nil {
		t.Errorf("host /sys after test: %v", err)
	}
}

func sorted(s []string) []string {
	out := append([]string{}, s...)
	sort.Strings(out)
	if out == nil {
		out = []string{}
	}
	return out
}
