package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"rig/internal/testutil"
	"rig/internal/testutil/hugetest"
	"rig/lab"
	"rig/playbooks"
	"rig/provision/check"
)

// storyCase is one embedded playbook in the lab kind it runs on, and the
// exit code of its first apply (3: DPU mode is set for the next boot).
type storyCase struct {
	playbook, kind string
	first          int
	// machines: the lab is the BlueField's three machines and the check's
	// far ends are rig bench serve on its host and peer (issue 29), started
	// as README's "The lab: three machines" says; otherwise --far-ends wire
	machines bool
}

// The embedded playbooks, each in the lab kind it runs on (cloud-vm uses
// no card port: any kind does; cx6dx-host here).
var storyCases = []storyCase{
	// bf2-dpu keeps its far ends in the wire netns (local, one clock): its
	// forced check below judges max_p99_us in a latency run, which needs
	// both far ends on one machine
	{"bf2-dpu", "bf2-dpu", exitPowerCycle, false},
	{"bf3-dpu", "bf3-dpu", exitPowerCycle, true},
	{"connectx-host", "cx6dx-host", 0, false}, // its rdma step sets the admin-down enp59s0f1np1 up; the lab's port keeper makes mlx5_1 ACTIVE
	{"cloud-vm", "cx6dx-host", 0, false},
}

// storyReport is the part of rig.report/v1 the story asserts.
type storyReport struct {
	SchemaVersion string      `json:"schemaVersion"`
	Steps         []storyStep `json:"steps"`
	Summary       struct {
		Changes int  `json:"changes"`
		Success bool `json:"success"`
	} `json:"summary"`
}

type storyStep struct {
	Name          string            `json:"name"`
	Status        string            `json:"status"`
	Substitutions []json.RawMessage `json:"substitutions"`
	Result        *storyCheck       `json:"result"`
}

// storyCheck is the part of rig.check/v2 the story asserts.
type storyCheck struct {
	Pass bool `json:"pass"`
	Load *struct {
		Kind          string  `json:"kind"`
		LossBudgetPct float64 `json:"lossBudgetPct"`
		LabFigures    bool    `json:"labFigures"`
	} `json:"load"`
	Runs        []storyRun `json:"runs"`
	LatencyRuns []storyRun `json:"latencyRuns"`
	FarEnds     []struct {
		Port   string `json:"port"`
		NetNS  string `json:"netns"`
		Serve  string `json:"serve"`
		Netdev string `json:"netdev"`
		HostPF *int   `json:"hostPF"`
	} `json:"farEnds"`
	Offload *struct {
		Mode    string `json:"mode"`
		Pass    bool   `json:"pass"`
		Port    string `json:"port"`
		Flows   int    `json:"flows"`
		Verdict string `json:"verdict"`
		Causes  []struct {
			Kind  string `json:"kind"`
			Cause string `json:"cause"`
		} `json:"causes"`
	} `json:"offload"`
}

type storyRun struct {
	RxMpps   float64 `json:"rxMpps"`
	Sent     float64 `json:"sent"`
	Received float64 `json:"received"`
	Loss     struct {
		CountsAgree bool    `json:"countsAgree"`
		GapPct      float64 `json:"rxVsOvsTxGapPct"`
	} `json:"loss"`
	Ports []struct {
		Host string `json:"host"`
	} `json:"ports"`
	LossPct     float64 `json:"lossPct"`
	Overloaded  string  `json:"overloaded"`
	LatencyNote string  `json:"latencyNote"`
	Thresholds  []struct {
		Name string `json:"name"`
		Pass bool   `json:"pass"`
	} `json:"thresholds"`
}

// verdicts are a run's threshold names, with the failed ones marked.
func (r storyRun) verdicts() string {
	var v []string
	for _, t := range r.Thresholds {
		if !t.Pass {
			t.Name += "!"
		}
		v = append(v, t.Name)
	}
	return strings.Join(v, ",")
}

// causeKinds are an offload report's cause kinds.
func (c *storyCheck) causeKinds() string {
	var k []string
	if c != nil && c.Offload != nil {
		for _, x := range c.Offload.Causes {
			k = append(k, x.Kind)
		}
	}
	return strings.Join(k, ",")
}

// TestPrivilegedLabStory: each embedded playbook converges in a lab with
// the unchanged rig (first apply exit 3 where DPU mode needs a power cycle,
// then `rig lab power-cycle`), the next apply passes its check (JSON
// report: pass, Mpps > 0), the one after makes 0 changes and passes again;
// then the lab goes down and the host is as before (host state as in
// TestPrivilegedLabUpDownLeavesHostAsBefore, plus hugepage files under the
// host's hugetlbfs mounts, /var/run/dpdk and no process left in a lab's
// namespaces).
func TestPrivilegedLabStory(t *testing.T) {
	testutil.RequirePrivileged(t)
	// the labs of a round run at once: what the biggest round takes
	var most []hugetest.Need
	for _, round := range storyRounds {
		var need []hugetest.Need
		for _, i := range round {
			need = append(need, playbookNeeds(t, storyCases[i].playbook)...)
		}
		if hugetest.Pages(need...) > hugetest.Pages(most...) {
			most = need
		}
	}
	hugetest.ReserveFor(t, most...)
	bin := buildRig(t)
	warmNetns(t)
	before, files0 := snapshotHost(t), hugeFiles(t)
	t0 := time.Now()
	for r, round := range storyRounds {
		t.Run(fmt.Sprintf("round%d", r+1), func(t *testing.T) {
			var ovsStart, traffic sync.Mutex
			forced := make(chan struct{}) // bf2-dpu's forced check is done (or bf2-dpu ended)
			for _, i := range round {
				c := storyCases[i]
				t.Run(c.playbook, func(t *testing.T) {
					t.Parallel()
					name := fmt.Sprintf("st%d-%d", i, os.Getpid()%10000)
					ids, serves := runStory(t, bin, c, name, &ovsStart, &traffic, forced)
					if code, out, errOut := runBin(t, bin, "lab", "down", name); code != 0 {
						t.Fatalf("lab down %s: exit %d\n%s%s", name, code, out, errOut)
					}
					if left := procsIn(ids); len(left) > 0 {
						t.Errorf("%s: processes still in the lab's namespaces after down: %v", c.playbook, left)
					}
					for _, s := range serves {
						select {
						case <-s.done:
						case <-time.After(5 * time.Second):
							t.Errorf("%s: rig bench serve %s still runs 5 s after lab down", c.playbook, s.addr)
						}
					}
				})
			}
		})
	}
	waitEqual(t, before)
	if files := hugeFiles(t); fmt.Sprint(files) != fmt.Sprint(files0) {
		t.Errorf("hugepage files and DPDK runtime dirs: before %v\nafter %v", files0, files)
	}
	t.Logf("story of %d playbooks: %v", len(storyCases), time.Since(t0).Round(time.Second))
}

// storyRounds are the story's labs, by index into storyCases: the two DPU
// labs at once (each lab's OvS polls on CPU 1, pmd-cpu-mask 0x2; their
// checks take turns, runStory's traffic), then the others one by one:
// cloud-vm's check adds vhost-user ports whose mempool its OvS (no
// dpdk-socket-limit) grows beyond its socket memory, and the connectx-host
// OvS starting beside it found 836 MB of the 1024 it asks (1 fresh-clone
// run).
var storyRounds = [][]int{{0, 1}, {2}, {3}}

// runStory brings lab name up and runs c in it; it returns the lab's
// namespace ids (for the leftover process scan after down) and the serves
// it started on the lab's host and peer (which lab down ends).
//
// ovsStart is held while the lab's OvS starts DPDK (the first apply
// restarts ovs-vswitchd with it, a power cycle starts it again): two EALs
// taking 1 GiB of hugepages at once raced for the free pages (one saw
// "Not enough memory available on socket 0! Requested: 1024MB, available:
// 886MB" with the pool sized for both: in 1 fresh-clone run), so the labs
// of a round start their OvS one at a time.
//
// traffic is held while an apply or check sends the check's traffic: the
// checks of a round take turns. bf3-dpu's through the three machines has
// two dataplanes of its own (the serves' generator and receiver) polling
// beside the OvS PMDs; beside bf2-dpu's forced check (as fast as possible)
// its generator fell short of the lab's 20 kpps twice in a row (0.017
// Mpps: exit 5, 1 run). The forced check's overload still has the other
// lab's PMD polling on its CPU: a lab of the three machines stays up until
// forced is closed (bf2-dpu closes it when its forced check is done: as
// fast as possible through af_packet alone on its CPU it lost 0-0.6 %,
// under its 1 % budget, and was no overload; 2 runs).
func runStory(t *testing.T, bin string, c storyCase, name string, ovsStart, traffic *sync.Mutex, forced chan struct{}) (map[uint64]bool, []*serveProc) {
	t.Helper()
	if c.playbook == "bf2-dpu" {
		defer close(forced)
	}
	if c.machines {
		defer func() {
			select {
			case <-forced:
			case <-time.After(3 * time.Minute):
			}
		}()
	}
	nss := []string{"/run/netns/rig-lab-" + name, "/run/netns/rig-lab-" + name + "-wire", filepath.Join(lab.StateRoot, name, "mnt")}
	var far []string
	var serves []*serveProc
	if c.machines {
		// the three machines: serves on the host (its PF0, the far end of
		// pf0hpf, on tmfifo_net0) and on the peer (its p0, on the
		// management link), started as a user would; the Arm's rig names
		// p0's far end and pf0hpf's token (its far port: the host's PF0,
		// as by default)
		labUp(t, bin, c.kind, name)
		nss = append(nss, "/run/netns/rig-lab-"+name+"-host", "/run/netns/rig-lab-"+name+"-peer", filepath.Join(lab.StateRoot, name, "host", "mnt"))
		token := writeToken(t)
		on := func(m string) []string { return []string{bin, "lab", "exec", name, "--on", m, "--"} }
		hostPF0 := map[string]string{"bf2-dpu": "enp225s0f0np0", "bf3-dpu": "enp161s0f0np0"}[c.kind]
		serves = []*serveProc{
			startServeOn(t, on("host"), bin, token, storyHostServe, "--allow-netdev", hostPF0),
			startServeOn(t, on("peer"), bin, token, storyPeerServe, "--allow-netdev", "p0"),
		}
		far = []string{"--far-end", "p0:serve=" + storyPeerServe + ",netdev=p0,token_file=" + token, "--far-end", "pf0hpf:serve=" + storyHostServe + ",token_file=" + token}
	} else {
		// the check's far ends in the lab's wire netns (its local far ends)
		labUp(t, bin, c.kind, name, "--far-ends", "wire")
	}
	ids := map[uint64]bool{}
	for _, p := range nss {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			t.Fatal(err)
		}
		ids[st.Ino] = true
	}
	if code, out, _ := runBin(t, bin, "lab", "status", name); code != 0 || !strings.Contains(out, "substitution: mlx5 → net_af_packet") {
		t.Errorf("lab status %s: exit %d, no substitution line:\n%s", name, code, out)
	}
	up := append([]string{"lab", "exec", name, "--", bin, "-o", "json", "up", "-p", c.playbook}, far...)
	var rep *storyReport
	holding(ovsStart, func() { rep = applyJSON(t, bin, up, c.first) })
	if c.first == exitPowerCycle {
		if st := stepOf(rep, "check"); st == nil || st.Status != "not-run" {
			t.Errorf("%s: first apply: check %+v, want not-run (power cycle pending)", c.playbook, st)
		}
		holding(ovsStart, func() {
			if code, out, errOut := runBin(t, bin, "lab", "power-cycle", name); code != 0 {
				t.Fatalf("power-cycle: exit %d\n%s%s", code, out, errOut)
			}
			waitLabDPDK(t, bin, name) // the restarted OvS starts DPDK after power-cycle returns
		})
	}
	for i := 2; i <= 3; i++ {
		var t0 time.Time
		holding(traffic, func() { t0 = time.Now(); rep = applyJSON(t, bin, up, 0) })
		chk := stepOf(rep, "check")
		if chk == nil || chk.Status != "ok" || chk.Result == nil || !chk.Result.Pass || len(chk.Result.Runs) == 0 || chk.Result.Runs[0].RxMpps <= 0 {
			t.Fatalf("%s apply %d: check %+v, want ok with a passing result", c.playbook, i, chk)
		}
		// the check judged at its stated load (issue 30): in a lab, the
		// playbook's lab figures, a fixed rate within its loss budget, and
		// latency judged there (below capacity); cloud-vm as fast as
		// possible within its budget, no latency judged
		r, l := chk.Result.Runs[0], chk.Result.Load
		wantKind, wantVerdicts := "rate", "max_loss_pct,max_p99_us"
		if c.playbook == "cloud-vm" {
			wantKind, wantVerdicts = "max", "min_mpps,max_loss_pct"
		}
		if wantKind == "rate" && r.LossPct > 0.1 && strings.Contains(r.LatencyNote, "saturated") {
			wantVerdicts = "max_loss_pct" // within the lab's 1 % budget, but bench's saturation mark (> 0.1 % lost): its latency is queueing, not judged
		}
		if c.machines {
			// two clocks (the peer's generator, the host's receiver): no
			// latency, so max_p99_us is not judged, and said why
			wantVerdicts = "max_loss_pct"
			if !strings.Contains(r.LatencyNote, "the far ends are on two machines") {
				t.Errorf("%s apply %d: latency note %q, want the far ends on two machines", c.playbook, i, r.LatencyNote)
			}
			storyFarAgree(t, c.playbook, i, chk.Result, serves)
		}
		if l == nil || l.Kind != wantKind || l.LabFigures != (wantKind == "rate") || r.LossPct > l.LossBudgetPct || r.Overloaded != "" || r.verdicts() != wantVerdicts {
			t.Errorf("%s apply %d: load %+v, run %+v; want %s within its budget, verdicts %s", c.playbook, i, l, r, wantKind, wantVerdicts)
		}
		t.Logf("%s apply %d: check %.3f Mpps, loss %.2f%% (budget %g%%), %d change(s), apply %v", c.playbook, i, r.RxMpps, r.LossPct, l.LossBudgetPct, rep.Summary.Changes, time.Since(t0).Round(time.Millisecond))
	}
	if rep.Summary.Changes != 0 {
		t.Errorf("%s: third apply made %d change(s), want 0", c.playbook, rep.Summary.Changes)
	}
	// the truth in a lab: not offloaded; through the card's ports because
	// no mlx5 eSwitch is behind the lab's stand-ins, through the check's
	// own vhost-user ports because they are no card's
	want := "virtual-lab" // bf2-dpu, bf3-dpu: hw-offload on, as seed 000
	switch c.playbook {
	case "cloud-vm":
		want = "hw-offload-off,port-not-on-card"
	case "connectx-host":
		want = "virtual-lab,hw-offload-off"
	}
	if chk := stepOf(rep, "check").Result; chk.Offload == nil || chk.Offload.Verdict != "not offloaded" || chk.Offload.Flows < 1 || !chk.Offload.Pass || chk.causeKinds() != want {
		t.Errorf("%s: offload %+v, want not offloaded (preferred: passes), causes %s", c.playbook, chk.Offload, want)
	}
	if c.playbook == "bf2-dpu" {
		// the same check forced to fail three ways at once (one run, as
		// fast as possible, and one latency run): offload: required (the
		// lab is named as the cause), an overload (p0 policed below what the
		// generator sends as fast as possible: the loss budget fails naming the capacity,
		// and that run's latency is queueing, not judged; it is judged in
		// the run at latency_load of the capacity) and an impossible floor;
		// exit 4
		raw, _ := playbooks.Embedded("bf2-dpu")
		forced := strings.Replace(string(raw), "\n  offload: preferred\n", "\n  offload: required\n  latency_load: 10%\n", 1)
		forced = regexp.MustCompile(`(?m)^  lab:.*\n(    .*\n)+`).ReplaceAllString(forced, "  lab:\n    rate: max\n    duration: 2s\n    thresholds: {min_mpps: 10000, max_loss_pct: 1, max_p99_us: 250000}\n")
		pb := filepath.Join(t.TempDir(), "bf2-forced.yaml")
		if err := os.WriteFile(pb, []byte(forced), 0o644); err != nil {
			t.Fatal(err)
		}
		// the overload must not hang on how busy the host's CPUs are (on a
		// quiet 2-CPU host af_packet may keep up with the generator): OvS
		// polices p0's ingress to 50 Mbit/s (about 98 kpps of 64 B frames,
		// below the 0.2-0.7 Mpps the lab's generator offers) for the forced
		// run, so as fast as possible is always over capacity. Not lower:
		// the latency run goes at 10 % of the capacity, and at 5 Mbit/s
		// (1.4 kpps, 2880 frames) one lost burst of 32 was over its 1 %
		// budget (1 suite run of 2)
		police := func(kbps string) {
			if code, out, errOut := runBin(t, bin, "lab", "exec", name, "--", "ovs-vsctl", "--timeout=10", "set", "interface", "p0",
				"ingress_policing_rate="+kbps, "ingress_policing_burst=500"); code != 0 {
				t.Fatalf("ovs-vsctl set interface p0 ingress_policing_rate=%s: exit %d\n%s%s", kbps, code, out, errOut)
			}
		}
		police("50000")
		var code int
		var out, errOut string
		holding(traffic, func() {
			code, out, errOut = runBin(t, bin, "lab", "exec", name, "--", bin, "-o", "json", "check", "-p", pb)
		})
		police("0")
		var chk struct {
			storyCheck
			Error string `json:"error"`
		}
		if err := json.Unmarshal([]byte(out), &chk); err != nil || code != exitBelowThreshold || chk.Pass || chk.Offload == nil || chk.Offload.Pass ||
			chk.Offload.Mode != "required" || chk.causeKinds() != "virtual-lab" || !strings.Contains(chk.Offload.Causes[0].Cause, "no mlx5 eSwitch is behind the lab's ports") {
			t.Fatalf("bf2-dpu forced to fail in the lab: exit %d (want %d), %v\n%s%s", code, exitBelowThreshold, err, out, errOut)
		}
		r := chk.Runs[0]
		if !strings.Contains(r.Overloaded, "overloaded at capacity") || r.verdicts() != "min_mpps!,max_loss_pct!" || !strings.Contains(r.LatencyNote, "queueing") ||
			!strings.Contains(chk.Error, "min_mpps (64 B) 10000") || !strings.Contains(chk.Error, "max_loss_pct (64 B) 1: measured") || !strings.Contains(chk.Error, "overloaded at capacity") {
			t.Errorf("forced overload: run %+v, error %q; want min_mpps and max_loss_pct failed, overloaded naming the capacity, latency not judged", r, chk.Error)
		}
		if len(chk.LatencyRuns) != 1 || !strings.Contains(chk.LatencyRuns[0].verdicts(), "max_p99_us") {
			t.Errorf("latency runs %+v, want one below capacity judging max_p99_us", chk.LatencyRuns)
		}
		if !strings.Contains(errOut, "check: load: as fast as possible") || !strings.Contains(errOut, "check:   [") {
			t.Errorf("no progress lines on stderr:\n%s", errOut)
		}
	}
	if ovs := stepOf(rep, "ovs"); c.kind != "cx6dx-host" && (ovs == nil || len(ovs.Substitutions) == 0) {
		t.Errorf("%s: report names no substitution in the ovs step: %+v", c.playbook, ovs)
	}
	return ids, serves
}

// The serves of a lab of the three machines: the host's on its end of
// tmfifo_net0, the peer's on its end of the management link.
const (
	storyHostServe = "192.168.100.1:7400"
	storyPeerServe = "192.168.101.1:7400"
)

// storyFarAgree asserts a check through the three machines: its far ends
// in the JSON report (p0's on the peer's serve, pf0hpf's on the host's,
// the host's PF0), frames counted on every machine and agreeing (the
// host's serve's rx vs OvS's egress tx on the Arm within 0.1 %), and the
// serves ran the traffic: the peer's a generator, the host's a receiver.
func storyFarAgree(t *testing.T, playbook string, apply int, chk *storyCheck, serves []*serveProc) {
	t.Helper()
	var got []string
	for _, f := range chk.FarEnds {
		pf := -1
		if f.HostPF != nil {
			pf = *f.HostPF
		}
		got = append(got, fmt.Sprintf("%s:%s/%s/%s/%d", f.Port, f.Serve, f.NetNS, f.Netdev, pf))
	}
	if want := "p0:" + storyPeerServe + "//p0/-1 pf0hpf:" + storyHostServe + "///0"; strings.Join(got, " ") != want {
		t.Errorf("%s apply %d: farEnds %v, want %s", playbook, apply, got, want)
	}
	r := chk.Runs[0]
	if !r.Loss.CountsAgree || r.Loss.GapPct > 100*check.AgreeFraction || r.Received < 1 || r.Sent < r.Received {
		t.Errorf("%s apply %d: across the machines: sent %v (peer), received %v (host), rig rx vs OvS egress tx %.4f%% apart, agree %v; want within %g%%",
			playbook, apply, r.Sent, r.Received, r.Loss.GapPct, r.Loss.CountsAgree, 100*check.AgreeFraction)
	}
	if len(r.Ports) != 2 || r.Ports[0].Host != storyPeerServe || r.Ports[1].Host != storyHostServe {
		t.Errorf("%s apply %d: the run's ports %+v, want the generator on %s and the receiver on %s", playbook, apply, r.Ports, storyPeerServe, storyHostServe)
	}
	if !strings.Contains(serves[1].log.String(), "running gen") || !strings.Contains(serves[0].log.String(), "running rx") {
		t.Errorf("%s apply %d: the peer's serve ran no generator or the host's no receiver:\npeer:\n%s\nhost:\n%s", playbook, apply, serves[1].log.String(), serves[0].log.String())
	}
}

// waitLabDPDK waits (up to 60 s) until the lab's OvS says
// dpdk_initialized=true: its EAL has taken its memory.
func waitLabDPDK(t *testing.T, bin, name string) {
	t.Helper()
	var out string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		_, out, _ = runBin(t, bin, "lab", "exec", name, "--", "ovs-vsctl", "--timeout=5", "get", "Open_vSwitch", ".", "dpdk_initialized")
		if strings.TrimSpace(out) == "true" {
			return
		}
	}
	t.Fatalf("lab %s: dpdk_initialized still %q 60 s after the power cycle", name, strings.TrimSpace(out))
}

// holding runs f with m held (released also when f ends the test).
func holding(m *sync.Mutex, f func()) {
	m.Lock()
	defer m.Unlock()
	f()
}

func applyJSON(t *testing.T, bin string, args []string, want int) *storyReport {
	t.Helper()
	code, out, errOut := runBin(t, bin, args...)
	var rep storyReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != want || rep.SchemaVersion != "rig.report/v1" {
		t.Fatalf("%v: exit %d (want %d), %v\n%s%s", args, code, want, err, out, errOut)
	}
	return &rep
}

func stepOf(rep *storyReport, name string) *storyStep {
	for i := range rep.Steps {
		if rep.Steps[i].Name == name {
			return &rep.Steps[i]
		}
	}
	return nil
}

// procsIn lists the processes whose network or mount namespace is one of ids.
func procsIn(ids map[uint64]bool) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		for _, ns := range []string{"net", "mnt"} {
			var st unix.Stat_t
			if unix.Stat(fmt.Sprintf("/proc/%d/ns/%s", pid, ns), &st) == nil && ids[st.Ino] && !isZombie(pid) {
				out = append(out, fmt.Sprintf("%d %s", pid, comm(pid)))
				break
			}
		}
	}
	return out
}

func comm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}

// hugeFiles lists the files under the host's hugetlbfs mounts (outside
// other tests' temp dirs) and the entries of /var/run/dpdk.
func hugeFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, m := range hostMounts(t) {
		f := strings.Fields(m)
		if f[1] != "hugetlbfs" || strings.HasPrefix(f[0], os.TempDir()) {
			continue
		}
		ents, _ := os.ReadDir(f[0])
		for _, e := range ents {
			out = append(out, filepath.Join(f[0], e.Name()))
		}
	}
	ents, _ := os.ReadDir("/var/run/dpdk")
	for _, e := range ents {
		out = append(out, filepath.Join("/var/run/dpdk", e.Name()))
	}
	sort.Strings(out)
	return out
}

func nrHugepages(t *testing.T) int { t.Helper(); return poolCount(t, "nr_hugepages") }

func freeHugepages(t *testing.T) int { t.Helper(); return poolCount(t, "free_hugepages") }

// poolCount reads a count of the host's 2 MiB pool.
func poolCount(t *testing.T, name string) int {
	t.Helper()
	b, err := os.ReadFile("/sys/kernel/mm/hugepages/hugepages-2048kB/" + name)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPrivilegedLabDownGivesBackHugepages: rig inside a lab grows the
// host's 2 MiB pool; with two labs up, the first down leaves it (the other
// lab may use it), the last down shrinks it to its size when the first lab
// came up and says so.
func TestPrivilegedLabDownGivesBackHugepages(t *testing.T) {
	testutil.RequirePrivileged(t)
	hugetest.Lock(t)
	bin := buildRigNoCgo(t)
	if names, _ := lab.Names(); len(names) > 0 {
		t.Skipf("labs %v are up on this host: the pool is given back when the last lab goes down", names)
	}
	nr0 := nrHugepages(t)
	t.Cleanup(func() {
		_ = os.WriteFile("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", []byte(strconv.Itoa(nr0)), 0)
	})
	a, b := fmt.Sprintf("hp-a-%d", os.Getpid()%10000), fmt.Sprintf("hp-b-%d", os.Getpid()%10000)
	labUp(t, bin, "bf2-dpu", a)
	labUp(t, bin, "cx6dx-host", b)
	if code, out, errOut := runBin(t, bin, "lab", "exec", a, "--", bin, "hugepages", "set", "--size", "2M", "--count", strconv.Itoa(nr0+8)); code != 0 {
		t.Fatalf("hugepages set inside lab %s: exit %d\n%s%s", a, code, out, errOut)
	}
	grown := nrHugepages(t)
	if grown != nr0+8 {
		t.Fatalf("nr_hugepages %d after rig hugepages set --count %d inside the lab (was %d)", grown, nr0+8, nr0)
	}
	code, out, errOut := runBin(t, bin, "lab", "down", a)
	if code != 0 || strings.Contains(out, "hugepages") || nrHugepages(t) != grown {
		t.Fatalf("down %s with %s still up: exit %d, nr_hugepages %d (want %d, left alone)\n%s%s", a, b, code, nrHugepages(t), grown, out, errOut)
	}
	code, out, errOut = runBin(t, bin, "lab", "down", b)
	want := fmt.Sprintf("hugepages 2048kB: nr_hugepages %d -> %d, as when lab %s came up", grown, nr0, a)
	if code != 0 || !strings.Contains(out, want) || nrHugepages(t) != nr0 {
		t.Fatalf("down of the last lab: exit %d, nr_hugepages %d (want %d), output lacks %q:\n%s%s", code, nrHugepages(t), nr0, want, out, errOut)
	}
	if _, err := os.Lstat(filepath.Join(lab.StateRoot, ".hugepages.json")); err == nil {
		t.Errorf("the pool record is still there after the last lab went down")
	}
}
