package system

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rig/hugepages"
	"rig/internal/host"
	"rig/internal/testutil"
	"rig/internal/testutil/fakeexec"
	"rig/internal/testutil/hugetest"
	"rig/playbooks"
	"rig/provision"
	"rig/provision/steptest"
)

// execute runs the steps as rig down does (one runner), in mode.
func execute(t *testing.T, mode provision.RunMode, steps ...provision.Step) *provision.Report {
	t.Helper()
	rep, err := (&provision.Runner{Steps: steps}).Execute(context.Background(), mode, provision.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func fileIs(t *testing.T, p, want string) {
	t.Helper()
	if b, err := os.ReadFile(p); err != nil || string(b) != want {
		t.Fatalf("%s now %q (%v), want %q", p, b, err, want)
	}
}

// kernelDownOn is the kernel step of spec on a tree root whose /etc holds
// a passwd and a shadow file, as rig down builds it, with every tool run
// recorded.
func kernelDownOn(t *testing.T, root string, spec *playbooks.KernelSpec) (provision.Step, *fakeexec.Recorder, string) {
	t.Helper()
	rec := fakeUpdateGrub(t, root)
	h := &host.Host{Root: root, Exec: rec.Exec}
	env := &provision.Env{Host: h}
	s, err := NewKernelStep(env, spec)
	if err != nil {
		t.Fatal(err)
	}
	return s.(provision.Downer).Down(provision.DownOptions{}), rec, env.State().Path
}

// TestDownRefusesFileRecordsOutsideTheStep replays the attacks on an edited
// state file in a host tree: a kernel or hugepages file record that names
// /etc/passwd with content (down would overwrite it), one that says
// /etc/shadow did not exist (down would delete it). rig down and rig plan
// --down refuse each record, naming the state file, the field and the fix;
// no file changes and no tool runs.
func TestDownRefusesFileRecordsOutsideTheStep(t *testing.T) {
	const passwd, shadow = "root:x:0:0:root:/root:/bin/bash\n", "root:$y$j9T$secret:19000:0:99999:7:::\n"
	cases := []struct {
		name, record, field, path string
	}{
		{"kernel overwrites /etc/passwd", `"kernel": {"files": [{"path": "/etc/passwd", "existed": true, "content": "root::0:0::/root:/bin/sh\n"}]}`, "kernel.files[0].path", "/etc/passwd"},
		{"kernel deletes /etc/shadow", `"kernel": {"files": [{"path": "/etc/shadow", "existed": false}]}`, "kernel.files[0].path", "/etc/shadow"},
		{"kernel path through ..", `"kernel": {"files": [{"path": "/etc/sysctl.d/../passwd", "existed": true, "content": "x"}]}`, "kernel.files[0].path", "/etc/sysctl.d/../passwd"},
		{"kernel drop-in as a link", `"kernel": {"files": [{"path": "/etc/sysctl.d/90-rig.conf", "existed": true, "link": true, "content": "/etc/passwd"}]}`, "kernel.files[0].link", "/etc/sysctl.d/90-rig.conf"},
		{"kernel sysctl the playbook does not set", `"kernel": {"sysctl": {"kernel.core_pattern": "|/tmp/x"}}`, `kernel.sysctl["kernel.core_pattern"]`, "vm.swappiness"},
		{"kernel sysctl value with a newline", `"kernel": {"sysctl": {"vm.swappiness": "60\nkernel.core_pattern=|/tmp/x"}}`, `kernel.sysctl["vm.swappiness"]`, "control character"},
		{"hugepages overwrites /etc/passwd", `"hugepages": {"files": [{"path": "/etc/passwd", "existed": true, "content": "root::0:0::/root:/bin/sh\n"}]}`, "hugepages.files[0].path", "/etc/passwd"},
		{"hugepages deletes /etc/shadow", `"hugepages": {"files": [{"path": "/etc/shadow", "existed": false}]}`, "hugepages.files[0].path", "/etc/shadow"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := hugetest.NewFakeKernel(t, 2048, []int64{2048}, []int{0})
			root := k.Root
			for p, body := range map[string]string{"/etc/passwd": passwd, "/etc/shadow": shadow,
				"/proc/cmdline": "ro quiet\n", "/proc/sys/vm/swappiness": "60\n", "/boot/grub/grub.cfg": grubCfg("ro quiet")} {
				k.Put(p, body)
			}
			kd, rec, sf := kernelDownOn(t, root, &playbooks.KernelSpec{Sysctl: map[string]string{"vm.swappiness": "10"}})
			hd := hpStep(t, k, &playbooks.HugepagesSpec{Pages: []playbooks.HugepageReservation{{Size: "2M", Count: 8}}, Mounts: []playbooks.HugetlbfsMount{{Path: "/dev/hugepages"}}, Persist: true}).Down(provision.DownOptions{})
			if hp := hd.(*hugepagesDown).s.state.Path; hp != sf {
				t.Fatalf("two state files: %s %s", hp, sf)
			}
			body := testutil.PlantState(t, sf, `{"version": 1, `+c.record+`}`)
			for _, mode := range []provision.RunMode{provision.RunPlan, provision.RunApply} {
				rep := execute(t, mode, hd, kd)
				var bad provision.StepResult
				for _, res := range rep.Steps {
					if res.Status == provision.StatusFailed {
						bad = res
					} else if res.Status != provision.StatusNotRun || !strings.Contains(strings.Join(res.Notes, " "), "not run: rig's state file is refused") {
						t.Errorf("%s %s: %s %q, want not run", mode, res.Name, res.Status, res.Notes)
					}
				}
				steptest.WantRefused(t, bad, sf, c.field, c.path)
				if rep.Summary.Failed != 1 {
					t.Errorf("%s: summary %+v", mode, rep.Summary)
				}
			}
			fileIs(t, filepath.Join(root, "etc/passwd"), passwd)
			fileIs(t, filepath.Join(root, "etc/shadow"), shadow)
			fileIs(t, sf, string(body))
			if len(k.Writes) != 0 || len(rec.Lines()) != 0 {
				t.Fatalf("writes %q, tools run %q", k.Writes, rec.Lines())
			}
		})
	}
}

// TestDownRefusesFileRecordOnRealFiles: the same attack with the host root
// "/", on a real file in a temporary directory: a kernel record naming it
// with other content is refused and the file keeps its content.
func TestDownRefusesFileRecordOnRealFiles(t *testing.T) {
	victim := filepath.Join(t.TempDir(), "passwd")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(gone, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	rec := &fakeexec.Recorder{}
	sf := filepath.Join(t.TempDir(), "state.json")
	s, err := NewKernelStep(&provision.Env{Host: &host.Host{Root: "/", Exec: rec.Exec}, StateFile: sf}, &playbooks.KernelSpec{Sysctl: map[string]string{"vm.swappiness": "10"}})
	if err != nil {
		t.Fatal(err)
	}
	body := testutil.PlantState(t, sf, `{"version": 1, "kernel": {"files": [{"path": "`+victim+`", "existed": true, "content": "pwned\n"}, {"path": "`+gone+`", "existed": false}]}}`)
	rep := execute(t, provision.RunApply, s.(provision.Downer).Down(provision.DownOptions{}))
	steptest.WantRefused(t, rep.Steps[0], sf, "kernel.files[0].path", victim, "kernel.files[1].path", gone)
	fileIs(t, victim, "precious\n")
	fileIs(t, gone, "secret\n")
	fileIs(t, sf, string(body))
	if len(rec.Lines()) != 0 {
		t.Fatalf("tools run %q", rec.Lines())
	}
}

// TestDownRefusesPoolRecords: a pool record of 999999 2 MiB pages (more
// than the host's 24 GB hold), of a size or node the host lacks, or of a
// negative count is refused and no pool is written; a record the step
// could have written is restored.
func TestDownRefusesPoolRecords(t *testing.T) {
	spec := &playbooks.HugepagesSpec{Pages: []playbooks.HugepageReservation{{Size: "2M", Count: 128}}}
	for _, c := range []struct{ name, pool, want string }{
		{"999999 pages", `{"sizeKB": 2048, "node": -1, "before": 999999}`, "hugepages.pools[0].before: 999999 pages of 2M is more than this host's memory holds (MemTotal 23.4 GiB: at most 12000)"},
		{"no such size", `{"sizeKB": 4096, "node": -1, "before": 1}`, "hugepages.pools[0].sizeKB: 4096: this host has no 4096 kB pages"},
		{"no such node", `{"sizeKB": 2048, "node": 7, "before": 1}`, "hugepages.pools[0].node: 7: this host has no such NUMA node"},
		{"negative", `{"sizeKB": 2048, "node": 0, "before": -5}`, "hugepages.pools[0].before: -5: a page count is never negative"},
		{"a mount the playbook does not have", `{"sizeKB": 2048, "node": 0, "before": 0}], "mounts": [{"path": "/etc", "created": true}`, `hugepages.mounts[0].path: "/etc" is not a mount of this playbook's hugepages section (none)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			k := hugetest.NewFakeKernel(t, 2048, []int64{2048, 1 << 20}, []int{0})
			k.SetPool(2048, 0, 128)
			k.Put("/etc/hostname", "host\n")
			k.ResetWrites()
			s := hpStep(t, k, spec)
			testutil.PlantState(t, s.state.Path, `{"version": 1, "hugepages": {"pools": [`+c.pool+`]}}`)
			for _, mode := range []provision.RunMode{provision.RunPlan, provision.RunApply} {
				steptest.WantRefused(t, runOne(t, s.Down(provision.DownOptions{}), mode), s.state.Path, c.want)
			}
			if len(k.Writes) != 0 || !k.Exists("/etc/hostname") {
				t.Fatalf("writes %q", k.Writes)
			}
			if st, _ := hugepages.ReadState(k); st.Pools[0].Total != 128 {
				t.Fatalf("pool now %+v", st.Pools[0])
			}
		})
	}
	k := hugetest.NewFakeKernel(t, 2048, []int64{2048}, []int{0})
	k.SetPool(2048, 0, 128)
	k.ResetWrites()
	s := hpStep(t, k, spec)
	testutil.PlantState(t, s.state.Path, `{"version": 1, "hugepages": {"pools": [{"sizeKB": 2048, "node": -1, "before": 12000}]}}`)
	if res := runOne(t, s.Down(provision.DownOptions{}), provision.RunPlan); res.Status != provision.StatusWouldChange || res.Changes[0].To != "12000" {
		t.Fatalf("the most the host holds: %s %v %s", res.Status, res.Changes, res.Error)
	}
}

// TestHugepagesDownKeepsAFilledDirectory: a mount record says rig made its
// directory, but the directory (not mounted now) holds a file: down leaves
// it, says why, and forgets the record.
func TestHugepagesDownKeepsAFilledDirectory(t *testing.T) {
	k := hugetest.NewFakeKernel(t, 2048, []int64{2048}, []int{0})
	k.Put("/mnt/huge/keep", "data\n")
	s := hpStep(t, k, &playbooks.HugepagesSpec{Mounts: []playbooks.HugetlbfsMount{{Path: "/mnt/huge"}}})
	testutil.PlantState(t, s.state.Path, `{"version": 1, "hugepages": {"mounts": [{"path": "/mnt/huge", "created": true}]}}`)
	res := runOne(t, s.Down(provision.DownOptions{}), provision.RunPlan)
	if res.Status != provision.StatusWouldChange || len(res.Changes) != 1 || !strings.Contains(strings.Join(res.Notes, " "), "hugetlbfs /mnt/huge: the directory rig made is left in place: it holds 1 entries (e.g. keep)") {
		t.Fatalf("plan: %s %v %q %s", res.Status, res.Changes, res.Notes, res.Error)
	}
	if res := runOne(t, s.Down(provision.DownOptions{}), provision.RunApply); res.Status != provision.StatusChanged || res.Changes[0].Action != "forget the hugepages record" {
		t.Fatalf("apply: %s %v %s", res.Status, res.Changes, res.Error)
	}
	fileIs(t, k.Path("/mnt/huge/keep"), "data\n")
}

// TestDownRefusesWholeRunForOneRecord: rig down runs hugepages before
// kernel; the hugepages record is rig's (a pool to give back), the
// kernel's is not: nothing at all is written, hugepages is not run.
func TestDownRefusesWholeRunForOneRecord(t *testing.T) {
	k := hugetest.NewFakeKernel(t, 2048, []int64{2048}, []int{0})
	k.SetPool(2048, 0, 128)
	k.ResetWrites()
	for p, body := range map[string]string{"/proc/cmdline": "ro quiet\n", "/proc/sys/vm/swappiness": "60\n", "/boot/grub/grub.cfg": grubCfg("ro quiet")} {
		k.Put(p, body)
	}
	kd, rec, sf := kernelDownOn(t, k.Root, &playbooks.KernelSpec{Sysctl: map[string]string{"vm.swappiness": "10"}})
	hd := hpStep(t, k, &playbooks.HugepagesSpec{Pages: []playbooks.HugepageReservation{{Size: "2M", Count: 128}}}).Down(provision.DownOptions{})
	body := testutil.PlantState(t, sf, `{"version": 1, "hugepages": {"pools": [{"sizeKB": 2048, "node": -1, "before": 0}]},
		"kernel": {"sysctl": {"vm.swappiness": "60"}, "files": [{"path": "/etc/passwd", "existed": true, "content": "x"}]}}`)
	rep := execute(t, provision.RunApply, hd, kd)
	if rep.Steps[0].Status != provision.StatusNotRun || !strings.Contains(rep.Steps[0].Notes[0], "(step kernel)") {
		t.Fatalf("hugepages: %s %q", rep.Steps[0].Status, rep.Steps[0].Notes)
	}
	steptest.WantRefused(t, rep.Steps[1], sf, "kernel.files[0].path")
	if len(k.Writes) != 0 || len(rec.Lines()) != 0 {
		t.Fatalf("writes %q, tools %q", k.Writes, rec.Lines())
	}
	fileIs(t, sf, string(body))
}
