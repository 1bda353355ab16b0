package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"rig/internal/testutil/hugetest"
	"rig/playbooks"
	"rig/provision/check"
)

// farPlaybook is a through-ports check whose far ends the test gives with
// --far-end (no far_end_netns): p0 and p1 are af_packet ports on ck0 and
// ck1, whose far ends are in the "far host" netns.
const farPlaybook = `name: far
ovs:
  config:
    dpdk-init: "try"
    dpdk-socket-mem: "128"
    dpdk-socket-limit: "256"
    dpdk-lcore-mask: "0x1"
    pmd-cpu-mask: "0x2"
    dpdk-extra: "--no-pci --no-telemetry"
  bridges:
    - name: br-far
      ports:
        - name: p0
          devargs: net_af_packet0,iface=ck0
        - name: p1
          devargs: net_af_packet1,iface=ck1
check:
  topology: through-ports
  ports: [p0, p1]
  duration: 2s
  warmup: 0s
  rate: 10kpps
  thresholds: {min_mpps: 0.005, max_loss_pct: 50}
`

// A through-ports check whose far ends are on another machine: a "far
// host" netns reached over a management veth, its ck0/ck1 the far ends of
// OvS's p0/p1, and real `rig bench serve` processes there started as a
// user would. Both far ends on one serve: one loop there (latency on its
// clock); on two serves (direction both): a generator on one and a
// receiver on the other, each way. Each passes with rig's far rx and OvS's
// egress tx within 0.1 %. A far end that is not given, down, with a wrong
// token or a port serve does not allow fails before any traffic, naming
// the cause and the command to run there; a serve killed mid-run fails
// the check with its cause; none leaves a flow, a port or a process.
func TestPrivilegedCheckFarEndsOnServe(t *testing.T) {
	pb, err := playbooks.Parse("far.yaml", []byte(farPlaybook))
	if err != nil {
		t.Fatal(err)
	}
	mb, err := check.CheckMemoryMB(pb.Check)
	if err != nil {
		t.Fatal(err)
	}
	// the far ends' dataplanes (a generator and a receiver at once) run
	// on this machine too, besides OvS
	l := newCheckLabWith(t, farPlaybook, hugetest.DPDK("far ends' generator and receiver", 2*mb))
	far := fmt.Sprintf("rigfh%d", os.Getpid()%100000)
	l.sh("ip", "netns", "add", far)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", far).Run() })
	l.sh("ip", "-n", far, "link", "set", "lo", "up")
	for _, n := range []string{"ck0", "ck1"} {
		l.sh("ip", "link", "add", n, "netns", l.netns, "type", "veth", "peer", "name", n, "netns", far)
		for _, ns := range []string{l.netns, far} {
			l.sh("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf."+n+".disable_ipv6=1")
			l.sh("ip", "-n", ns, "link", "set", n, "up")
		}
	}
	// the management link: OvS's machine 10.213.0.1, the far host 10.213.0.2
	l.sh("ip", "link", "add", "rigmg", "netns", l.netns, "type", "veth", "peer", "name", "rigmg", "netns", far)
	for ns, a := range map[string]string{l.netns: "10.213.0.1/30", far: "10.213.0.2/30"} {
		l.sh("ip", "-n", ns, "addr", "add", a, "dev", "rigmg")
		l.sh("ip", "-n", ns, "link", "set", "rigmg", "up")
	}
	token := writeToken(t)
	wrap := []string{"ip", "netns", "exec", far}
	dir := t.TempDir()
	s1 := startServeOn(t, wrap, l.bin, token, "10.213.0.2:0", "--allow-netdev", "ck0", "--allow-netdev", "ck1", "--memif-dir", dir+"/m1")
	s2 := startServeOn(t, wrap, l.bin, token, "10.213.0.2:0", "--allow-netdev", "ck1", "--memif-dir", dir+"/m2")
	if code, out, errOut := l.rig("up", "--only", "ovs", "-p", l.pb, "--rundir", l.rundir, "--lock-file", l.rundir+"/lock"); code != 0 {
		t.Fatalf("up: %d\n%s%s", code, out, errOut)
	}
	farEnd := func(port, addr, netdev, tok string) []string {
		return []string{"--far-end", fmt.Sprintf("%s:serve=%s,netdev=%s,token_file=%s", port, addr, netdev, tok)}
	}
	args := func(lists ...[]string) []string {
		var out []string
		for _, l := range lists {
			out = append(out, l...)
		}
		return out
	}
	clean := func(what string) {
		t.Helper()
		if f := l.cookieFlows("br-far"); strings.Contains(f, "cookie=") {
			t.Errorf("%s: flows left: %q", what, f)
		}
		if p := strings.Fields(l.vsctl("list-ports", "br-far")); strings.Join(p, " ") != "p0 p1" {
			t.Errorf("%s: ports %q, want p0 p1", what, p)
		}
	}
	agree := func(what string, r map[string]any) {
		t.Helper()
		loss := r["loss"].(map[string]any)
		if loss["countsAgree"] != true || loss["rxVsOvsTxGapPct"].(float64) > 100*check.AgreeFraction || r["received"].(float64) < 1 {
			t.Errorf("%s: counts: sent %v received %v, loss %v, ovs %v, warnings %v", what, r["sent"], r["received"], r["loss"], r["ovsPorts"], r["warnings"])
		}
	}

	// rig plan shows the far ends and that they answer
	both := args(farEnd("p0", s1.addr, "ck0", token), farEnd("p1", s1.addr, "ck1", token))
	code, out, errOut := l.rig(append([]string{"plan", "-p", l.pb, "--rundir", l.rundir, "--only", "check"}, both...)...)
	if code != 0 || !strings.Contains(out, "port p0's far end: netdev ck0 on the machine of rig bench serve "+s1.addr) || !strings.Contains(out, "far ends answer") {
		t.Errorf("plan: exit %d\n%s%s", code, out, errOut)
	}

	code, out, errOut = l.rig(append([]string{"plan", "-p", l.pb, "--rundir", l.rundir, "--only", "check"}, args(farEnd("p0", "10.213.0.2:1", "ck0", token), farEnd("p1", s1.addr, "ck1", token))...)...)
	if !strings.Contains(out, "far ends do not answer") || !strings.Contains(out, "rig bench serve --listen 10.213.0.2:1") {
		t.Errorf("plan with a far end down: exit %d\n%s%s", code, out, errOut)
	}

	// both far ends on one serve: a loop there, with latency
	code, m, errOut := l.checkJSON(both...)
	r := run0(t, m)
	if code != exitOK || m["pass"] != true || r["latency"] == nil {
		t.Fatalf("one serve: exit %d: %v\nrun %v\n%s", code, m["error"], r, errOut)
	}
	agree("one serve", r)
	if !s1.waitLog("running loop on net_af_packet0, net_af_packet1", time.Second) {
		t.Errorf("serve 1 log:\n%s", s1.log.String())
	}
	clean("one serve")

	// two serves, there and back: generator on one, receiver on the other
	two := args(farEnd("p0", s1.addr, "ck0", token), farEnd("p1", s2.addr, "ck1", token), []string{"--direction", "both"})
	code, m, errOut = l.checkJSON(two...)
	back, _ := m["reverseRuns"].([]any)
	if code != exitOK || m["pass"] != true || len(back) != 1 {
		t.Fatalf("two serves: exit %d: %v\n%v\n%s", code, m["error"], m["runs"], errOut)
	}
	agree("two serves, there", run0(t, m))
	agree("two serves, back", back[0].(map[string]any))
	if w := fmt.Sprint(run0(t, m)["warnings"]); !strings.Contains(w, "no latency: the far ends are on two machines") {
		t.Errorf("two serves: warnings %s", w)
	}
	for _, s := range []*serveProc{s1, s2} {
		if !strings.Contains(s.log.String(), "running gen") || !strings.Contains(s.log.String(), "running rx") {
			t.Errorf("serve %s ran no generator and receiver:\n%s", s.addr, s.log.String())
		}
	}
	clean("two serves")

	// failures before any traffic: cause and the command to run there
	wrong := filepath.Join(t.TempDir(), "wrong")
	if err := os.WriteFile(wrong, []byte("not-the-token-of-serve-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runs := strings.Count(s2.log.String(), "running")
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"not given", nil, []string{"check: port p0: no far end", "rig bench serve --listen ADDR:7400 --token-file /etc/rig/peer.token --allow-netdev NETDEV", "--far-end p0:serve=ADDR:7400,netdev=NETDEV"}},
		{"down", args(farEnd("p0", "10.213.0.2:1", "ck0", token), farEnd("p1", s2.addr, "ck1", token)),
			[]string{"far end of port p0 (netdev ck0 on the machine of rig bench serve 10.213.0.2:1", "connection refused", "on that machine run: rig bench serve --listen 10.213.0.2:1 --token-file " + token + " --allow-netdev ck0"}},
		{"wrong token", args(farEnd("p0", s1.addr, "ck0", token), farEnd("p1", s2.addr, "ck1", wrong)),
			[]string{"far end of port p1", "authentication failed", "the token file differs from the one serve was started with"}},
		{"port not allowed", args(farEnd("p0", s1.addr, "ck0", token), farEnd("p1", s2.addr, "ck0", token)),
			[]string{"far end of port p1", "netdev ck0 is not one serve was started with (--allow-netdev)", "rig bench serve --listen " + s2.addr + " --token-file " + token + " --allow-netdev ck0"}},
	} {
		code, m, errOut := l.checkJSON(c.args...)
		msg := fmt.Sprint(m["error"], " ", m["cause"], " ", m["fix"])
		if code == exitOK || m["pass"] == true || m["runs"] != nil {
			t.Errorf("%s: exit %d, runs %v\n%s", c.name, code, m["runs"], errOut)
		}
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: the error lacks %q:\n%s", c.name, w, msg)
			}
		}
		if strings.Contains(msg, "not supported") {
			t.Errorf("%s: %s", c.name, msg)
		}
		clean(c.name)
	}
	if n := strings.Count(s2.log.String(), "running"); n != runs {
		t.Errorf("a refused check ran traffic on serve 2:\n%s", s2.log.String())
	}

	// a serve killed mid-run: the check fails naming it, and nothing stays
	s3 := startServeOn(t, wrap, l.bin, token, "10.213.0.2:0", "--allow-netdev", "ck0", "--allow-netdev", "ck1", "--memif-dir", dir+"/m3")
	pb3 := strings.Replace(farPlaybook, "duration: 2s", "duration: 20s", 1)
	if err := os.WriteFile(l.pb, []byte(pb3), 0o644); err != nil {
		t.Fatal(err)
	}
	type result struct {
		code int
		m    map[string]any
		err  string
	}
	done := make(chan result, 1)
	go func() {
		code, m, errOut := l.checkJSON(args(farEnd("p0", s3.addr, "ck0", token), farEnd("p1", s3.addr, "ck1", token))...)
		done <- result{code, m, errOut}
	}()
	if !s3.waitLog("running loop", 30*time.Second) {
		t.Fatalf("serve 3 did not start the loop:\n%s", s3.log.String())
	}
	time.Sleep(2 * time.Second) // traffic flows (EAL up, frames through OvS)
	kids := childPIDs(t, s3.cmd.Process.Pid)
	_ = s3.cmd.Process.Signal(syscall.SIGKILL)
	var res result
	select {
	case res = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the check did not end after its serve died")
	}
	msg := fmt.Sprint(res.m["error"], " ", res.m["cause"], " ", res.m["fix"])
	if res.code == exitOK || !strings.Contains(msg, "far ends on "+s3.addr) || !strings.Contains(msg, "went away") {
		t.Errorf("serve killed: exit %d: %s\n%s", res.code, msg, res.err)
	}
	clean("serve killed")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var alive []int
		for _, k := range kids {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", k)); err == nil {
				alive = append(alive, k)
			}
		}
		if len(alive) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve's far runs %v outlived it", alive)
		}
	}
}

// --far-end and --direction are validated before anything reads the host:
// a bad value, a port the check does not use, far ends for a check that
// is not through-ports are exit 2 naming the fix.
func TestFarEndFlagsValidated(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "-p", "bf2-dpu", "--far-end", "p0"}, "want PORT:key=value"},
		{[]string{"plan", "-p", "bf2-dpu", "--far-end", "p9:netns=wire"}, "p9 is not one of the check's ports (p0, pf0hpf)"},
		{[]string{"plan", "-p", "bf2-dpu", "--far-end", "p0:serve=10.0.0.2"}, "serve: want HOST:PORT"},
		{[]string{"plan", "-p", "bf2-dpu", "--far-end", "p0:serve=10.0.0.2:7400"}, "far_ends.p0.netdev: serve 10.0.0.2:7400: name the far port on that machine"},
		{[]string{"plan", "-p", "ovs-check", "--far-end", "p0:netns=wire"}, "far ends are for topology: through-ports"},
		{[]string{"plan", "-p", "bf2-dpu", "--direction", "sideways"}, "check.direction: want one"},
		{[]string{"check", "-p", "bf2-dpu", "--far-end", "p0:colour=red"}, "unknown key"},
	} {
		code, out, errOut := rig(t, c.args...)
		if c.args[0] == "check" && code != exitUsage && strings.Contains(errOut, "needs root") {
			continue // a non-root run stops at the root check first
		}
		if code != exitUsage || !strings.Contains(out+errOut, c.want) {
			t.Errorf("rig %s: exit %d (want %d), lacks %q:\n%s%s", strings.Join(c.args, " "), code, exitUsage, c.want, out, errOut)
		}
	}
}

// --direction both with an embedded DPU playbook: refused on the card (its
// load is the zero-loss search, which runs one way), taken inside a lab
// (check.lab's fixed rate runs each way), each before anything runs.
func TestDirectionBothInLabOnly(t *testing.T) {
	for _, c := range []struct {
		inLab bool
		want  string
	}{{false, "check.direction: direction: both runs each frame size each way at a fixed load"}, {true, ""}} {
		pb, err := playbooks.Load("bf2-dpu")
		if err != nil {
			t.Fatal(err)
		}
		f := &farEndFlags{direction: "both"}
		err = f.apply(pb, func() (bool, error) { return c.inLab, nil })
		switch {
		case c.want == "" && (err != nil || pb.Check.Direction != "both" || pb.Check.InLab().IsSearch()):
			t.Errorf("in a lab: %v, direction %q, want both at the lab's fixed rate", err, pb.Check.Direction)
		case c.want != "":
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != exitUsage || !strings.Contains(err.Error(), c.want) {
				t.Errorf("on the card: %v, want exit %d with %q", err, exitUsage, c.want)
			}
		}
	}
	// the lab's marker unreadable: said, not taken for "no lab"
	pb, _ := playbooks.Load("bf2-dpu")
	if err := (&farEndFlags{direction: "both"}).apply(pb, func() (bool, error) { return false, errors.New("lab.json: damaged") }); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("unreadable lab marker: %v", err)
	}
}
