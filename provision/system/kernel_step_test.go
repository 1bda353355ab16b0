package system

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"rig/internal/host"
	"rig/internal/testutil/fakeexec"
	"rig/playbooks"
	"rig/provision"
	"rig/provision/steptest"
)

// kernelRoot is a host root with what the kernel step reads: the running
// command line, meminfo's default page size, two sysctls (tcp_rmem
// tab-separated as the kernel prints it) and a grub.cfg whose default entry
// carries the distribution's parameters.
func kernelRoot(t *testing.T, cmdlineText string) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"proc/cmdline":               cmdlineText + "\n",
		"proc/meminfo":               "MemTotal:       24000000 kB\nHugepagesize:       2048 kB\n",
		"proc/sys/vm/swappiness":     "60\n",
		"proc/sys/net/ipv4/tcp_rmem": "4096\t131072\t6291456\n",
		"boot/grub/grub.cfg":         grubCfg("root=UUID=1234 ro quiet"),
	}
	for p, c := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// grubCfg is the part of a grub-mkconfig output the step reads: the first
// menuentry's linux line (tab-indented, as 10_linux writes it).
func grubCfg(args string) string {
	return "### BEGIN /etc/grub.d/10_linux ###\nmenuentry 'Debian GNU/Linux' {\n\tload_video\n" +
		"\tlinux\t/boot/vmlinuz-6.1.0-28-amd64 " + args + "\n\tinitrd\t/boot/initrd.img-6.1.0-28-amd64\n}\n"
}

// fakeUpdateGrub answers update-grub as grub-mkconfig would for the parts
// the step reads: the default entry gets the distribution's parameters
// plus the drop-in's.
func fakeUpdateGrub(t *testing.T, root string) *fakeexec.Recorder {
	rec := &fakeexec.Recorder{}
	rec.Answer = func(name string, args []string) ([]byte, error, bool) {
		if name != "update-grub" {
			return nil, nil, false
		}
		b, err := os.ReadFile(filepath.Join(root, grubDropIn))
		extra := ""
		if err == nil {
			toks, _ := parseDropIn(string(b))
			extra = " " + strings.Join(toks, " ")
		}
		if err := os.WriteFile(filepath.Join(root, "boot/grub/grub.cfg"), []byte(grubCfg("root=UUID=1234 ro quiet"+extra)), 0o644); err != nil {
			t.Fatal(err)
		}
		return []byte("Generating grub configuration file ...\ndone\n"), nil, true
	}
	return rec
}

// reboot makes the running command line what grub.cfg's default entry boots.
func reboot(t *testing.T, root string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "boot/grub/grub.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	args, _ := grubCfgLinuxArgs(string(b))
	line := "BOOT_IMAGE=/boot/vmlinuz-6.1.0-28-amd64 " + strings.Join(args, " ")
	if err := os.WriteFile(filepath.Join(root, "proc/cmdline"), []byte(line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func kernelSpec() *playbooks.KernelSpec {
	return &playbooks.KernelSpec{
		DefaultHugepagesz: "1G",
		Hugepages:         []playbooks.BootHugepages{{Size: "1G", Count: 8}, {Size: "2M", Count: 1024}},
		Args:              []string{"iommu=pt", "intel_iommu=on", "isolcpus=2-7"},
		Sysctl:            map[string]string{"vm.swappiness": "10", "net.ipv4.tcp_rmem": "4096 262144 16777216"},
	}
}

func runKernel(t *testing.T, h *host.Host, spec *playbooks.KernelSpec, env provision.Env) *provision.Report {
	t.Helper()
	env.Host = h
	s, err := NewKernelStep(&env, spec)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := (&provision.Runner{Steps: []provision.Step{s}}).Execute(context.Background(), provision.RunApply, provision.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func readRoot(t *testing.T, root, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, p))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestKernelApplyRebootApply: the first apply writes the drop-in, runs
// update-grub once and sets the sysctls, and is pending a reboot; a second
// apply before the reboot writes nothing and is still pending; after the
// (simulated) reboot the step is ok and writes nothing.
func TestKernelApplyRebootApply(t *testing.T) {
	root := kernelRoot(t, "BOOT_IMAGE=/boot/vmlinuz-6.1.0-28-amd64 root=UUID=1234 ro quiet")
	rec := fakeUpdateGrub(t, root)
	h := &host.Host{Root: root, Exec: rec.Exec}

	rep := runKernel(t, h, kernelSpec(), provision.Env{})
	st := rep.Steps[0]
	if st.Status != provision.StatusPendingReboot || !strings.Contains(st.Pending, "reboot required") || !strings.Contains(st.Pending, "hugepagesz=1G hugepages=8") {
		t.Fatalf("first apply: status %s pending %q err %v", st.Status, st.Pending, st.Err)
	}
	if want := []provision.Reset{provision.ResetHostReboot}; !reflect.DeepEqual(st.Resets, want) || !reflect.DeepEqual(rep.Summary.Resets, want) {
		t.Fatalf("first apply: resets %v, summary %v, want %v (a reboot, not a power cycle)", st.Resets, rep.Summary.Resets, want)
	}
	if got := rec.Lines(); !reflect.DeepEqual(got, []string{"update-grub"}) {
		t.Fatalf("first apply ran %q, want one update-grub", got)
	}
	wantTokens := []string{"default_hugepagesz=1G", "hugepagesz=1G", "hugepages=8", "hugepagesz=2M", "hugepages=1024", "iommu=pt", "intel_iommu=on", "isolcpus=2-7"}
	if got, ours := parseDropIn(readRoot(t, root, grubDropIn)); !ours || !reflect.DeepEqual(got, wantTokens) {
		t.Fatalf("drop-in tokens %q (ours %v), want %q", got, ours, wantTokens)
	}
	if got := readRoot(t, root, "proc/sys/vm/swappiness"); got != "10\n" {
		t.Errorf("swappiness %q", got)
	}
	if got := readRoot(t, root, "proc/sys/net/ipv4/tcp_rmem"); got != "4096 262144 16777216\n" {
		t.Errorf("tcp_rmem %q", got)
	}
	wantConf := "# Written by rig's kernel step (the sysctls of a rig playbook); change the playbook, not this file.\n" +
		"net.ipv4.tcp_rmem = 4096 262144 16777216\nvm.swappiness = 10\n"
	if got := readRoot(t, root, sysctlDropIn); got != wantConf {
		t.Errorf("%s:\n%s\nwant:\n%s", sysctlDropIn, got, wantConf)
	}

	before := rec.Lines()
	rep = runKernel(t, h, kernelSpec(), provision.Env{})
	if st := rep.Steps[0]; st.Status != provision.StatusPendingReboot || len(st.Changes) != 0 {
		t.Fatalf("second apply before reboot: status %s changes %v", st.Status, st.Changes)
	}
	if got := rec.Lines(); len(got) != len(before) {
		t.Fatalf("second apply ran %q", got[len(before):])
	}

	reboot(t, root)
	rep = runKernel(t, h, kernelSpec(), provision.Env{})
	if st := rep.Steps[0]; st.Status != provision.StatusOK || len(st.Changes) != 0 || st.Pending != "" {
		t.Fatalf("after reboot: status %s changes %v pending %q", st.Status, st.Changes, st.Pending)
	}
	if got := rec.Lines(); len(got) != len(before) {
		t.Fatalf("apply after reboot ran %q", got[len(before):])
	}
}

// TestKernelParamFromElsewhere: a wanted parameter already live (set in
// /etc/default/grub by someone) is not written again; only the rest go into
// the drop-in.
func TestKernelParamFromElsewhere(t *testing.T) {
	root := kernelRoot(t, "BOOT_IMAGE=/vmlinuz root=UUID=1234 ro iommu=pt quiet")
	rec := fakeUpdateGrub(t, root)
	spec := &playbooks.KernelSpec{Args: []string{"iommu=pt", "intel_iommu=on"}}
	rep := runKernel(t, &host.Host{Root: root, Exec: rec.Exec}, spec, provision.Env{})
	toks, _ := parseDropIn(readRoot(t, root, grubDropIn))
	if !reflect.DeepEqual(toks, []string{"intel_iommu=on"}) {
		t.Fatalf("drop-in %q, want only intel_iommu=on", toks)
	}
	if st := rep.Steps[0]; !strings.Contains(strings.Join(st.Notes, "\n"), "iommu=pt already on the running kernel's command line") {
		t.Errorf("notes %q", st.Notes)
	}
}

// TestKernelLastValueWins: iommu=off then iommu=pt on the line is pt (the
// kernel keeps the last), iommu=pt then iommu=off is not.
func TestKernelLastValueWins(t *testing.T) {
	for _, tc := range []struct {
		line string
		live bool
	}{{"iommu=off iommu=pt", true}, {"iommu=pt iommu=off", false}, {"quiet", false}} {
		c := parseCmdline(tc.line, 2048)
		if got := argItem("iommu=pt").live(c); got != tc.live {
			t.Errorf("%q: live %v, want %v", tc.line, got, tc.live)
		}
	}
	if !argItem("quiet").live(parseCmdline("ro quiet", 2048)) {
		t.Error("flag quiet not seen as live")
	}
}

// TestParseCmdlinePools follows the kernel's rules: hugepagesz= selects the
// size the next hugepages= counts; one before any hugepagesz= counts the
// default size (default_hugepagesz= wherever it is on the line, else the
// architecture's); quotes keep spaces.
func TestParseCmdlinePools(t *testing.T) {
	c := parseCmdline(`BOOT_IMAGE=/vmlinuz hugepages=16 default_hugepagesz=1G hugepagesz=2M hugepages=512 dyndbg="file x.c +p" hugepagesz=1G hugepages=4`, 2048)
	want := map[int64]int{1 << 20: 4, 2048: 512}
	if !reflect.DeepEqual(c.pools, want) || c.defaultKB != 1<<20 {
		t.Fatalf("pools %v default %d", c.pools, c.defaultKB)
	}
	if c.last["dyndbg"] != "file x.c +p" {
		t.Errorf("quoted value %q", c.last["dyndbg"])
	}
	c = parseCmdline("hugepages=16", 2048)
	if c.pools[2048] != 16 {
		t.Errorf("hugepages= without size: %v", c.pools)
	}
	if !defaultSizeItem(2048, "2M").live(parseCmdline("default_hugepagesz=2048k", 2048)) {
		t.Error("default_hugepagesz=2048k not 2M")
	}
	if defaultSizeItem(2048, "2M").live(parseCmdline("quiet", 2048)) {
		t.Error("an unset default_hugepagesz counted as set")
	}
	// a bare "--" ends the kernel's parameters: what follows is init's
	// (this VM: "rdinit=/process_api -- --firecracker-init --addr ...")
	c = parseCmdline(`quiet hugepages=16 rdinit=/process_api -- hugepages=99 iommu=pt --firecracker-init`, 2048)
	if c.pools[2048] != 16 || c.last["rdinit"] != "/process_api" {
		t.Errorf("before --: pools %v, rdinit %q", c.pools, c.last["rdinit"])
	}
	for _, k := range []string{"iommu", "--firecracker-init", "--"} {
		if _, ok := c.last[k]; ok {
			t.Errorf("%q after -- counted as a kernel parameter", k)
		}
	}
	if got := splitCmdline(`a "b -- c" --`); !reflect.DeepEqual(got, []string{"a", "b -- c"}) {
		t.Errorf("quoted -- and a trailing one: %q", got)
	}
}

// TestKernelStaleGrubCfg: the drop-in is right but grub.cfg lacks it (an
// update-grub failed after the write): only update-grub runs.
func TestKernelStaleGrubCfg(t *testing.T) {
	root := kernelRoot(t, "BOOT_IMAGE=/vmlinuz root=UUID=1234 ro quiet")
	rec := fakeUpdateGrub(t, root)
	spec := &playbooks.KernelSpec{Args: []string{"iommu=pt"}}
	if err := os.MkdirAll(filepath.Join(root, "etc/default/grub.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, grubDropIn), []byte(renderDropIn([]string{"iommu=pt"})), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := runKernel(t, &host.Host{Root: root, Exec: rec.Exec}, spec, provision.Env{})
	st := rep.Steps[0]
	if len(st.Changes) != 1 || !strings.Contains(st.Changes[0].Action, "lacks iommu=pt") {
		t.Fatalf("changes %v", st.Changes)
	}
	if got := rec.Lines(); !reflect.DeepEqual(got, []string{"update-grub"}) {
		t.Fatalf("ran %q", got)
	}
	if st.Status != provision.StatusPendingReboot {
		t.Errorf("status %s", st.Status)
	}
}

// TestKernelRemovedParams: parameters rig wrote and the playbook no longer
// lists leave the drop-in (the file goes when none is left).
func TestKernelRemovedParams(t *testing.T) {
	root := kernelRoot(t, "BOOT_IMAGE=/vmlinuz root=UUID=1234 ro quiet iommu=pt")
	rec := fakeUpdateGrub(t, root)
	if err := os.MkdirAll(filepath.Join(root, "etc/default/grub.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, grubDropIn), []byte(renderDropIn([]string{"iommu=pt"})), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := runKernel(t, &host.Host{Root: root, Exec: rec.Exec}, &playbooks.KernelSpec{Sysctl: map[string]string{"vm.swappiness": "60"}}, provision.Env{})
	if _, err := os.Stat(filepath.Join(root, grubDropIn)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("drop-in still there: %v (changes %v)", err, rep.Steps[0].Changes)
	}
	if got := rec.Lines(); !reflect.DeepEqual(got, []string{"update-grub"}) {
		t.Fatalf("ran %q", got)
	}
}

// TestKernelUnknownSysctlWritesNothing: a name the kernel does not have is
// an error at check, before the drop-in or any other sysctl is written.
func TestKernelUnknownSysctlWritesNothing(t *testing.T) {
	root := kernelRoot(t, "ro quiet")
	rec := fakeUpdateGrub(t, root)
	spec := &playbooks.KernelSpec{Args: []string{"iommu=pt"}, Sysctl: map[string]string{"vm.swappiness": "10", "net.bridge.bridge-nf-call-iptables": "0"}}
	rep := runKernel(t, &host.Host{Root: root, Exec: rec.Exec}, spec, provision.Env{})
	st := rep.Steps[0]
	if st.Status != provision.StatusFailed || !strings.Contains(st.Error, "net.bridge.bridge-nf-call-iptables") || !strings.Contains(st.Error, "module") {
		t.Fatalf("status %s error %q", st.Status, st.Error)
	}
	if len(rec.Lines()) != 0 || readRoot(t, root, "proc/sys/vm/swappiness") != "60\n" {
		t.Fatalf("wrote something: ran %q", rec.Lines())
	}
	if _, err := os.Stat(filepath.Join(root, grubDropIn)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("drop-in written")
	}
}

// TestKernelFixtureRootRefusesUpdateGrub: under --root the plan shows the
// boot parameters, and the apply refuses before any write.
func TestKernelFixtureRootRefusesUpdateGrub(t *testing.T) {
	root := kernelRoot(t, "ro quiet")
	rec := fakeUpdateGrub(t, root)
	rep := runKernel(t, &host.Host{Root: root, Exec: rec.Exec}, &playbooks.KernelSpec{Args: []string{"iommu=pt"}}, provision.Env{FixtureRoot: root})
	st := rep.Steps[0]
	if st.Status != provision.StatusFailed || !strings.Contains(st.Error, "refusing to run update-grub") {
		t.Fatalf("status %s error %q", st.Status, st.Error)
	}
	if len(rec.Lines()) != 0 {
		t.Fatalf("ran %q", rec.Lines())
	}
	if _, err := os.Stat(filepath.Join(root, grubDropIn)); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("drop-in written")
	}
}

// TestKernelUpdateGrubMissing: without update-grub the error says what
// reads the drop-in and how to get it.
func TestKernelUpdateGrubMissing(t *testing.T) {
	root := kernelRoot(t, "ro quiet")
	rec := &fakeexec.Recorder{} // every tool "not found"
	rep := runKernel(t, &host.Host{Root: root, Exec: rec.Exec}, &playbooks.KernelSpec{Args: []string{"iommu=pt"}}, provision.Env{})
	st := rep.Steps[0]
	if st.Status != provision.StatusFailed || !strings.Contains(st.Error, "update-grub is not installed") || !strings.Contains(st.Error, "grub2-common") {
		t.Fatalf("status %s error %q", st.Status, st.Error)
	}
}

func FuzzParseCmdline(f *testing.F) {
	f.Add(`BOOT_IMAGE=/vmlinuz hugepagesz=1G hugepages=4 default_hugepagesz=1G iommu=pt dyndbg="a b"`)
	f.Add(`hugepages=x hugepagesz= "unterminated`)
	f.Fuzz(func(t *testing.T, s string) {
		c := parseCmdline(s, 2048)
		for kb, n := range c.pools {
			if kb <= 0 || n < 0 && !strings.Contains(s, "-") {
				t.Fatalf("pool %d: %d from %q", kb, n, s)
			}
		}
		for _, tok := range splitCmdline(s) {
			if tok == "" || tok == "--" {
				t.Fatalf("token %q from %q", tok, s)
			}
		}
	})
}

// TestKernelDown: down after up removes the drop-in (and runs update-grub),
// removes the sysctl file rig created, puts each sysctl back to its value
// before up and forgets the record; a second down writes nothing.
func TestKernelDown(t *testing.T) {
	root := kernelRoot(t, "BOOT_IMAGE=/vmlinuz root=UUID=1234 ro quiet")
	rec := fakeUpdateGrub(t, root)
	h := &host.Host{Root: root, Exec: rec.Exec}
	snap := func() string {
		var b strings.Builder
		for _, p := range []string{grubDropIn, sysctlDropIn, "/proc/sys/vm/swappiness", "/proc/sys/net/ipv4/tcp_rmem", "/boot/grub/grub.cfg"} {
			c, err := os.ReadFile(filepath.Join(root, p))
			fmt.Fprintf(&b, "%s %v %q\n", p, err == nil, c)
		}
		return b.String()
	}
	before := snap()
	runKernel(t, h, kernelSpec(), provision.Env{})
	s, err := NewKernelStep(&provision.Env{Host: h}, kernelSpec())
	if err != nil {
		t.Fatal(err)
	}
	down := s.(provision.Downer).Down(provision.DownOptions{})
	n := len(rec.Lines())
	res := steptest.RunStep(t, down)
	if res.Status != provision.StatusChanged {
		t.Fatalf("down: %s %s", res.Status, res.Error)
	}
	if got := rec.Lines()[n:]; !reflect.DeepEqual(got, []string{"update-grub"}) {
		t.Errorf("down ran %q", got)
	}
	// the sysctl values come back normalized (fields joined by one space),
	// as sysctl(8) compares them
	want := strings.Replace(before, `"4096\t131072\t6291456\n"`, `"4096 131072 6291456\n"`, 1)
	if got := snap(); got != want {
		t.Fatalf("after down:\n%s\nbefore up:\n%s", got, want)
	}
	n = len(rec.Lines())
	if res := steptest.RunStep(t, down); res.Status != provision.StatusOK || len(rec.Lines()) != n {
		t.Fatalf("second down: %s %v ran %q", res.Status, res.Changes, rec.Lines()[n:])
	}
}

// A boot-time 1G pool the kernel did not fully grant: the command line has
// hugepagesz=1G hugepages=4 but the pool holds 2: the plan says "boot
// asked 4, kernel reserved 2" (whether the line came from rig's drop-in or
// from elsewhere), never "already on the command line"; fully granted,
// the usual note.
func TestKernelBootPoolNotGranted(t *testing.T) {
	for _, tc := range []struct {
		name     string
		reserved string
		want     string
		not      string
	}{
		{"short", "2\n", "boot asked 4, kernel reserved 2 (/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages is 2)", "already on the running kernel's command line"},
		{"granted", "4\n", "hugepagesz=1G hugepages=4 already on the running kernel's command line", "boot asked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := kernelRoot(t, "BOOT_IMAGE=/vmlinuz root=UUID=1234 ro default_hugepagesz=1G hugepagesz=1G hugepages=4 quiet")
			p := filepath.Join(root, "sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(tc.reserved), 0o644); err != nil {
				t.Fatal(err)
			}
			rec := fakeUpdateGrub(t, root)
			spec := &playbooks.KernelSpec{Hugepages: []playbooks.BootHugepages{{Size: "1G", Count: 4}}}
			rep := runKernel(t, &host.Host{Root: root, Exec: rec.Exec}, spec, provision.Env{})
			notes := strings.Join(rep.Steps[0].Notes, "\n")
			if !strings.Contains(notes, tc.want) || strings.Contains(notes, tc.not) {
				t.Fatalf("notes:\n%s\nwant %q, not %q", notes, tc.want, tc.not)
			}
		})
	}
}

// Two playbooks set one sysctl (A: 60 -> 10, then B: 10 -> 5) and write
// rig's sysctl drop-in: while both are up the drop-in holds B's value, as
// live (B's plan says it replaces A's); brought down in either order, the
// live value and the drop-in end as before the first up; while one is
// still up, the live value and the drop-in are that one's.
func TestKernelDownTwoPlaybooksAnyOrder(t *testing.T) {
	specs := map[string]*playbooks.KernelSpec{"A": {Sysctl: map[string]string{"vm.swappiness": "10"}}, "B": {Sysctl: map[string]string{"vm.swappiness": "5"}}}
	for _, order := range [][2]string{{"A", "B"}, {"B", "A"}} {
		t.Run("down "+order[0]+" then "+order[1], func(t *testing.T) {
			root := kernelRoot(t, "BOOT_IMAGE=/vmlinuz root=UUID=1234 ro quiet")
			h := &host.Host{Root: root, Exec: fakeUpdateGrub(t, root).Exec}
			snap := func() string {
				_, err := os.Stat(filepath.Join(root, sysctlDropIn))
				return fmt.Sprintf("swappiness %q drop-in %v", readRoot(t, root, "/proc/sys/vm/swappiness"), err == nil)
			}
			before := snap()
			for _, pb := range []string{"A", "B"} {
				if rep := runKernel(t, h, specs[pb], provision.Env{Playbook: pb}); rep.Steps[0].Status != provision.StatusChanged {
					t.Fatalf("up %s: %+v", pb, rep.Steps[0])
				} else if note := "sysctl vm.swappiness: playbook A's 10 is replaced in /etc/sysctl.d/90-rig.conf by this playbook's 5 while both are up"; pb == "B" && !strings.Contains(strings.Join(rep.Steps[0].Notes, "\n"), note) {
					t.Fatalf("B's up notes %q, want %q", rep.Steps[0].Notes, note)
				}
			}
			if got := readRoot(t, root, sysctlDropIn); got != renderSysctl([]string{"vm.swappiness"}, specs["B"].Sysctl) {
				t.Fatalf("drop-in with both up:\n%s", got)
			}
			down := func(pb string) {
				t.Helper()
				s, err := NewKernelStep(&provision.Env{Host: h, Playbook: pb}, specs[pb])
				if err != nil {
					t.Fatal(err)
				}
				if res := steptest.RunStep(t, s.(provision.Downer).Down(provision.DownOptions{})); res.Status != provision.StatusChanged {
					t.Fatalf("down %s: %s %s", pb, res.Status, res.Error)
				}
			}
			down(order[0])
			if want := map[string]string{"A": "5\n", "B": "10\n"}[order[0]]; readRoot(t, root, "/proc/sys/vm/swappiness") != want {
				t.Fatalf("after down %s: swappiness %q, want %q", order[0], readRoot(t, root, "/proc/sys/vm/swappiness"), want)
			}
			if got := readRoot(t, root, sysctlDropIn); got != renderSysctl([]string{"vm.swappiness"}, specs[order[1]].Sysctl) {
				t.Fatalf("drop-in after down %s:\n%s", order[0], got)
			}
			down(order[1])
			if got := snap(); got != before {
				t.Fatalf("after both downs %s, before %s", got, before)
			}
		})
	}
}
