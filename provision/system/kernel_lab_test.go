package system

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"rig/internal/host"
	"rig/internal/labinfo"
	"rig/playbooks"
	"rig/provision"
	"rig/provision/steptest"
)

// inLab makes root look like the inside of lab "k" (its /run/rig/lab.json).
func inLab(t *testing.T, root string) {
	t.Helper()
	dir := filepath.Join(root, "run/rig")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := labinfo.Write(dir, &labinfo.Info{Name: "k", Kind: "bf2-dpu", NetNS: "rig-lab-k", WireNetNS: "rig-lab-k-wire"}); err != nil {
		t.Fatal(err)
	}
}

// TestKernelLabRefusesHostSysctls: inside a lab, a sysctl outside net.*
// is a plan-time error naming the key and why, before anything (drop-in,
// update-grub, net.* sysctls) is written; net.* keys alone go through.
func TestKernelLabRefusesHostSysctls(t *testing.T) {
	root := kernelRoot(t, "BOOT_IMAGE=/vmlinuz root=UUID=1234 ro quiet")
	inLab(t, root)
	rec := fakeUpdateGrub(t, root)
	h := &host.Host{Root: root, Exec: rec.Exec}
	rep := runKernel(t, h, kernelSpec(), provision.Env{})
	st := rep.Steps[0]
	if st.Status != provision.StatusFailed || st.Phase != provision.PhaseCheck || !strings.Contains(st.Error, "refusing to set vm.swappiness inside lab k") ||
		!strings.Contains(st.Error, "real host's kernel") || !strings.Contains(st.Fix, "--skip kernel") {
		t.Fatalf("status %s phase %s error %q fix %q", st.Status, st.Phase, st.Error, st.Fix)
	}
	if len(rec.Lines()) != 0 || readRoot(t, root, "proc/sys/vm/swappiness") != "60\n" || readRoot(t, root, "proc/sys/net/ipv4/tcp_rmem") != "4096\t131072\t6291456\n" {
		t.Fatalf("wrote something: ran %q", rec.Lines())
	}
	if _, err := os.Stat(filepath.Join(root, grubDropIn)); err == nil {
		t.Fatal("drop-in written")
	}
	spec := kernelSpec()
	spec.Sysctl = map[string]string{"net.ipv4.tcp_rmem": "4096 262144 16777216"}
	if st := runKernel(t, h, spec, provision.Env{}).Steps[0]; st.Status != provision.StatusPendingReboot || readRoot(t, root, "proc/sys/net/ipv4/tcp_rmem") != "4096 262144 16777216\n" {
		t.Fatalf("net.* only: %s %q", st.Status, st.Error)
	}
	// a net key the lab's namespace lacks (global-only, like net.core.rmem_max)
	spec.Sysctl = map[string]string{"net.core.rmem_max": "268435456"}
	if st := runKernel(t, h, spec, provision.Env{}).Steps[0]; st.Status != provision.StatusFailed || !strings.Contains(st.Error, "no /proc/sys/net/core/rmem_max in lab k's network namespace") || !strings.Contains(st.Cause, "initial namespace") {
		t.Fatalf("missing net key: %s %q %q", st.Status, st.Error, st.Cause)
	}
}

// TestKernelDownPendingUntilReboot: down after a reboot made rig's
// parameters live removes the drop-in and is pending a reboot (exit 3),
// and so is a second down until the reboot; after it, down forgets the
// record, and a last down changes nothing.
func TestKernelDownPendingUntilReboot(t *testing.T) {
	root := kernelRoot(t, "BOOT_IMAGE=/boot/vmlinuz-6.1.0-28-amd64 root=UUID=1234 ro quiet")
	rec := fakeUpdateGrub(t, root)
	h := &host.Host{Root: root, Exec: rec.Exec}
	spec := &playbooks.KernelSpec{Args: []string{"iommu=pt", "isolcpus=2-7"}}
	runKernel(t, h, spec, provision.Env{})
	reboot(t, root)
	if st := runKernel(t, h, spec, provision.Env{}).Steps[0]; st.Status != provision.StatusOK {
		t.Fatalf("after reboot: %s %v", st.Status, st.Changes)
	}
	s, err := NewKernelStep(&provision.Env{Host: h}, spec)
	if err != nil {
		t.Fatal(err)
	}
	down := s.(provision.Downer).Down(provision.DownOptions{})
	n := len(rec.Lines())
	res := steptest.RunStep(t, down)
	if res.Status != provision.StatusPendingReboot || !strings.Contains(res.Pending, "still has iommu=pt isolcpus=2-7") || !reflect.DeepEqual(rec.Lines()[n:], []string{"update-grub"}) {
		t.Fatalf("down: %s pending %q changes %v ran %q", res.Status, res.Pending, res.Changes, rec.Lines()[n:])
	}
	if _, err := os.Stat(filepath.Join(root, grubDropIn)); err == nil {
		t.Fatal("drop-in still there")
	}
	st, err := provision.LoadState((&provision.Env{Host: h}).State())
	if err != nil || st.Kernel == nil || !reflect.DeepEqual(st.Kernel.Leaving, []string{"iommu=pt", "isolcpus=2-7"}) || len(st.Kernel.Files) != 0 {
		t.Fatalf("record after down: %+v %v", st.Kernel, err)
	}
	n = len(rec.Lines())
	if res := steptest.RunStep(t, down); res.Status != provision.StatusPendingReboot || len(res.Changes) != 0 || len(rec.Lines()) != n {
		t.Fatalf("second down before the reboot: %s %v ran %q", res.Status, res.Changes, rec.Lines()[n:])
	}
	reboot(t, root)
	if res := steptest.RunStep(t, down); res.Status != provision.StatusChanged || len(res.Changes) != 1 || res.Changes[0].Action != "forget the kernel record" {
		t.Fatalf("down after the reboot: %s %v", res.Status, res.Changes)
	}
	if res := steptest.RunStep(t, down); res.Status != provision.StatusOK || len(res.Changes) != 0 {
		t.Fatalf("last down: %s %v", res.Status, res.Changes)
	}
}
