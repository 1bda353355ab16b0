package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"rig/internal/host"
	"rig/internal/testutil"
	"rig/lab"
)

// sriovPlaybook asks for n VFs in switchdev mode on cx6dx-host's port 0.
func sriovPlaybook(t *testing.T, n int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), fmt.Sprintf("sriov%d.yaml", n))
	pb := fmt.Sprintf("name: lab-sriov\nsriov:\n  pfs:\n    - pf: enp59s0f0np0\n      numvfs: %d\n      eswitch: switchdev\n", n)
	if err := os.WriteFile(p, []byte(pb), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// sriovLinks says which of names exist as netdevs in the lab's network
// namespace and, with the same name, in its wire namespace.
func sriovLinks(t *testing.T, name string, names ...string) (inLab, inWire []string) {
	t.Helper()
	for ns, out := range map[string]*[]string{"rig-lab-" + name: &inLab, "rig-lab-" + name + "-wire": &inWire} {
		h, err := host.NetlinkHandle(ns)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if _, err := h.LinkByName(n); err == nil {
				*out = append(*out, n)
			}
		}
		h.Delete()
	}
	return inLab, inWire
}

// wantLinks checks that exactly want of all exist, in the lab and on the wire.
func wantLinks(t *testing.T, name, when string, want []string, all ...string) {
	t.Helper()
	inLab, inWire := sriovLinks(t, name, all...)
	if fmt.Sprint(inLab) != fmt.Sprint(want) || fmt.Sprint(inWire) != fmt.Sprint(want) {
		t.Fatalf("%s: netdevs in the lab %v, on the wire %v; want %v", when, inLab, inWire, want)
	}
}

// inLab runs a shell command inside lab name and returns its output.
func inLab(t *testing.T, bin, name, script string) string {
	t.Helper()
	code, out, errOut := runBin(t, bin, "lab", "exec", name, "--", "sh", "-c", script)
	if code != 0 {
		t.Fatalf("in the lab: %s: exit %d\n%s%s", script, code, out, errOut)
	}
	return strings.TrimSpace(out)
}

// TestPrivilegedLabSRIOV: in a cx6dx-host lab, the unchanged rig's sriov
// step makes 3 switchdev VFs on port 0 (its 2 legacy VFs removed, the mode
// set through compat/devlink/mode as devlink has no device there), and the
// lab kernel makes them real netdevs (lab and wire end) with their sysfs
// entries and one representor each; the second apply changes and writes
// nothing; 1 VF goes through 0; a direct 1 → 2 write is refused (the file
// keeps 1, the kernel log says so); `rig down` brings back the 2 legacy
// VFs the card had (same names and MACs), no representors.
func TestPrivilegedLabSRIOV(t *testing.T) {
	testutil.RequirePrivileged(t)
	bin := buildRigNoCgo(t)
	warmNetns(t)
	const name = "lt-sriov"
	t0 := time.Now()
	labUp(t, bin, "cx6dx-host", name)
	if st := labStatus(t, bin, name); st.Kernel == nil || !st.Kernel.Running || len(st.Problems) > 0 {
		t.Fatalf("lab status: kernel %+v, problems %v", st.Kernel, st.Problems)
	}
	all := []string{"enp59s0f0v0", "enp59s0f0v1", "enp59s0f0v2", "enp59s0f0_0", "enp59s0f0_1", "enp59s0f0_2"}
	wantLinks(t, name, "before", all[:2], all...)
	pb3, pb1 := sriovPlaybook(t, 3), sriovPlaybook(t, 1)
	code, out, errOut := runBin(t, bin, "lab", "exec", name, "--", bin, "up", "-p", pb3)
	if code != 0 || !strings.Contains(out, "eswitch mode (compat/devlink/mode of enp59s0f0np0: devlink has no pci/0000:3b:00.0) legacy -> switchdev") {
		t.Fatalf("rig up (3 VFs, switchdev): exit %d\n%s%s", code, out, errOut)
	}
	wantLinks(t, name, "3 VFs in switchdev", all, all...)
	got := inLab(t, bin, name, "cat /sys/class/net/enp59s0f0_2/phys_port_name /sys/bus/pci/devices/0000:3b:00.0/net/enp59s0f0np0/compat/devlink/mode; "+
		"readlink -f /sys/class/net/enp59s0f0v2/device; readlink /sys/bus/pci/devices/0000:3b:00.0/virtfn2 /sys/bus/pci/devices/0000:3b:00.4/physfn; cat /sys/bus/pci/devices/0000:3b:00.4/device")
	if want := "pf0vf2\nswitchdev\n/sys/devices/pci0000:3a/0000:3a:00.0/0000:3b:00.4\n../0000:3b:00.4\n../0000:3b:00.0\n0x101e"; got != want {
		t.Errorf("the lab's sysfs:\n%s\nwant\n%s", got, want)
	}
	if st := labStatus(t, bin, name); st.Kernel == nil || len(st.Kernel.PFs) != 2 ||
		fmt.Sprint(st.Kernel.PFs[0]) != "{0000:3b:00.0 3 switchdev [enp59s0f0v0 enp59s0f0v1 enp59s0f0v2 enp59s0f0_0 enp59s0f0_1 enp59s0f0_2]}" {
		t.Errorf("lab status: kernel %+v", st.Kernel)
	}
	logPath := filepath.Join(lab.StateRoot, name, "kernel.log")
	log0, _ := os.ReadFile(logPath)
	if rep := applyJSON(t, bin, []string{"lab", "exec", name, "--", bin, "-o", "json", "up", "-p", pb3}, 0); rep.Summary.Changes != 0 || stepOf(rep, "sriov").Status != "ok" {
		t.Errorf("second apply: %d changes, sriov %+v", rep.Summary.Changes, stepOf(rep, "sriov"))
	}
	if log1, _ := os.ReadFile(logPath); string(log1) != string(log0) {
		t.Errorf("second apply wrote to the lab kernel:\n%s", strings.TrimPrefix(string(log1), string(log0)))
	}
	if code, out, errOut := runBin(t, bin, "lab", "exec", name, "--", bin, "up", "-p", pb1); code != 0 {
		t.Fatalf("rig up (1 VF): exit %d\n%s%s", code, out, errOut)
	}
	wantLinks(t, name, "1 VF", []string{"enp59s0f0v0", "enp59s0f0_0"}, all...)
	if got := inLab(t, bin, name, "echo 2 > /sys/bus/pci/devices/0000:3b:00.0/sriov_numvfs; cat /sys/bus/pci/devices/0000:3b:00.0/sriov_numvfs"); got != "1" {
		t.Errorf("sriov_numvfs after a 1 -> 2 write: %q, want 1 (refused)", got)
	}
	if log, _ := os.ReadFile(logPath); !strings.Contains(string(log), "mlx5_core 0000:3b:00.0: 1 VFs already enabled. Disable before enabling 2 VFs") {
		t.Errorf("kernel log has no refusal:\n%s", log)
	}
	wantLinks(t, name, "after the refused write", []string{"enp59s0f0v0", "enp59s0f0_0"}, all...)
	if code, out, errOut := runBin(t, bin, "lab", "exec", name, "--", bin, "down", "-p", pb1); code != 0 {
		t.Fatalf("rig down: exit %d\n%s%s", code, out, errOut)
	}
	wantLinks(t, name, "after rig down", all[:2], all...)
	got = inLab(t, bin, name, "cat /sys/class/net/enp59s0f0v1/address /sys/bus/pci/devices/0000:3b:00.0/sriov_numvfs /sys/class/net/enp59s0f0np0/compat/devlink/mode; ls /sys/class/infiniband")
	if want := "6e:1c:25:90:4b:11\n2\nlegacy\nmlx5_0\nmlx5_1\nmlx5_2\nmlx5_3"; got != want {
		t.Errorf("after rig down:\n%s\nwant\n%s", got, want)
	}
	t.Logf("lab up, 3 applies, a refused write and rig down: %v", time.Since(t0).Round(time.Millisecond))
}
