package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rig/provision"
)

// downPlaybook is the ovs-check story on a private OvS: a hugepage pool
// grown by 16 pages over what the host has, a hugetlbfs mount in a new
// directory, OvS-DPDK settings, a netdev bridge, and the check through it.
const downPlaybook = `name: down
hugepages:
  pages:
    - size: 2M
      count: %d
  mounts:
    - path: %s
      pagesize: 2M
ovs:
  config:
    dpdk-init: "try"
    dpdk-socket-mem: "128"
    dpdk-socket-limit: "256"
    dpdk-lcore-mask: "0x1"
    pmd-cpu-mask: "0x2"
    dpdk-extra: "--no-pci --no-telemetry"
    per-port-memory: true
  bridges:
    - name: br-down
      datapath_type: netdev
check:
  duration: 2s
  warmup: 1s
  rate: max
  thresholds: {min_mpps: 0.01, max_loss_pct: 50}
`

// downSnapshot is what rig down must give back: OvS's tables (other_config,
// bridges, dpdk_initialized), the 2 MiB pool, the mount directory and
// rig's records.
func (l *checkLab) downSnapshot(mountDir string) string {
	l.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "other_config %s", l.vsctl("get", "Open_vSwitch", ".", "other_config"))
	fmt.Fprintf(&b, "bridges %q\n", l.vsctl("list-br"))
	fmt.Fprintf(&b, "dpdk_initialized %s", l.vsctl("get", "Open_vSwitch", ".", "dpdk_initialized"))
	fmt.Fprintf(&b, "nr_hugepages %d\n", nrHugepages(l.t))
	_, err := os.Stat(mountDir)
	fmt.Fprintf(&b, "mount dir exists %v\n", err == nil)
	sf, err := provision.StateFileFor("/", "", os.Geteuid(), os.Getenv) // the private one TestMain set up
	if err != nil {
		l.t.Fatal(err)
	}
	st, _ := os.ReadFile(sf.Path)
	rec := strings.Join(strings.Fields(string(st)), "")
	fmt.Fprintf(&b, "records %v\n", rec != "" && rec != `{"version":1}` && rec != `{"version":2}`)
	return b.String()
}

// TestPrivilegedDownAfterUpRestoresHost: rig up of the ovs-check story
// changes the host (OvS settings and bridge, a bigger hugepage pool, a
// mount directory, rig's records); rig down returns every one of them to
// its state before up; a second down changes nothing; plan --down after
// that plans nothing. Then the same with ovs-vdev up too, in both orders
// (twoPlaybooksAnyOrder).
func TestPrivilegedDownAfterUpRestoresHost(t *testing.T) {
	dir := t.TempDir()
	mountDir := filepath.Join(dir, "huge")
	l := newCheckLab(t, fmt.Sprintf(downPlaybook, 1, mountDir)) // its OvS and check; the pool's count follows
	pages := nrHugepages(t)
	if err := os.WriteFile(l.pb, []byte(fmt.Sprintf(downPlaybook, pages+16, mountDir)), 0o644); err != nil {
		t.Fatal(err)
	}
	before := l.downSnapshot(mountDir)
	args := []string{"-p", l.pb, "--rundir", l.rundir}
	lock := []string{"--lock-file", l.rundir + "/lock"}
	if code, out, errOut := l.rig(append(append([]string{"up"}, args...), lock...)...); code != 0 {
		t.Fatalf("up: %d\n%s%s", code, out, errOut)
	}
	if after := l.downSnapshot(mountDir); after == before {
		t.Fatalf("up changed nothing:\n%s", after)
	}
	code, out, errOut := l.rig(append(append([]string{"down"}, args...), lock...)...)
	if code != 0 {
		t.Fatalf("down: %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"ovs bridge br-down: delete bridge (rig added it)", "remove dpdk-init (rig set it)", "restart", "set nr_hugepages (back to before rig)", "check: nothing to undo"} {
		if !strings.Contains(out, want) {
			t.Errorf("down report lacks %q:\n%s", want, out)
		}
	}
	if got := l.downSnapshot(mountDir); got != before {
		t.Fatalf("after down:\n%s\nbefore up:\n%s\ndown report:\n%s", got, before, out)
	}
	code, out, errOut = l.rig(append(append([]string{"down"}, args...), lock...)...)
	if code != 0 || !strings.Contains(out, " 0 changed") {
		t.Fatalf("second down: %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := l.rig(append([]string{"plan", "--down"}, args...)...); code != 0 || !strings.Contains(out, "0 would change") {
		t.Fatalf("plan --down: %d\n%s%s", code, out, errOut)
	}
	l.twoPlaybooksAnyOrder(args[1], mountDir, before, lock)
}

// twoPlaybooksAnyOrder is the README's sequence: `rig up -p ovs-vdev` and
// the check's playbook (pb: its hugepages, OvS settings that overlap
// ovs-vdev's, its bridge) on one --rundir, up in both orders, each brought
// down first once while the other is still up; `rig plan --down` predicts
// each down (never FAILED), the playbook still up keeps its bridge and the
// DPDK settings it shares, and the host ends as it was (before).
func (l *checkLab) twoPlaybooksAnyOrder(pb, mountDir, before string, lock []string) {
	t := l.t
	run := func(what string, args ...string) string {
		t.Helper()
		code, out, errOut := l.rig(append(append(args, "--rundir", l.rundir), lock...)...)
		if code != 0 || strings.Contains(out, "FAILED") {
			t.Fatalf("%s: exit %d\n%s%s", what, code, out, errOut)
		}
		return out
	}
	for _, order := range [][2]string{{"ovs-vdev", pb}, {pb, "ovs-vdev"}} {
		for _, p := range order {
			args := []string{"up", "-p", p}
			if p == pb {
				args = append(args, "--skip", "check") // what it changes is the point here, not its traffic
			}
			run("up -p "+p, args...)
		}
		first, second := order[0], order[1]
		if code, out, errOut := l.rig("plan", "--down", "-p", first, "--rundir", l.rundir); code != 0 || strings.Contains(out, "FAILED") {
			t.Fatalf("plan --down -p %s with %s up: exit %d\n%s%s", first, second, code, out, errOut)
		}
		out := run("down -p "+first, "down", "-p", first)
		still := map[string]string{"ovs-vdev": "br-vdev", pb: "br-down"}[second]
		if br := l.vsctl("list-br"); !strings.Contains(br, still) || strings.Contains(br, map[string]string{"ovs-vdev": "br-vdev", pb: "br-down"}[first]) {
			t.Fatalf("after down -p %s with %s up, bridges %q\n%s", first, second, br, out)
		}
		if init := l.vsctl("get", "Open_vSwitch", ".", "other_config:dpdk-init"); !strings.Contains(init, "try") {
			t.Fatalf("after down -p %s, %s (still up) lost dpdk-init: %q\n%s", first, second, init, out)
		}
		if code, out, errOut := l.rig("plan", "--down", "-p", second, "--rundir", l.rundir); code != 0 || strings.Contains(out, "FAILED") {
			t.Fatalf("plan --down -p %s: exit %d\n%s%s", second, code, out, errOut)
		}
		out = run("down -p "+second, "down", "-p", second)
		if got := l.downSnapshot(mountDir); got != before {
			t.Fatalf("up %s then %s, down %s then %s:\n%s\nbefore:\n%s\nlast down:\n%s", first, second, first, second, got, before, out)
		}
	}
}
