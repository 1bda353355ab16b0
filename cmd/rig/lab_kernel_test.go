package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"rig/internal/testutil"
	"rig/lab"
	"rig/lab/grub"
)

// kernelLabPlaybook: boot parameters (1 GiB pages, the Arm side's
// iommu.passthrough) and a per-netns sysctl, the kernel section alone.
const kernelLabPlaybook = `name: lab-kernel
kernel:
  default-hugepagesz: 1G
  hugepages:
    - {size: 1G, count: 2}
  args: [iommu.passthrough=1]
  sysctl:
    net.core.somaxconn: "1024"
`

const kernelLabTokens = "default_hugepagesz=1G hugepagesz=1G hugepages=2 iommu.passthrough=1"

// labUpReport is the part of rig's JSON report these tests read.
type labUpReport struct {
	Steps []struct {
		Name    string            `json:"name"`
		Status  string            `json:"status"`
		Changes []json.RawMessage `json:"changes"`
		Pending string            `json:"pending"`
		Error   string            `json:"error"`
	} `json:"steps"`
	Summary struct {
		Changes int      `json:"changes"`
		Resets  []string `json:"resets"`
	} `json:"summary"`
}

// labRig runs rig (-o json) inside lab name and returns its exit code,
// report and output.
func labRig(t *testing.T, bin, name string, args ...string) (int, labUpReport, string) {
	t.Helper()
	code, out, errOut := runBin(t, bin, append([]string{"lab", "exec", name, "--", bin, "-o", "json"}, args...)...)
	var rep labUpReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("rig %v in lab %s: exit %d, not a report (%v):\n%s%s", args, name, code, err, out, errOut)
	}
	return code, rep, out + errOut
}

// stepStatus is one step's status in a report ("" = not run).
func (r labUpReport) stepStatus(name string) string {
	for _, s := range r.Steps {
		if s.Name == name {
			return s.Status
		}
	}
	return ""
}

// treeState lists every entry under the host paths the lab keeps to
// itself (path, mode, size, mtime, and a symlink's target): the host must
// not see a change while rig works inside the lab.
func treeState(t *testing.T) string {
	t.Helper()
	var lines []string
	for _, root := range []string{"/etc/default", "/boot", "/etc/sysctl.d", "/proc/cmdline"} {
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				lines = append(lines, p+" "+err.Error())
				return nil
			}
			fi, err := os.Lstat(p)
			if err != nil {
				return nil
			}
			tgt, _ := os.Readlink(p)
			mtime := fi.ModTime().UnixNano()
			if root == "/proc/cmdline" {
				b, _ := os.ReadFile(p)
				tgt, mtime = string(b), 0
			}
			lines = append(lines, fmt.Sprintf("%s %v %d %d %s", p, fi.Mode(), fi.Size(), mtime, tgt))
			return nil
		})
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// labFile is a file of lab name's private OS, read from the host side.
func labFile(t *testing.T, name, p string) (string, os.FileInfo) {
	t.Helper()
	l, err := lab.ForName(name)
	if err != nil {
		t.Fatal(err)
	}
	full := filepath.Join(l.OSDir(), p)
	fi, err := os.Stat(full)
	if err != nil {
		return "", nil
	}
	b, _ := os.ReadFile(full)
	return string(b), fi
}

func labDefaultArgs(t *testing.T, name string) string {
	t.Helper()
	cfg, _ := labFile(t, name, grub.Cfg)
	_, args, _, ok := grub.DefaultEntry(cfg)
	if !ok {
		t.Fatalf("lab %s: no linux entry in its grub.cfg:\n%s", name, cfg)
	}
	return strings.Join(args, " ")
}

func writePlaybook(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPrivilegedLabKernelBootParams: inside a lab, rig up of a kernel
// section writes the GRUB drop-in, runs (the lab's) update-grub and sets a
// net.* sysctl: exit 3 (reboot pending), all of it in the lab only (the
// host's /etc/default, /boot, /etc/sysctl.d, /proc/cmdline and its own
// somaxconn unchanged); a second up writes nothing; after `rig lab reboot`
// the lab's /proc/cmdline has the parameters and up is 0 twice, writing
// nothing; rig down removes the drop-in and is pending a reboot again,
// until the next reboot; a sysctl outside net.* is refused at plan time.
func TestPrivilegedLabKernelBootParams(t *testing.T) {
	testutil.RequirePrivileged(t)
	bin := buildRigNoCgo(t)
	const name = "lt-kern"
	pb := writePlaybook(t, "kernel.yaml", kernelLabPlaybook)
	hostBefore, hostSomaxconn := treeState(t), readTrim(t, "/proc/sys/net/core/somaxconn")
	labUp(t, bin, "bf2-dpu", name)
	if code, out, _ := runBin(t, bin, "lab", "exec", name, "--", "cat", "/proc/cmdline"); code != 0 || out != readTrim(t, "/proc/cmdline")+"\n" {
		t.Fatalf("the lab's /proc/cmdline at up: %q, want the host's", out)
	}
	code, rep, out := labRig(t, bin, name, "up", "-p", pb)
	if code != exitPowerCycle || rep.stepStatus("kernel") != "pending-reboot" || rep.Summary.Changes == 0 || strings.Join(rep.Summary.Resets, ",") != "host-reboot" {
		t.Fatalf("first up: exit %d, want 3 (reboot pending; summary.resets [host-reboot], got %v)\n%s", code, rep.Summary.Resets, out)
	}
	dropIn, _ := labFile(t, name, "/etc/default/grub.d/rig.cfg")
	if !strings.Contains(dropIn, kernelLabTokens) || !strings.Contains(labDefaultArgs(t, name), kernelLabTokens) {
		t.Fatalf("the lab's drop-in %q / grub.cfg default entry %q lack %s", dropIn, labDefaultArgs(t, name), kernelLabTokens)
	}
	if _, got, _ := runBin(t, bin, "lab", "exec", name, "--", "cat", "/proc/sys/net/core/somaxconn"); got != "1024\n" {
		t.Errorf("the lab's somaxconn %q, want 1024", got)
	}
	assertHostUntouched(t, hostBefore, hostSomaxconn)
	_, cfgBefore := labFile(t, name, grub.Cfg)
	if code, rep, out := labRig(t, bin, name, "up", "-p", pb); code != exitPowerCycle || rep.Summary.Changes != 0 {
		t.Fatalf("second up before the reboot: exit %d, %d changes\n%s", code, rep.Summary.Changes, out)
	}
	rebootLab(t, bin, name, kernelLabTokens, "boot: sysctl net.core.somaxconn = 1024 (/etc/sysctl.d/90-rig.conf)")
	applyTwiceOK(t, bin, name, pb, cfgBefore)
	code, rep, out = labRig(t, bin, name, "down", "-p", pb)
	if code != exitPowerCycle || rep.stepStatus("kernel") != "pending-reboot" || !strings.Contains(out, "still has "+kernelLabTokens) {
		t.Fatalf("down: exit %d, want 3 (the parameters leave at the next boot)\n%s", code, out)
	}
	if d, _ := labFile(t, name, "/etc/default/grub.d/rig.cfg"); d != "" || strings.Contains(labDefaultArgs(t, name), "iommu.passthrough") {
		t.Fatalf("after down: drop-in %q, default entry %q", d, labDefaultArgs(t, name))
	}
	if code, _, out := labRig(t, bin, name, "down", "-p", pb); code != exitPowerCycle {
		t.Fatalf("second down before the reboot: exit %d, want 3\n%s", code, out)
	}
	rebootLab(t, bin, name, "", "")
	for i := 0; i < 2; i++ {
		if code, _, out := labRig(t, bin, name, "down", "-p", pb); code != 0 {
			t.Fatalf("down %d after the reboot: exit %d\n%s", i+1, code, out)
		}
	}
	code, out, errOut := runBin(t, bin, "-o", "json", "lab", "reboot", name)
	var rr lab.RebootReport
	if err := json.Unmarshal([]byte(out), &rr); err != nil || code != 0 || rr.SchemaVersion != lab.RebootSchema || rr.NVAccessLost == nil ||
		!strings.HasPrefix(rr.Boot.Cmdline, "BOOT_IMAGE=") || strings.Contains(rr.Boot.Cmdline, "iommu.passthrough") || len(rr.Restarted) != 4 { // lab kernel, port keeper, ovsdb-server, ovs-vswitchd
		t.Fatalf("lab reboot -o json: exit %d, %v: %+v\n%s%s", code, err, rr, out, errOut)
	}
	host := writePlaybook(t, "host-sysctl.yaml", "name: host-sysctl\nkernel:\n  sysctl:\n    vm.swappiness: \"7\"\n    net.core.somaxconn: \"512\"\n")
	if code, _, out := labRig(t, bin, name, "up", "-p", host); code != exitFailure || !strings.Contains(out, "refusing to set vm.swappiness inside lab "+name) {
		t.Fatalf("vm.swappiness in a lab: exit %d, want 1 naming the key\n%s", code, out)
	}
	assertHostUntouched(t, hostBefore, hostSomaxconn)
}

func readTrim(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func assertHostUntouched(t *testing.T, before, somaxconn string) {
	t.Helper()
	if after := treeState(t); after != before {
		t.Errorf("the host's boot configuration changed:\nbefore:\n%s\nnow:\n%s", before, after)
	}
	if got := readTrim(t, "/proc/sys/net/core/somaxconn"); got != somaxconn {
		t.Errorf("the host's net.core.somaxconn: %s, was %s", got, somaxconn)
	}
}

// rebootLab reboots lab name and checks the lab's new /proc/cmdline: it
// has want (or, want "", none of kernelLabTokens), and the output has line.
func rebootLab(t *testing.T, bin, name, want, line string) {
	t.Helper()
	code, out, errOut := runBin(t, bin, "lab", "reboot", name)
	if code != 0 || !strings.Contains(out, line) || !strings.Contains(out, "started ovs-vswitchd") {
		t.Fatalf("lab reboot: exit %d\n%s%s", code, out, errOut)
	}
	_, cl, _ := runBin(t, bin, "lab", "exec", name, "--", "cat", "/proc/cmdline")
	if !strings.HasPrefix(cl, "BOOT_IMAGE=/boot/vmlinuz-") || want != "" && !strings.Contains(cl, want) || want == "" && strings.Contains(cl, "iommu.passthrough") {
		t.Fatalf("the lab's /proc/cmdline after reboot: %q, want %q", cl, want)
	}
}

// applyTwiceOK: rig up is 0 with nothing written, twice; grub.cfg is the
// file the first up made (the lab's update-grub replaces it when it runs).
func applyTwiceOK(t *testing.T, bin, name, pb string, cfg os.FileInfo) {
	t.Helper()
	fw := labFirmware(t, name)
	for i := 0; i < 2; i++ {
		code, rep, out := labRig(t, bin, name, "up", "-p", pb)
		if code != 0 || rep.Summary.Changes != 0 {
			t.Fatalf("up %d after the reboot: exit %d, %d changes, want 0 and none\n%s", i+1, code, rep.Summary.Changes, out)
		}
	}
	if _, now := labFile(t, name, grub.Cfg); cfg == nil || now == nil || !os.SameFile(cfg, now) || !now.ModTime().Equal(cfg.ModTime()) {
		t.Errorf("grub.cfg was rewritten (update-grub ran) by an up that had nothing to do")
	}
	if now := labFirmware(t, name); now != fw {
		t.Errorf("firmware state changed by an up that had nothing to do:\n%s\nwas:\n%s", now, fw)
	}
}

// fwKernelPlaybook: firmware parameters (power cycle), boot parameters
// (reboot), VFs in switchdev mode on the Arm's p0 (the lab kernel makes
// them at once) and a bind section naming p0, which is Mellanox: left on
// mlx5_core (bifurcated), said so, nothing written — the lab's cards have
// no function another driver could take.
const fwKernelPlaybook = `name: lab-fw-kernel
firmware:
  devices:
    - device: "*"
      parameters: {SRIOV_EN: True, NUM_OF_VFS: 4}
kernel:
  hugepages:
    - {size: 1G, count: 2}
  args: [iommu.passthrough=1]
sriov:
  pfs:
    - {pf: p0, numvfs: 2, eswitch: switchdev}
bind:
  driver: vfio-pci
  devices: [p0]
`

// TestPrivilegedLabFirmwareAndKernel: a playbook with firmware and kernel
// sections in a lab: the first up writes both (Next Boot, drop-in) and is
// pending (exit 3), a second up writes nothing and is still pending;
// `rig lab power-cycle` loads Next Boot and boots the host with the new
// command line; then up is 0 twice, writing nothing.
func TestPrivilegedLabFirmwareAndKernel(t *testing.T) {
	testutil.RequirePrivileged(t)
	bin := buildRigNoCgo(t)
	const name = "lt-fwk"
	pb := writePlaybook(t, "fwk.yaml", fwKernelPlaybook)
	hostBefore := treeState(t)
	labUp(t, bin, "bf2-dpu", name)
	code, rep, out := labRig(t, bin, name, "up", "-p", pb)
	if code != exitPowerCycle || rep.stepStatus("firmware") != "pending-reboot" || rep.stepStatus("kernel") != "pending-reboot" ||
		rep.stepStatus("sriov") != "changed" || rep.stepStatus("bind") != "ok" || !strings.Contains(out, "left on mlx5_core") ||
		strings.Join(rep.Summary.Resets, ",") != "host-power-cycle,host-reboot" {
		t.Fatalf("first up: exit %d, want 3 with firmware and kernel pending, sriov changed, bind ok (p0 left on mlx5_core)\n%s", code, out)
	}
	if got := inLab(t, bin, name, "cat /sys/bus/pci/devices/0000:03:00.0/sriov_numvfs; ls /sys/bus/pci/devices/0000:03:00.0/ | grep -c '^virtfn'"); got != "2\n2" {
		t.Fatalf("p0's VFs after the first up: %q, want sriov_numvfs 2 and 2 virtfn links", got)
	}
	fw := labFirmware(t, name)
	if !strings.Contains(fw, " NUM_OF_VFS current=") {
		t.Fatalf("firmware state has no NUM_OF_VFS:\n%s", fw)
	}
	_, cfg := labFile(t, name, grub.Cfg)
	if code, rep, out := labRig(t, bin, name, "up", "-p", pb); code != exitPowerCycle || rep.Summary.Changes != 0 || labFirmware(t, name) != fw {
		t.Fatalf("second up before the power cycle: exit %d, %d changes (want 3, none)\n%s", code, rep.Summary.Changes, out)
	}
	// a warm reboot boots the new command line but leaves the firmware's
	// Next Boot unloaded: kernel ok, firmware still pending
	rebootLab(t, bin, name, "hugepagesz=1G hugepages=2 iommu.passthrough=1", "")
	code, rep, out = labRig(t, bin, name, "up", "-p", pb)
	if code != exitPowerCycle || rep.stepStatus("kernel") != "ok" || rep.stepStatus("firmware") != "pending-reboot" || rep.Summary.Changes != 0 {
		t.Fatalf("up after a warm reboot: exit %d, want 3 with kernel ok, firmware pending, nothing written\n%s", code, out)
	}
	code, pcOut, errOut := runBin(t, bin, "lab", "power-cycle", name)
	if code != 0 || !strings.Contains(pcOut, "loaded its next-boot configuration") || !strings.Contains(pcOut, "boot: /proc/cmdline: BOOT_IMAGE=") ||
		!strings.Contains(pcOut, "hugepagesz=1G hugepages=2 iommu.passthrough=1") {
		t.Fatalf("power-cycle: exit %d\n%s%s", code, pcOut, errOut)
	}
	applyTwiceOK(t, bin, name, pb, cfg)
	if after := treeState(t); after != hostBefore {
		t.Errorf("the host's boot configuration changed:\nbefore:\n%s\nnow:\n%s", hostBefore, after)
	}
}

// TestLabUpdateGrubOutsideLab: rig called as update-grub outside a lab
// says what it is and fails (a host without GRUB is not fooled), and
// `rig lab reboot` checks its name before anything.
func TestLabUpdateGrubOutsideLab(t *testing.T) {
	if _, err := os.Stat("/run/rig/lab.json"); err == nil {
		t.Skip("running inside a lab")
	}
	if !labUpdateGrubTool("/run/rig-lab/x/bin/update-grub") || labUpdateGrubTool("rig") {
		t.Fatal("labUpdateGrubTool")
	}
	var e strings.Builder
	if code := runLabUpdateGrub(nil, &e); code != 1 || !strings.Contains(e.String(), "answers only inside a rig lab") || !strings.Contains(e.String(), "grub2-common") {
		t.Errorf("update-grub outside a lab: exit %d, %q", code, e.String())
	}
	if code, _, errOut := rig(t, "lab", "reboot", "Bad_Name"); code != exitUsage || !strings.Contains(errOut, "lab name") {
		t.Errorf("lab reboot Bad_Name: exit %d, %q", code, errOut)
	}
}
