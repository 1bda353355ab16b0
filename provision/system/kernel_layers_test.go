package system

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rig/internal/host"
	"rig/playbooks"
	"rig/provision"
	"rig/provision/steptest"
)

// dropIns is the GRUB and sysctl drop-ins' content ("-" for none).
func dropIns(t *testing.T, root string) string {
	t.Helper()
	var out []string
	for _, p := range []string{grubDropIn, sysctlDropIn} {
		b, err := os.ReadFile(filepath.Join(root, p))
		switch {
		case os.IsNotExist(err):
			out = append(out, p+": -")
		case err != nil:
			t.Fatal(err)
		default:
			out = append(out, p+":\n"+string(b))
		}
	}
	return strings.Join(out, "\n")
}

// Two playbooks with boot parameters and sysctls (one of them, iommu=pt,
// in both) brought up one after the other: the drop-ins hold both
// playbooks' settings (the second's write keeps the first's); a second up
// writes nothing and runs no update-grub. Brought down in either order:
// the drop-ins hold exactly the other playbook's settings while it is up
// (update-grub run), and after both downs the host is as before, live
// values too.
func TestKernelDropInsComposeTwoPlaybooks(t *testing.T) {
	specs := map[string]*playbooks.KernelSpec{
		"A": {Args: []string{"iommu=pt", "intel_iommu=on"}, Sysctl: map[string]string{"vm.swappiness": "10"}},
		"B": {Args: []string{"iommu=pt", "nosmt"}, Sysctl: map[string]string{"net.ipv4.tcp_rmem": "4096 131072 8388608"}},
	}
	alone := func(pb string) string { // the drop-ins with pb's settings only
		spec := specs[pb]
		var keys []string
		for k := range spec.Sysctl {
			keys = append(keys, k)
		}
		return grubDropIn + ":\n" + renderDropIn(spec.Args) + "\n" + sysctlDropIn + ":\n" + renderSysctl(keys, spec.Sysctl)
	}
	for _, order := range [][2]string{{"A", "B"}, {"B", "A"}} {
		t.Run("down "+order[0]+" then "+order[1], func(t *testing.T) {
			root := kernelRoot(t, "BOOT_IMAGE=/vmlinuz root=UUID=1234 ro quiet")
			rec := fakeUpdateGrub(t, root)
			h := &host.Host{Root: root, Exec: rec.Exec}
			live := func() string {
				return strings.Join(strings.Fields(readRoot(t, root, "/proc/sys/vm/swappiness")+" "+readRoot(t, root, "/proc/sys/net/ipv4/tcp_rmem")), " ")
			}
			before, beforeLive := dropIns(t, root), live()
			for _, pb := range []string{"A", "B"} {
				if rep := runKernel(t, h, specs[pb], provision.Env{Playbook: pb}); rep.Steps[0].Status != provision.StatusPendingReboot {
					t.Fatalf("up %s: %+v", pb, rep.Steps[0])
				}
			}
			want := grubDropIn + ":\n" + renderDropIn([]string{"iommu=pt", "intel_iommu=on", "nosmt"}) + "\n" +
				sysctlDropIn + ":\n" + renderSysctl([]string{"net.ipv4.tcp_rmem", "vm.swappiness"}, map[string]string{"vm.swappiness": "10", "net.ipv4.tcp_rmem": "4096 131072 8388608"})
			if got := dropIns(t, root); got != want {
				t.Fatalf("after both ups:\n%s\nwant\n%s", got, want)
			}
			if !strings.Contains(readRoot(t, root, "/boot/grub/grub.cfg"), "quiet iommu=pt intel_iommu=on nosmt\n") {
				t.Fatalf("grub.cfg:\n%s", readRoot(t, root, "/boot/grub/grub.cfg"))
			}
			rec.Reset()
			for _, pb := range []string{"A", "B"} {
				rep := runKernel(t, h, specs[pb], provision.Env{Playbook: pb})
				if st := rep.Steps[0]; len(st.Changes) != 0 || len(rec.Lines()) != 0 {
					t.Fatalf("second up of %s: %s %v ran %q", pb, st.Status, st.Changes, rec.Lines())
				}
			}
			down := func(pb string) {
				t.Helper()
				s, err := NewKernelStep(&provision.Env{Host: h, Playbook: pb}, specs[pb])
				if err != nil {
					t.Fatal(err)
				}
				if res := steptest.RunStep(t, s.(provision.Downer).Down(provision.DownOptions{})); res.Status == provision.StatusFailed {
					t.Fatalf("down %s: %s", pb, res.Error)
				}
			}
			rec.Reset()
			down(order[0])
			if got := dropIns(t, root); got != alone(order[1]) {
				t.Fatalf("after down %s:\n%s\nwant\n%s", order[0], got, alone(order[1]))
			}
			if got := rec.Lines(); len(got) != 1 || got[0] != "update-grub" {
				t.Fatalf("down %s ran %q, want update-grub", order[0], got)
			}
			down(order[1])
			if got := dropIns(t, root); got != before {
				t.Fatalf("after both downs:\n%s\nbefore:\n%s", got, before)
			}
			if got := live(); got != beforeLive {
				t.Fatalf("live sysctls %q, before %q", got, beforeLive)
			}
		})
	}
}

// A second playbook whose sysctl and boot parameter the drop-ins already
// hold from the first writes nothing and runs nothing: it records that it
// relies on them, so the first one's down leaves them in place.
func TestKernelDropInsRelied(t *testing.T) {
	root := kernelRoot(t, "BOOT_IMAGE=/vmlinuz root=UUID=1234 ro quiet")
	rec := fakeUpdateGrub(t, root)
	h := &host.Host{Root: root, Exec: rec.Exec}
	a := &playbooks.KernelSpec{Args: []string{"iommu=pt", "nosmt"}, Sysctl: map[string]string{"vm.swappiness": "10", "net.ipv4.tcp_rmem": "4096 131072 8388608"}}
	b := &playbooks.KernelSpec{Args: []string{"iommu=pt"}, Sysctl: map[string]string{"vm.swappiness": "10"}}
	runKernel(t, h, a, provision.Env{Playbook: "A"})
	rec.Reset()
	st := runKernel(t, h, b, provision.Env{Playbook: "B"}).Steps[0]
	if len(rec.Lines()) != 0 || len(st.Changes) != 3 || st.Changes[0].Object != "rig state" || st.Changes[1].Object != "rig state" || st.Changes[2].Object != "rig state" {
		t.Fatalf("B's up: %s %v ran %q", st.Status, st.Changes, rec.Lines())
	}
	if st := runKernel(t, h, b, provision.Env{Playbook: "B"}).Steps[0]; len(st.Changes) != 0 {
		t.Fatalf("B's second up: %v", st.Changes)
	}
	s, _ := NewKernelStep(&provision.Env{Host: h, Playbook: "A"}, a)
	if res := steptest.RunStep(t, s.(provision.Downer).Down(provision.DownOptions{})); res.Status == provision.StatusFailed {
		t.Fatalf("down A: %s", res.Error)
	}
	want := grubDropIn + ":\n" + renderDropIn([]string{"iommu=pt"}) + "\n" + sysctlDropIn + ":\n" + renderSysctl([]string{"vm.swappiness"}, b.Sysctl)
	if got := dropIns(t, root); got != want {
		t.Fatalf("after A's down:\n%s\nwant\n%s", got, want)
	}
	if got := readRoot(t, root, "/proc/sys/vm/swappiness"); got != "10\n" {
		t.Fatalf("swappiness %q after A's down, B still up", got)
	}
	s, _ = NewKernelStep(&provision.Env{Host: h, Playbook: "B"}, b)
	if res := steptest.RunStep(t, s.(provision.Downer).Down(provision.DownOptions{})); res.Status == provision.StatusFailed {
		t.Fatalf("down B: %s", res.Error)
	}
	if got := dropIns(t, root); got != grubDropIn+": -\n"+sysctlDropIn+": -" {
		t.Fatalf("after both downs:\n%s", got)
	}
	if got := readRoot(t, root, "/proc/sys/vm/swappiness"); got != "60\n" {
		t.Fatalf("swappiness %q after both downs", got)
	}
}

// rig down -p A writes the drop-ins with the settings of the playbooks
// still up, from their records: a record that would put there what the
// file does not hold now and A did not set (an edited state file: a
// core_pattern pipe, a boot parameter) is refused before any write, naming
// it; so is, in A's own record, a boot parameter the shell that reads the
// GRUB drop-in would interpret.
func TestKernelDownRefusesComposedAdds(t *testing.T) {
	a := &playbooks.KernelSpec{Args: []string{"iommu=pt"}, Sysctl: map[string]string{"vm.swappiness": "10"}}
	b := &playbooks.KernelSpec{Args: []string{"nosmt"}, Sysctl: map[string]string{"net.ipv4.tcp_rmem": "4096 131072 8388608"}}
	for _, c := range []struct {
		name, pb string
		edit     func(st *provision.RigState)
		want     string
	}{
		{"sysctl", "B", func(st *provision.RigState) { st.Kernel.SysctlFile["kernel.core_pattern"] = "|/tmp/x" }, "would put there kernel.core_pattern = |/tmp/x"},
		{"boot", "B", func(st *provision.RigState) { st.Kernel.BootArgs = append(st.Kernel.BootArgs, "init=/tmp/x") }, "would put there init=/tmp/x"},
		{"own", "A", func(st *provision.RigState) { st.Kernel.BootArgs = []string{"iommu=pt", "x=$(reboot)"} }, `kernel.bootArgs`},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := kernelRoot(t, "BOOT_IMAGE=/vmlinuz root=UUID=1234 ro quiet")
			rec := fakeUpdateGrub(t, root)
			h := &host.Host{Root: root, Exec: rec.Exec}
			runKernel(t, h, a, provision.Env{Playbook: "A"})
			runKernel(t, h, b, provision.Env{Playbook: "B"})
			if err := provision.UpdateState((&provision.Env{Host: h, Playbook: c.pb}).State(), c.edit); err != nil {
				t.Fatal(err)
			}
			files, swappiness := dropIns(t, root), readRoot(t, root, "/proc/sys/vm/swappiness")
			rec.Reset()
			s, _ := NewKernelStep(&provision.Env{Host: h, Playbook: "A"}, a)
			res := steptest.RunStep(t, s.(provision.Downer).Down(provision.DownOptions{}))
			if res.Status != provision.StatusFailed || !strings.Contains(res.Error, c.want) {
				t.Fatalf("down A: %s %q, want %q", res.Status, res.Error, c.want)
			}
			if dropIns(t, root) != files || readRoot(t, root, "/proc/sys/vm/swappiness") != swappiness || len(rec.Lines()) != 0 {
				t.Fatalf("down A wrote: %s ran %q", dropIns(t, root), rec.Lines())
			}
		})
	}
}
