package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"rig/internal/testutil"
	"rig/internal/testutil/hugetest"
	"rig/lab"
	"rig/lab/fwsim"
)

// labExec runs argv inside lab name and returns its stdout; a failure
// fails the test.
func labExec(t *testing.T, bin, name string, argv ...string) string {
	t.Helper()
	code, out, errOut := runBin(t, bin, append([]string{"lab", "exec", name, "--"}, argv...)...)
	if code != 0 {
		t.Fatalf("lab exec %s -- %v: exit %d\n%s%s", name, argv, code, out, errOut)
	}
	return out
}

const hugePool = "/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"

var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// ovsVolatile are columns OvS changes by itself: row ids, the config
// sequence numbers every transaction bumps, counters.
var ovsVolatile = map[string]bool{"_uuid": true, "cur_cfg": true, "next_cfg": true, "statistics": true}

// labOVSTables is the lab's OvS tables (Open_vSwitch, Bridge, Port,
// Interface) without volatile columns, uuids replaced, rows sorted.
func labOVSTables(t *testing.T, bin, name string) string {
	t.Helper()
	var b strings.Builder
	for _, table := range []string{"Open_vSwitch", "Bridge", "Port", "Interface"} {
		var rows []string
		for _, row := range strings.Split(labExec(t, bin, name, "ovs-vsctl", "--no-wait", "list", table), "\n\n") {
			var cols []string
			for _, line := range strings.Split(row, "\n") {
				key, _, ok := strings.Cut(line, ":")
				if !ok || ovsVolatile[strings.TrimSpace(key)] {
					continue
				}
				cols = append(cols, uuidRE.ReplaceAllString(strings.Join(strings.Fields(line), " "), "<uuid>"))
			}
			if len(cols) > 0 {
				rows = append(rows, strings.Join(cols, "\n  "))
			}
		}
		sort.Strings(rows)
		fmt.Fprintf(&b, "ovs %s: %d row(s)\n", table, len(rows))
		for _, r := range rows {
			fmt.Fprintf(&b, "  %s\n", r)
		}
	}
	return b.String()
}

// labMounts is the lab's mount namespace as "MOUNTPOINT FSTYPE SOURCE
// SUPEROPTS", sorted. Mounts under /tmp and /run/netns are left out: the
// lab's namespace is a slave of the host's, so other tests' temp-dir
// mounts and netns files appear in it while this test runs.
func labMounts(t *testing.T, bin, name string) string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(labExec(t, bin, name, "cat", "/proc/self/mountinfo"), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 || strings.HasPrefix(f[4], "/tmp/") || strings.HasPrefix(f[4], "/run/netns/") {
			continue
		}
		out = append(out, strings.Join([]string{f[4], g[0], g[1], g[2]}, " "))
	}
	sort.Strings(out)
	return "mounts:\n  " + strings.Join(out, "\n  ") + "\n"
}

// hostHugepageCounts is every pool's nr_hugepages (system-wide and per
// node): the lab's pools are the host kernel's.
func hostHugepageCounts(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, g := range []string{"/sys/kernel/mm/hugepages/hugepages-*/nr_hugepages", "/sys/devices/system/node/node*/hugepages/hugepages-*/nr_hugepages"} {
		ps, _ := filepath.Glob(g)
		for _, p := range ps {
			v, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s %s\n", p, strings.TrimSpace(string(v)))
		}
	}
	return b.String()
}

// labFiles is what rig writes inside the lab: the entries of its private
// /run/rig (lab.json, and whatever else rig leaves there), whether rig's
// state file still holds a record, and rig's drop-ins (GRUB, sysctl) as
// the lab sees them. Three of rig's own files are normalised away: its
// lock files (rig.lock and the state file's state.json.lock, flock targets
// that stay like any lock file) and its state file, compared by the kinds
// of record its playbooks hold (after down it holds none). /run/dpdk is not compared: ovs-vswitchd's DPDK leaves its runtime
// dir (rte, with the telemetry socket) when it stops, as it does on a
// card; that is DPDK's, not rig's (rig hugepages show lists it as stale).
func labFiles(t *testing.T, bin, name string) string {
	t.Helper()
	list := labExec(t, bin, name, "sh", "-c", "find /run/rig ! -name rig.lock ! -name state.json ! -name state.json.lock | sort; ls -d /etc/default/grub.d/rig.cfg /etc/sysctl.d/*rig* 2>/dev/null; true")
	st := labExec(t, bin, name, "sh", "-c", "cat /run/rig/state.json 2>/dev/null; true")
	var doc struct {
		Playbooks []struct {
			Records map[string]json.RawMessage `json:"records"`
		} `json:"playbooks"`
	}
	rec := map[string]bool{}
	if st != "" {
		if err := json.Unmarshal([]byte(st), &doc); err != nil {
			t.Fatalf("lab %s: /run/rig/state.json: %v\n%s", name, err, st)
		}
	}
	for _, p := range doc.Playbooks {
		for k := range p.Records {
			rec[k] = k != "version"
		}
	}
	for k, ok := range rec {
		if !ok {
			delete(rec, k)
		}
	}
	return fmt.Sprintf("files:\n%srig state records: %v\n", list, slices.Sorted(maps.Keys(rec)))
}

// labLinks is the lab's netdevs and RDMA ports as `rig lab status` shows
// them (admin state, carrier, wire end, port and physical state) and as
// the kernel lists them inside (flags, MTU, master). PROMISC is left out
// of the flags: in a lab OvS attaches p0 and pf0hpf through DPDK's
// af_packet PMD (the mlx5 substitution), which sets IFF_PROMISC on the
// veth and does not clear it when the port goes; on a card the mlx5 PMD
// keeps promiscuous mode in its flow rules, not in the netdev's flags.
func labLinks(t *testing.T, bin, name string) string {
	t.Helper()
	var b strings.Builder
	for _, n := range labStatus(t, bin, name).Netdevs {
		fmt.Fprintf(&b, "netdev %+v\n", n)
	}
	for _, line := range strings.Split(labExec(t, bin, name, "ip", "-o", "link", "show"), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		// "4: p0@if5: <BROADCAST,...> mtu 1500 qdisc ... master bond0 state UP ..."
		flags := strings.NewReplacer(",PROMISC", "", "<PROMISC,", "<").Replace(f[2])
		keep := []string{strings.SplitN(f[1], "@", 2)[0], flags}
		for i := 3; i+1 < len(f); i++ {
			if f[i] == "mtu" || f[i] == "master" || f[i] == "state" {
				keep = append(keep, f[i]+" "+f[i+1])
			}
		}
		fmt.Fprintf(&b, "link %s\n", strings.Join(keep, " "))
	}
	return b.String()
}

// labFirmware is the firmware simulator's Next Boot value of each
// parameter of each device (Current moves only with a power cycle).
// restoreFirmware runs rig down --firmware: the mode's parameters go back
// to their Next Boot values from before up (exit 3: a power cycle makes
// them run); after the power cycle it forgets rig's record (exit 0) and a
// second one changes nothing.
func restoreFirmware(t *testing.T, bin, name string, down []string) {
	t.Helper()
	fwDown := append(append([]string{}, down...), "--firmware")
	code, out, errOut := runBin(t, bin, fwDown...)
	if code != exitPowerCycle || !strings.Contains(out, "INTERNAL_CPU_MODEL") {
		t.Fatalf("down --firmware: exit %d, want %d setting INTERNAL_CPU_MODEL back\n%s%s", code, exitPowerCycle, out, errOut)
	}
	if code, out, errOut := runBin(t, bin, "lab", "power-cycle", name); code != 0 {
		t.Fatalf("power-cycle: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut = runBin(t, bin, fwDown...); code != 0 || !strings.Contains(out, "forget the mode record") {
		t.Fatalf("down --firmware after the power cycle: exit %d, want 0 forgetting the record\n%s%s", code, out, errOut)
	}
	if code, out, errOut = runBin(t, bin, fwDown...); code != 0 || !strings.Contains(out, " 0 changed") {
		t.Fatalf("third down --firmware: exit %d\n%s%s", code, out, errOut)
	}
}

func labFirmware(t *testing.T, name string) string {
	t.Helper()
	l, err := lab.ForName(name)
	if err != nil {
		t.Fatal(err)
	}
	st, err := fwsim.New(l.FirmwareState()).Load()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for bdf, d := range st.Devices {
		for p, v := range d.Params {
			out = append(out, fmt.Sprintf("%s %s current=%d next=%d", bdf, p, v.Current, v.Next))
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// labHostState is everything rig down must give back inside a lab, as
// sections (compared one by one, so a failure names what differs).
func labHostState(t *testing.T, bin, name string) map[string]string {
	t.Helper()
	return map[string]string{
		"ovs":       labOVSTables(t, bin, name),
		"hugepages": hostHugepageCounts(t),
		"mounts":    labMounts(t, bin, name),
		"files":     labFiles(t, bin, name),
		"links":     labLinks(t, bin, name),
	}
}

// diffState names the sections of got that differ from want.
func diffState(t *testing.T, what string, want, got map[string]string) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if want[k] != got[k] {
			t.Errorf("%s: %s differs.\nbefore up:\n%s\nnow:\n%s", what, k, want[k], got[k])
		}
	}
}

// TestPrivilegedLabDownAfterUpRestoresBF2: in a bf2-dpu lab, rig up -p
// bf2-dpu (exit 3: DPU mode for the next boot; power cycle; up again: the
// check passes) changes the lab's OvS (settings, the bridge with p0 and
// pf0hpf, DPDK initialised), the hugepage pool, a hugetlbfs mount on
// /dev/hugepages and rig's state file; rig down -p bf2-dpu returns each of
// them (OvS tables, hugepage counts, mounts, files, links) to its state
// before up. Firmware is the exception the issue sets: plain rig down
// leaves it (its Next Boot values stay those up set, rig's record of the
// old ones stays, and the report says so); a second down changes nothing;
// rig down --firmware sets the mode's parameters back (exit 3), and after
// a power cycle forgets the record: then everything, firmware included,
// is as before up, and plan --down --firmware plans nothing.
func TestPrivilegedLabDownAfterUpRestoresBF2(t *testing.T) {
	testutil.RequirePrivileged(t)
	needs := playbookNeeds(t, "bf2-dpu")
	hugetest.ReserveFor(t, needs...)
	// a pool of 1016 pages, so that up grows it to the playbook's 1024
	// and down has a count to give back; the pages the test needs must
	// stay free in it
	nr0 := nrHugepages(t)
	t.Cleanup(func() { _ = os.WriteFile(hugePool, []byte(strconv.Itoa(nr0)), 0) })
	if used := nr0 - freeHugepages(t); 1016-used < hugetest.Pages(needs...) {
		t.Fatalf("hugepages: the host uses %d of its %d 2 MiB pages: a pool of 1016 leaves %d free, the test needs %d (%v)", used, nr0, 1016-used, hugetest.Pages(needs...), needs)
	}
	if err := os.WriteFile(hugePool, []byte("1016"), 0); err != nil || nrHugepages(t) != 1016 {
		t.Fatalf("set nr_hugepages 1016 (was %d): %v, now %d", nr0, err, nrHugepages(t))
	}
	t0 := time.Now()
	bin := buildRig(t)
	name := fmt.Sprintf("dn-%d", os.Getpid()%10000)
	labUp(t, bin, "bf2-dpu", name, "--far-ends", "wire") // the check's far ends in the wire netns
	before, fw0 := labHostState(t, bin, name), labFirmware(t, name)
	t.Logf("built and lab up in %v", time.Since(t0).Round(time.Second))

	up := []string{"lab", "exec", name, "--", bin, "-o", "json", "up", "-p", "bf2-dpu"}
	applyJSON(t, bin, up, exitPowerCycle)
	if code, out, errOut := runBin(t, bin, "lab", "power-cycle", name); code != 0 {
		t.Fatalf("power-cycle: exit %d\n%s%s", code, out, errOut)
	}
	if chk := stepOf(applyJSON(t, bin, up, 0), "check"); chk == nil || chk.Status != "ok" || chk.Result == nil || !chk.Result.Pass {
		t.Fatalf("second up: check %+v, want ok and passing", chk)
	}
	during, fwUp := labHostState(t, bin, name), labFirmware(t, name)
	for _, k := range []string{"ovs", "hugepages", "mounts", "files"} {
		if during[k] == before[k] {
			t.Errorf("rig up changed nothing in %s:\n%s", k, during[k])
		}
	}
	if fwUp == fw0 {
		t.Errorf("rig up changed no firmware parameter:\n%s", fwUp)
	}

	down := []string{"lab", "exec", name, "--", bin, "down", "-p", "bf2-dpu"}
	code, out, errOut := runBin(t, bin, down...)
	if code != 0 {
		t.Fatalf("down: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"ovs bridge ovs_dpdk_br0: delete bridge (rig added it)", "remove dpdk-init (rig set it)",
		"hugetlbfs /dev/hugepages: umount (rig mounted it)", "set nr_hugepages (back to before rig)", "check: nothing to undo", "mode: the DPU mode is left as it is"} {
		if !strings.Contains(out, want) {
			t.Errorf("down report lacks %q:\n%s", want, out)
		}
	}
	afterDown := labHostState(t, bin, name)
	if !strings.Contains(afterDown["files"], "rig state records: [firmware]") {
		t.Errorf("plain rig down forgot the firmware record (rig down --firmware needs it):\n%s", afterDown["files"])
	}
	// the firmware record stays until rig down --firmware
	afterDown["files"] = strings.Replace(afterDown["files"], "rig state records: [firmware]", "rig state records: []", 1)
	diffState(t, "after rig down", before, afterDown)
	if fw := labFirmware(t, name); fw != fwUp {
		t.Errorf("plain rig down changed firmware (it restores it only with --firmware):\nafter up:\n%s\nafter down:\n%s", fwUp, fw)
	}
	report := out
	if code, out, errOut := runBin(t, bin, down...); code != 0 || !strings.Contains(out, " 0 changed") {
		t.Fatalf("second down: exit %d\n%s%s", code, out, errOut)
	}
	restoreFirmware(t, bin, name, down)
	diffState(t, "after rig down --firmware and a power cycle", before, labHostState(t, bin, name))
	if fw := labFirmware(t, name); fw != fw0 {
		t.Errorf("rig down --firmware and a power cycle: firmware differs from before up:\nbefore:\n%s\nnow:\n%s", fw0, fw)
	}
	plan := []string{"lab", "exec", name, "--", bin, "plan", "--down", "--firmware", "-p", "bf2-dpu"}
	if code, out, errOut := runBin(t, bin, plan...); code != 0 || !strings.Contains(out, "0 would change") {
		t.Fatalf("plan --down --firmware: exit %d\n%s%s", code, out, errOut)
	}
	diffState(t, "after plan --down", before, labHostState(t, bin, name))
	t.Logf("down test: %v; down report:\n%s", time.Since(t0).Round(time.Second), report)
}
