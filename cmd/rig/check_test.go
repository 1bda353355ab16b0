package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"rig/internal/testutil"
	"rig/internal/testutil/hugetest"
	"rig/provision"
	"rig/provision/check"
)

func asRoot(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var o, e bytes.Buffer
	code := runApp(&app{out: &o, errOut: &e, output: "text", geteuid: func() int { return 0 }}, args)
	return code, o.String(), e.String()
}

func TestCheckCommandUsage(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("name: bad\ncheck:\n  bridge: br0\n  frame_size: 10\n  thresholds:\n    max_loss_pct: 200\n"), 0o644)
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no check section", []string{"check", "-p", "hugepages-2m"}, exitUsage, "playbook embedded:hugepages-2m has no check: section"},
		{"bad field", []string{"check", "-p", bad}, exitUsage, bad + ":4: check.frame_size: want 64..9000 bytes"},
		{"bad threshold", []string{"check", "-p", bad}, exitUsage, bad + ":6: check.thresholds.max_loss_pct: want 0 (not checked) up to 100, got 200"},
		{"no playbook", []string{"check"}, exitUsage, `required flag(s) "playbook" not set`},
		{"metrics dir missing", []string{"check", "-p", "ovs-check", "--metrics-file", dir + "/no/rig.prom"}, exitUsage, "--metrics-file " + dir + "/no/rig.prom: directory " + dir + "/no does not exist"},
		{"metrics file is a dir", []string{"check", "-p", "ovs-check", "--metrics-file", dir}, exitUsage, "is a directory"},
		{"up metrics, no check", []string{"up", "-p", "hugepages-2m", "--metrics-file", dir + "/rig.prom"}, exitUsage, "playbook embedded:hugepages-2m has no check: section, so there is nothing to write"},
		{"up metrics, check skipped", []string{"up", "-p", "ovs-check", "--skip", "check", "--metrics-file", dir + "/rig.prom"}, exitUsage, "the check step is not selected"},
	}
	for _, c := range cases {
		code, out, errOut := asRoot(t, c.args...)
		if code != c.code || !strings.Contains(out+errOut, c.want) {
			t.Errorf("%s: code %d (want %d)\n%s%s", c.name, code, c.code, out, errOut)
		}
	}
	var o, e bytes.Buffer
	code := runApp(&app{out: &o, errOut: &e, output: "text", geteuid: func() int { return 1000 }}, []string{"check", "-p", "ovs-check"})
	if code != exitFailure || !strings.Contains(e.String(), "rig check needs root") {
		t.Errorf("non-root: %d %s", code, e.String())
	}
	_, out, _ := rig(t, "check", "--help")
	if !strings.Contains(out, "4  throughput check below threshold") || !strings.Contains(out, "0x7269672d63686b") {
		t.Errorf("help:\n%s", out)
	}
}

func TestReportExitCodes(t *testing.T) {
	for _, c := range []struct {
		s    provision.Summary
		want int
	}{
		{provision.Summary{Failed: 1, BelowThreshold: 1}, exitBelowThreshold},
		{provision.Summary{Failed: 1, Invalid: 1}, exitInvalid},
		{provision.Summary{Failed: 2, BelowThreshold: 1}, exitFailure},
		{provision.Summary{Failed: 1}, exitFailure},
		{provision.Summary{PendingReboot: 1}, exitPowerCycle},
		{provision.Summary{OK: 3}, exitOK},
	} {
		err := reportExit(&provision.Report{Summary: c.s})
		code := exitOK
		var ee *exitError
		if errors.As(err, &ee) {
			code = ee.code
		}
		if code != c.want {
			t.Errorf("%+v: exit %d, want %d", c.s, code, c.want)
		}
	}
}

func TestEmbeddedOVSCheckPlaybook(t *testing.T) {
	code, out, errOut := rig(t, "playbooks", "ovs-check")
	if code != 0 || !strings.Contains(out, "check:") || !strings.Contains(out, "rig up -p ovs-check --rundir") || !strings.Contains(out, "min_mpps") {
		t.Fatalf("%d\n%s%s", code, out, errOut)
	}
	code, out, errOut = asRoot(t, "plan", "check", "-p", "ovs-check", "--root", t.TempDir())
	if code != exitFailure || !strings.Contains(out+errOut, "check") {
		t.Fatalf("plan on an empty root: %d\n%s%s", code, out, errOut)
	}
}

// ---- privileged: the built rig, a private OvS in its own netns ----

// checkLab is a private OvS in a network namespace of its own (a netdev
// datapath's ovs-netdev tap would collide with another test's OvS), driven
// by the rig binary built for the test.
type checkLab struct {
	t      *testing.T
	bin    string
	netns  string
	rundir string
	pb     string
}

// buildRig is rig built with the static dataplane (go build -tags
// dpdkstatic) for the tests that run the binary: once per test process
// (rigBinary).
func buildRig(t *testing.T) string {
	t.Helper()
	return rigBinary.get(t, "CGO_LDFLAGS_ALLOW=-Wl,--(no-)?whole-archive", "-tags", "dpdkstatic")
}

// builtRig is a rig binary built once for the test process: each link of
// the static dataplane took 3-4 s of a 2-CPU machine (a cgo-less one 1-2
// s), and about 40 tests run rig; tests only run it (none writes, moves or
// removes it). TestMain removes its directory at the end.
type builtRig struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// The rigs of this test process: with the static dataplane (buildRig) and
// without cgo (buildRigNoCgo).
var rigBinary, rigNoCgoBinary builtRig

// get builds rig with env added to the environment and flags given to go
// build, the first time.
func (b *builtRig) get(t *testing.T, env string, flags ...string) string {
	t.Helper()
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "rig-testbin-"); b.err != nil {
			return
		}
		bin := filepath.Join(b.dir, "rig")
		cmd := exec.Command("go", append(append([]string{"build"}, flags...), "-o", bin, ".")...)
		cmd.Env = append(os.Environ(), env)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s (%s): %v\n%s", strings.Join(flags, " "), env, err, out)
			return
		}
		b.path = bin
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// remove removes what get built.
func (b *builtRig) remove() {
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}

// newCheckLab reserves the hugepages the playbook's OvS and check take
// (playbookNeeds), starts the lab and writes the playbook to l.pb.
func newCheckLab(t *testing.T, playbook string) *checkLab {
	t.Helper()
	return newCheckLabWith(t, playbook)
}

// newCheckLabWith is newCheckLab with hugepages for more than the
// playbook's OvS and check (far ends' dataplanes on this machine).
func newCheckLabWith(t *testing.T, playbook string, extra ...hugetest.Need) *checkLab {
	t.Helper()
	testutil.RequirePrivileged(t)
	if _, err := exec.LookPath("ovs-vsctl"); err != nil {
		t.Skip("needs openvswitch")
	}
	hugetest.ReserveFor(t, append(playbookNeeds(t, playbook), extra...)...)
	l := &checkLab{t: t, bin: buildRig(t), netns: fmt.Sprintf("rigchk%d", os.Getpid()%100000)}
	dir, err := os.MkdirTemp("", "rigchk")
	if err != nil {
		t.Fatal(err)
	}
	l.rundir = filepath.Join(dir, "ovs")
	l.pb = filepath.Join(dir, "pb.yaml")
	if err := os.WriteFile(l.pb, []byte(playbook), 0o644); err != nil {
		t.Fatal(err)
	}
	l.sh("ip", "netns", "add", l.netns)
	l.sh("ip", "-n", l.netns, "link", "set", "lo", "up")
	testutil.CleanDefaultDPDKRuntimeDir(t) // runs after the daemon stop below
	t.Cleanup(func() {
		l.rig("ovs", "daemon", "stop", "--rundir", l.rundir)
		exec.Command("ip", "netns", "del", l.netns).Run()
		os.RemoveAll(dir)
	})
	if code, out, errOut := l.rig("ovs", "daemon", "start", "--rundir", l.rundir); code != 0 {
		t.Fatalf("daemon start: %d\n%s%s", code, out, errOut)
	}
	return l
}

func (l *checkLab) sh(name string, args ...string) string {
	l.t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		l.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// cmd is rig ARGS inside the lab's netns.
func (l *checkLab) cmd(args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", l.netns, l.bin}, args...)...)
}

func (l *checkLab) rig(args ...string) (int, string, string) {
	c := l.cmd(args...)
	var o, e bytes.Buffer
	c.Stdout, c.Stderr = &o, &e
	err := c.Run()
	var xe *exec.ExitError
	if errors.As(err, &xe) {
		return xe.ExitCode(), o.String(), e.String()
	} else if err != nil {
		l.t.Fatal(err)
	}
	return 0, o.String(), e.String()
}

func (l *checkLab) vsctl(args ...string) string {
	return l.sh("ip", append([]string{"netns", "exec", l.netns, "ovs-vsctl", "--db=unix:" + l.rundir + "/db.sock", "--timeout=15"}, args...)...)
}

func (l *checkLab) cookieFlows(bridge string) string {
	return l.sh("ip", "netns", "exec", l.netns, "ovs-ofctl", "dump-flows", "unix:"+l.rundir+"/"+bridge+".mgmt", "cookie=0x7269672d63686b/-1")
}

// checkJSON runs `rig -o json check` and decodes it.
func (l *checkLab) checkJSON(extra ...string) (int, map[string]any, string) {
	code, out, errOut := l.rig(append([]string{"-o", "json", "check", "-p", l.pb, "--rundir", l.rundir, "--lock-file", l.rundir + "/lock"}, extra...)...)
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		l.t.Fatalf("check -o json: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	if code == exitFailure {
		// a failed check says why in its JSON, not on stderr: keep it in
		// what a failing test prints
		errOut += fmt.Sprintf("check -o json error: %v\ncause: %v\nfix: %v\n", m["error"], m["cause"], m["fix"])
	}
	return code, m, errOut
}

const checkPlaybook = `name: t
ovs:
  config:
    dpdk-init: "try"
    dpdk-socket-mem: "128"
    dpdk-socket-limit: "256"
    dpdk-lcore-mask: "0x1"
    pmd-cpu-mask: "0x2"
    dpdk-extra: "--no-pci --no-telemetry"
  bridges:
    - name: br-t
check:
  duration: %s
  warmup: %s
  rate: max
  thresholds: {min_mpps: 0.05, max_loss_pct: %s}
`

// run0 returns the first run of a check's JSON result.
func run0(t *testing.T, m map[string]any) map[string]any {
	runs, _ := m["runs"].([]any)
	if len(runs) != 1 {
		t.Fatalf("want 1 run: %v", m)
	}
	return runs[0].(map[string]any)
}

func TestPrivilegedCheckKilledIsCleanedUpByTheNextRun(t *testing.T) {
	// 10 s of traffic: a dataplane that outlived rig would still run
	// well after the 5 s the test gives it to go
	l := newCheckLab(t, fmt.Sprintf(checkPlaybook, "10s", "1s", "2"))
	if code, out, errOut := l.rig("up", "--skip", "check", "-p", l.pb, "--rundir", l.rundir, "--lock-file", l.rundir+"/lock"); code != 0 {
		t.Fatalf("up: %d\n%s%s", code, out, errOut)
	}
	// a check killed (SIGKILL) while its traffic runs
	c := l.cmd("check", "-p", l.pb, "--rundir", l.rundir, "--lock-file", l.rundir+"/lock")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(l.cookieFlows("br-t"), "cookie=0x7269672d63686b") {
		if time.Now().After(deadline) {
			c.Process.Kill()
			t.Fatal("the check added no flow within 60 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // into the traffic
	// rig ovs status --flows while the traffic runs: the check's flows in
	// at rig-chk-in, in software (hw-offload unset, a vhost-user port)
	row := regexp.MustCompile(`\nrig-chk-in +[1-9][0-9]* +[1-9][0-9]* +0 +0 +[1-9][0-9]* +ovs:[1-9][0-9]* +not offloaded\n`)
	var code int
	var out, errOut string
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) { // until the measured run's frames flow
		if code, out, errOut = l.rig("ovs", "status", "--flows", "--rundir", l.rundir); row.MatchString(out) || time.Now().After(deadline) {
			break
		}
	}
	for _, w := range []string{"datapath flows (ovs-appctl", "FLOWS  PACKETS  OFFLOADED  PARTIAL  NOT  DATAPATHS  VERDICT", "rig-chk-in: other_config:hw-offload is not set",
		"rig-chk-in: port rig-chk-in is a dpdkvhostuserclient port, not an uplink or representor"} {
		if !strings.Contains(out, w) {
			t.Errorf("ovs status --flows (exit %d) lacks %q:\n%s%s", code, w, out, errOut)
		}
	}
	if !row.MatchString(out) {
		t.Errorf("ovs status --flows: no rig-chk-in row with flows, packets, none offloaded, dp:ovs:\n%s", out)
	}
	children := childPIDs(t, c.Process.Pid)
	if len(children) == 0 {
		t.Fatalf("rig check (pid %d) runs no dataplane child while its flows are in place", c.Process.Pid)
	}
	c.Process.Signal(syscall.SIGKILL)
	c.Wait()
	// the dataplane dies with rig (PR_SET_PDEATHSIG), it does not run on
	for _, pid := range children {
		for gone := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
				break
			}
			if time.Now().After(gone) {
				t.Fatalf("dataplane child %d still runs 5 s after rig was killed", pid)
			}
		}
		// Known: about half the time the killed check's dataplane (virtio-user
		// ports toward OvS) ends without removing its EAL runtime dir (empty, or
		// only the telemetry sockets); the cause is not found yet. The test
		// restores the host and says so.
		if d := fmt.Sprintf("/var/run/dpdk/rig%d", pid); fileExists(d) {
			t.Logf("known issue: the killed dataplane left %s; removing it", d)
			if err := os.RemoveAll(d); err != nil {
				t.Errorf("remove %s: %v", d, err)
			}
		}
	}
	if ports := l.vsctl("list-ports", "br-t"); !strings.Contains(ports, "rig-chk-in") || !strings.Contains(ports, "rig-chk-out") {
		t.Fatalf("the killed check left no ports to clean: %q", ports)
	}
	// plan reports the leftovers as the check step's changes; the next
	// check (of the same bridge, 2 s of traffic now) cleans them up
	if err := os.WriteFile(l.pb, []byte(fmt.Sprintf(checkPlaybook, "2s", "1s", "2")), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = l.rig("plan", "-p", l.pb, "--rundir", l.rundir)
	for _, w := range []string{"remove leftover port rig-chk-in", "remove leftover port rig-chk-out", "remove 1 leftover flow(s) with rig's cookie 0x7269672d63686b"} {
		if !strings.Contains(out, w) {
			t.Errorf("plan (exit %d) lacks %q:\n%s%s", code, w, out, errOut)
		}
	}
	// the next check cleans up, then passes
	code, m, errOut := l.checkJSON()
	cleanup, _ := m["cleanup"].([]any)
	if code != 0 || m["schemaVersion"] != "rig.check/v2" || m["pass"] != true || len(cleanup) != 3 {
		t.Fatalf("check after the kill: exit %d, %v\n%s", code, m, errOut)
	}
	r := run0(t, m)
	loss := r["loss"].(map[string]any)
	if loss["countsAgree"] != true || r["rxMpps"].(float64) <= 0 {
		t.Fatalf("run: %v", r)
	}
	t.Logf("after the kill: %.3f Mpps, loss %.4f%%, rig rx vs OvS egress tx %.4f%% apart", r["rxMpps"], r["lossPct"], loss["rxVsOvsTxGapPct"])
	if ports := l.vsctl("list-ports", "br-t"); strings.Contains(ports, "rig-chk-") {
		t.Fatalf("ports left: %q", ports)
	}
	if f := l.cookieFlows("br-t"); strings.Contains(f, "cookie=") {
		t.Fatalf("flows left: %q", f)
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// childPIDs lists the processes whose parent is pid.
func childPIDs(t *testing.T, pid int) []int {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	for _, st := range stats {
		f, err := procStat(st)
		if err != nil {
			continue
		}
		if len(f) > 1 && f[1] == strconv.Itoa(pid) { // state ppid ...
			n, _ := strconv.Atoi(filepath.Base(filepath.Dir(st)))
			out = append(out, n)
		}
	}
	return out
}

// flowing matches dump-ports of a port that has received frames.
var flowing = regexp.MustCompile(`rx pkts=[1-9]`)

// OvS drops on purpose: ingress policing on the check's ingress port, set
// during the warm-up; the report must place the loss in OvS's rx.
func TestPrivilegedCheckNamesWhereOvSDropped(t *testing.T) {
	l := newCheckLab(t, fmt.Sprintf(checkPlaybook, "2s", "3s", "1"))
	if code, out, errOut := l.rig("up", "--only", "ovs", "-p", l.pb, "--rundir", l.rundir, "--lock-file", l.rundir+"/lock"); code != 0 {
		t.Fatalf("up: %d\n%s%s", code, out, errOut)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			// once the warm-up's frames flow (not while rig's side of the
			// vhost-user port is still connecting)
			out, _ := exec.Command("ip", "netns", "exec", l.netns, "ovs-ofctl", "dump-ports", "unix:"+l.rundir+"/br-t.mgmt", "rig-chk-in").Output()
			if flowing.Match(out) {
				// 10 Mb/s: far below what rig sends
				exec.Command("ip", "netns", "exec", l.netns, "ovs-vsctl", "--db=unix:"+l.rundir+"/db.sock", "set", "Interface", "rig-chk-in",
					"ingress_policing_rate=10000", "ingress_policing_burst=1000").Run()
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	prom := filepath.Join(t.TempDir(), "rig.prom")
	code, m, errOut := l.checkJSON("--metrics-file", prom)
	<-done
	r := run0(t, m)
	loss := r["loss"].(map[string]any)
	verdict, _ := loss["verdict"].(string)
	if code != exitBelowThreshold || m["pass"] != false || !strings.Contains(verdict, "most "+check.StageOVSRxQueue) || !strings.Contains(verdict, "ovs_rx_qos_drops") {
		t.Fatalf("exit %d (want %d), verdict %q\n%v\n%s", code, exitBelowThreshold, verdict, r, errOut)
	}
	if !strings.Contains(m["error"].(string), "max_loss_pct (64 B) 1: measured") {
		t.Fatalf("error %q", m["error"])
	}
	// below threshold: a valid measurement that did not pass
	g := promGauges(t, prom)
	series := "bridge=br-t,egress_port=rig-chk-out,frame_size=64,ingress_port=rig-chk-in,topology=through-bridge"
	if g["rig_check_pass"][series] != 0 || g["rig_check_valid"][series] != 1 || g["rig_check_loss_ratio"][series] != r["lossPct"].(float64)/100 {
		t.Errorf("metrics of a check below threshold: %v", g)
	}
	t.Logf("policed: %s", verdict)
}

// The memif transport through a private OvS: the check passes with OvS's
// and rig's counts in agreement, deletes its memif ports before its
// dataplane disconnects (DPDK 22.11's memif server in OvS died of SIGSEGV
// when its client left under a polling PMD), and ovs-vswitchd lives on.
func TestPrivilegedCheckMemifTransport(t *testing.T) {
	pb := strings.Replace(fmt.Sprintf(checkPlaybook, "2s", "1s", "5"), "check:\n", "check:\n  transport: memif\n", 1)
	l := newCheckLab(t, pb)
	if code, out, errOut := l.rig("up", "--only", "ovs", "-p", l.pb, "--rundir", l.rundir, "--lock-file", l.rundir+"/lock"); code != 0 {
		t.Fatalf("up: %d\n%s%s", code, out, errOut)
	}
	pid := func() string {
		b, _ := os.ReadFile(filepath.Join(l.rundir, "ovs-vswitchd.pid"))
		return strings.TrimSpace(string(b))
	}
	before := pid()
	code, m, errOut := l.checkJSON()
	r := run0(t, m)
	loss := r["loss"].(map[string]any)
	if code != exitOK || m["pass"] != true || loss["countsAgree"] != true || m["transport"] != "memif" {
		t.Fatalf("exit %d, pass %v, loss %v\n%v\n%s", code, m["pass"], loss, r, errOut)
	}
	if w := fmt.Sprint(r["warnings"]); !strings.Contains(w, "rig deletes its memif ports from OvS") {
		t.Errorf("warnings %s: the memif note is missing", w)
	}
	if now := pid(); now == "" || now != before {
		t.Fatalf("ovs-vswitchd pid %q before the check, %q after", before, now)
	}
	if _, err := os.Stat("/proc/" + before); err != nil {
		t.Fatalf("ovs-vswitchd (pid %s) died during the check", before)
	}
	if out := l.sh("ip", "netns", "exec", l.netns, "ovs-vsctl", "--db=unix:"+l.rundir+"/db.sock", "list-ports", "br-t"); strings.Contains(out, "rig-chk") {
		t.Errorf("ports left on br-t: %s", out)
	}
}

func TestPrivilegedCheckThroughPorts(t *testing.T) {
	far := fmt.Sprintf("rigfar%d", os.Getpid()%100000)
	pb := fmt.Sprintf(`name: tp
ovs:
  config:
    dpdk-init: "try"
    dpdk-socket-mem: "128"
    dpdk-socket-limit: "256"
    dpdk-lcore-mask: "0x1"
    pmd-cpu-mask: "0x2"
    dpdk-extra: "--no-pci --no-telemetry"
  bridges:
    - name: br-tp
      ports:
        - name: p0
          devargs: net_af_packet0,iface=ck0
        - name: p1
          devargs: net_af_packet1,iface=ck1
check:
  topology: through-ports
  ports: [p0, p1]
  far_end_netns: %s
  duration: 2s
  warmup: 1s
  rate: 20kpps
  thresholds: {min_mpps: 0.01, max_loss_pct: 50}
`, far) // the loss limit is loose: on a loaded 2-CPU VM the kernel's veth and af_packet
	// sockets drop a few percent (the report places them before OvS); this
	// test is about the path, the two counts agreeing and the cleanup
	testutil.RequirePrivileged(t)
	if err := exec.Command("ip", "netns", "add", far).Run(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exec.Command("ip", "netns", "del", far).Run() })
	l := newCheckLab(t, pb)
	// each cable: ckN in the OvS netns <-> ckN (same name) in the far netns
	for _, n := range []string{"ck0", "ck1"} {
		l.sh("ip", "link", "add", n, "netns", l.netns, "type", "veth", "peer", "name", n, "netns", far)
		for _, ns := range []string{l.netns, far} {
			l.sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf."+n+".disable_ipv6=1")
			l.sh("ip", "-n", ns, "link", "set", n, "up")
		}
	}
	promUp := filepath.Join(t.TempDir(), "up.prom")
	if code, out, errOut := l.rig("up", "-p", l.pb, "--rundir", l.rundir, "--lock-file", l.rundir+"/lock", "--metrics-file", promUp); code != 0 {
		t.Fatalf("up: %d\n%s%s", code, out, errOut)
	}
	// rig up's check step writes the metrics too
	if g := promGauges(t, promUp); g["rig_check_pass"]["bridge=br-tp,egress_port=p1,frame_size=64,ingress_port=p0,topology=through-ports"] != 1 {
		t.Errorf("rig up --metrics-file: %v", g)
	}
	prom := filepath.Join(t.TempDir(), "rig.prom")
	code, m, errOut := l.checkJSON("--metrics-file", prom)
	r := run0(t, m)
	loss := r["loss"].(map[string]any)
	if code != 0 || m["pass"] != true || m["ingressPort"] != "p0" || m["egressPort"] != "p1" || m["farEndNetns"] != far || loss["countsAgree"] != true {
		t.Fatalf("exit %d\n%v\n%s", code, m, errOut)
	}
	// the metrics file: the same figures, labelled with the path
	g := promGauges(t, prom)
	series := "bridge=br-tp,egress_port=p1,frame_size=64,ingress_port=p0,topology=through-ports"
	if g["rig_check_pass"][series] != 1 || g["rig_check_valid"][series] != 1 || g["rig_check_mpps"][series] != r["rxMpps"] ||
		g["rig_check_loss_ratio"][series] != r["lossPct"].(float64)/100 || g["rig_check_gbps"][series] != r["rxGbps"] {
		t.Errorf("metrics %v\nwant series %s with the run's figures %v", g, series, r)
	}
	t.Logf("through-ports: %.4f Mpps, loss %.4f%%, %s", r["rxMpps"], r["lossPct"], loss["verdict"])
	if f := l.cookieFlows("br-tp"); strings.Contains(f, "cookie=") {
		t.Fatalf("flows left: %q", f)
	}
	// the check's datapath flows came in at p0, an af_packet port of no
	// card, with hw-offload unset: not offloaded, both said
	off, _ := m["offload"].(map[string]any)
	if off == nil || off["verdict"] != "not offloaded" || off["port"] != "p0" || off["flows"].(float64) < 1 || off["packets"].(float64) < 1 ||
		!strings.Contains(fmt.Sprint(off["causes"]), "hw-offload-off") || !strings.Contains(fmt.Sprint(off["causes"]), "port-not-on-card") {
		t.Errorf("check offload: %v", off)
	}
	if g["rig_check_datapath_flows"]["bridge=br-tp,egress_port=p1,ingress_port=p0,topology=through-ports"] < 1 {
		t.Errorf("metrics: datapath flows %v", g["rig_check_datapath_flows"])
	}
}

// check.offload: required on a private OvS with hw-offload set while it
// runs (its Flow API enabled then): the check's vhost-user ports have no
// flow API, so its traffic stays in software and the check fails with
// exit 4, the cause (not a port of the card, with ovs-vswitchd's own log
// line) and the fix; preferred passes and says the same.
func TestPrivilegedCheckOffloadRequired(t *testing.T) {
	pb := strings.Replace(fmt.Sprintf(checkPlaybook, "1s", "0s", "1"), "check:\n", "check:\n  offload: required\n", 1)
	l := newCheckLab(t, pb)
	if code, out, errOut := l.rig("up", "--skip", "check", "-p", l.pb, "--rundir", l.rundir, "--lock-file", l.rundir+"/lock"); code != 0 {
		t.Fatalf("up: %d\n%s%s", code, out, errOut)
	}
	l.vsctl("set", "Open_vSwitch", ".", "other_config:hw-offload=true")
	code, m, errOut := l.checkJSON()
	off, _ := m["offload"].(map[string]any)
	if code != exitBelowThreshold || m["pass"] != false || off == nil || off["mode"] != "required" || off["pass"] != false || off["hwOffload"] != true ||
		off["verdict"] != "not offloaded" || off["port"] != "rig-chk-in" {
		t.Fatalf("check: exit %d (want %d), offload %v\n%s", code, exitBelowThreshold, off, errOut)
	}
	causes := fmt.Sprint(off["causes"])
	if !strings.Contains(causes, "port-not-on-card") || strings.Contains(causes, "hw-offload-off") || strings.Contains(causes, "hw-offload-not-applied") ||
		!strings.Contains(causes, "rig-chk-in: No suitable flow API found.") {
		t.Errorf("causes: %s", causes)
	}
	code, out, errOut := l.rig("check", "-p", l.pb, "--rundir", l.rundir, "--lock-file", l.rundir+"/lock")
	for _, w := range []string{"offload (required): ", "offload required: FAIL", "cause: port rig-chk-in is a dpdkvhostuserclient port, not an uplink or representor of an mlx5 eSwitch",
		"fix:   offload happens between the card's uplinks and representors"} {
		if code != exitBelowThreshold || !strings.Contains(out+errOut, w) {
			t.Errorf("check text (exit %d) lacks %q:\n%s%s", code, w, out, errOut)
		}
	}
	if err := os.WriteFile(l.pb, []byte(strings.Replace(pb, "offload: required", "offload: preferred", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, m, errOut := l.checkJSON(); code != exitOK || m["pass"] != true || m["offload"].(map[string]any)["verdict"] != "not offloaded" {
		t.Errorf("preferred: exit %d, %v\n%s", code, m["offload"], errOut)
	}
}
