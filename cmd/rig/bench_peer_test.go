package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"rig/bench"
	"rig/internal/testutil"
)

// twoHosts is two network namespaces standing in for two hosts: data
// ports joined by veth pairs (dpf0↔dpn0, dpf1↔dpn1) and a control link
// (10.77.N.1 far, 10.77.N.2 near) that exists only between them.
type twoHosts struct {
	t         *testing.T
	bin       string
	far, near string
	farIP     string
	token     string
}

func newTwoHosts(t *testing.T) *twoHosts {
	t.Helper()
	tag := os.Getpid() % 100000
	h := &twoHosts{t: t, far: fmt.Sprintf("rigfar%d", tag), near: fmt.Sprintf("rignear%d", tag), farIP: fmt.Sprintf("10.77.%d.1", tag%250)}
	for _, ns := range []string{h.far, h.near} {
		h.ip("netns", "add", ns)
		t.Cleanup(func() { h.killNetNSPids(ns); _ = exec.Command("ip", "netns", "del", ns).Run() })
		// no IPv6 router solicitations or ND on the data links: every frame is rig's
		h.ip("netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1")
		h.ip("-n", ns, "link", "set", "lo", "up")
	}
	for _, l := range [][2]string{{"dpf0", "dpn0"}, {"dpf1", "dpn1"}, {"ctf", "ctn"}} {
		h.ip("-n", h.far, "link", "add", l[0], "type", "veth", "peer", "name", l[1], "netns", h.near)
		h.ip("-n", h.far, "link", "set", l[0], "up")
		h.ip("-n", h.near, "link", "set", l[1], "up")
	}
	h.ip("-n", h.far, "addr", "add", h.farIP+"/24", "dev", "ctf")
	h.ip("-n", h.near, "addr", "add", strings.TrimSuffix(h.farIP, ".1")+".2/24", "dev", "ctn")
	if _, err := os.Stat("/sys/class/net/ctf"); err == nil {
		t.Fatal("ctf is in the host netns too: serve would listen outside the test's namespaces")
	}
	h.token = filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(h.token, []byte("two-hosts-test-token-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.bin = buildRig(t)
	return h
}

func (h *twoHosts) ip(args ...string) {
	h.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		h.t.Fatalf("ip %v: %v\n%s", args, err, out)
	}
}

// killNetNSPids ends what this test started in ns and left: first a
// grace for a dataplane child stopping by itself (a killed serve's child
// gets SIGTERM and cleans up its EAL runtime dir), then SIGKILL by pid and
// the runtime dir such a child leaves.
func (h *twoHosts) killNetNSPids(ns string) {
	pids := func() []int { return h.netnsPids(ns) }
	anyAlive := func() bool {
		for _, pid := range pids() {
			if pidAlive(pid) {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(bench.DefaultChildGrace + 5*time.Second); anyAlive() && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	for _, pid := range pids() {
		if p, err := os.FindProcess(pid); err == nil {
			_ = p.Kill()
		}
		for i := 0; i < 50 && pidAlive(pid); i++ {
			time.Sleep(20 * time.Millisecond)
		}
		_ = os.RemoveAll(filepath.Join("/var/run/dpdk", bench.DefaultFilePrefix(pid)))
	}
}

// netnsPids are the processes in ns.
func (h *twoHosts) netnsPids(ns string) []int {
	out, _ := exec.Command("ip", "netns", "pids", ns).Output()
	var ps []int
	for _, f := range strings.Fields(string(out)) {
		var pid int
		if _, err := fmt.Sscan(f, &pid); err == nil && pid > 1 {
			ps = append(ps, pid)
		}
	}
	return ps
}

// serve starts `rig bench serve` in the far netns and returns its
// address (port 0: it says which), its process and its log.
func (h *twoHosts) serve() (string, *os.Process, *lockedLog) {
	h.t.Helper()
	cmd := exec.Command("ip", "netns", "exec", h.far, h.bin, "bench", "serve", "--listen", h.farIP+":0", "--token-file", h.token)
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		h.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	log := &lockedLog{}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(errPipe)
		re := regexp.MustCompile(`listening on (\S+) `)
		for sc.Scan() {
			log.add(sc.Text())
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	select {
	case a := <-addr:
		return a, cmd.Process, log
	case <-time.After(10 * time.Second):
		h.t.Fatalf("serve did not say where it listens:\n%s", log.String())
	}
	return "", nil, nil
}

// nearRig runs rig in the near netns.
func (h *twoHosts) nearRig(args ...string) (int, string, string) {
	h.t.Helper()
	cmd := exec.Command("ip", append([]string{"netns", "exec", h.near, h.bin}, args...)...)
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var xe *exec.ExitError
	if errors.As(err, &xe) {
		return xe.ExitCode(), o.String(), e.String()
	} else if err != nil {
		h.t.Fatal(err)
	}
	return 0, o.String(), e.String()
}

type lockedLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *lockedLog) add(s string) { l.mu.Lock(); l.lines = append(l.lines, s); l.mu.Unlock() }
func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// onlyRateInvalid: on a loaded 2-CPU box the af_packet generator may not
// reach the asked rate, which the run rightly calls invalid (exit 5); the
// counters are what these tests assert.
func onlyRateInvalid(t *testing.T, code int, r *bench.Result, out, errOut string) {
	t.Helper()
	if code != exitOK && code != exitInvalid {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	for _, why := range r.Invalid {
		if !strings.HasPrefix(why, "asked --rate") {
			t.Errorf("invalid: %s", why)
		}
	}
}

// Two hosts, one command: serve in one namespace, gen and loop --peer in
// the other; one report holds both sides' counters, loss across hosts is
// ~0 at 100 kpps; a wrong token and a config the far side cannot run are
// refused (the latter before any EAL there); a far side killed mid-run is
// an error naming it.
func TestPrivilegedBenchTwoHosts(t *testing.T) {
	testutil.RequirePrivileged(t)
	if len(onlineCPUsForTest(t)) < 2 {
		t.Skip("needs 2 CPUs: one polling lcore per host")
	}
	h := newTwoHosts(t)
	addr, serveProc, log := h.serve()
	const n = 20000
	peer := []string{"--peer", addr, "--peer-token-file", h.token, "--peer-no-huge"}
	gen := append([]string{"bench", "gen", "--vdev", "net_af_packet0,iface=dpn0,framecnt=8192", "--no-huge", "--count", fmt.Sprint(n), "--rate", "100kpps",
		"--peer-vdev", "net_af_packet0,iface=dpf0,framecnt=8192", "-o", "json"}, peer...)
	code, out, errOut := h.nearRig(gen...)
	var r bench.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("gen --peer: exit %d %v\n%s\n%s\nserve:\n%s", code, err, out, errOut, log.String())
	}
	onlyRateInvalid(t, code, &r, out, errOut)
	if r.Sent != n || r.Received < n*99/100 || r.Received > n || r.Lost != int64(r.Sent)-int64(r.Received) || r.Unstamped != 0 || len(r.Ports) != 2 ||
		r.Ports[0].Host != "near" || r.Ports[0].TxPkts != n || r.Ports[1].Host != "far" || r.Ports[1].RxPkts != r.Received || r.Peer == nil || r.Peer.Addr != addr || r.Peer.Role != bench.RoleRx {
		t.Fatalf("gen --peer: %+v\npeer %+v\nserve:\n%s", r, r.Peer, log.String())
	}
	t.Logf("gen --peer: sent %d, far received %d, lost %d", r.Sent, r.Received, r.Lost)
	h.twoHostLoop(peer, n, log)
	h.twoHostRefusals(gen, addr, log)
	h.twoHostFarDies(gen, addr, serveProc, log)
}

// loop --peer: out on dpn0, through the far forwarder, back on dpn1.
func (h *twoHosts) twoHostLoop(peer []string, n int, log *lockedLog) {
	t := h.t
	code, out, errOut := h.nearRig(append([]string{"bench", "loop", "--vdev", "net_af_packet0,iface=dpn0,framecnt=8192", "--vdev", "net_af_packet1,iface=dpn1,framecnt=8192",
		"--no-huge", "--count", fmt.Sprint(n), "--rate", "100kpps", "--peer-vdev", "net_af_packet0,iface=dpf0,framecnt=8192", "--peer-vdev", "net_af_packet1,iface=dpf1,framecnt=8192", "-o", "json"}, peer...)...)
	var r bench.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("loop --peer: exit %d %v\n%s\n%s", code, err, out, errOut)
	}
	onlyRateInvalid(t, code, &r, out, errOut)
	// frames are conserved along the path: near tx ≥ far rx ≥ far tx ≥ near rx
	nearTx, farRx, farTx, nearRx := r.Ports[0].TxPkts, r.Ports[2].RxPkts, r.Ports[3].TxPkts, r.Ports[1].RxPkts
	if r.Sent != uint64(n) || r.Received < uint64(n*95/100) || len(r.Ports) != 4 || r.Ports[2].Host != "far" || r.Ports[1].Host != "near" ||
		nearTx != r.Sent || farRx > nearTx || farTx > farRx || nearRx > farTx || nearRx != r.Received || r.Lost != int64(r.Sent-r.Received) ||
		r.Peer == nil || r.Peer.Role != bench.RoleFwd || r.Latency == nil {
		t.Fatalf("loop --peer: %+v\nserve:\n%s", r, log.String())
	}
}

// A wrong token; a far config that does not validate there: refused, and
// the far side started no dataplane for either.
func (h *twoHosts) twoHostRefusals(gen []string, addr string, log *lockedLog) {
	t := h.t
	bad := filepath.Join(t.TempDir(), "bad")
	if err := os.WriteFile(bad, []byte("not-the-token-of-that-serve\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append(append([]string(nil), gen...), "--peer-token-file", bad)
	before := strings.Count(log.String(), ": running ")
	code, _, errOut := h.nearRig(args...)
	if code != exitFailure || !strings.Contains(errOut, "peer "+addr+": refused (auth)") || !strings.Contains(errOut, "authentication failed") {
		t.Errorf("wrong token: exit %d\n%s", code, errOut)
	}
	// the far host's CPUs are the far side's to check
	args = append(append([]string(nil), gen...), "--peer-lcores", "0-127")
	code, _, errOut = h.nearRig(args...)
	if code != exitUsage || !strings.Contains(errOut, "peer "+addr+": refused (config)") || !strings.Contains(errOut, "--lcores 0-127") {
		t.Errorf("bad far config: exit %d\n%s", code, errOut)
	}
	if code, _, errOut = h.nearRig(append(append([]string(nil), gen...), "--peer-cores", "0")...); code != exitUsage || !strings.Contains(errOut, "--peer-cores 0: want 1 or more") {
		t.Errorf("--peer-cores 0: exit %d\n%s", code, errOut)
	}
	l := log.String()
	if strings.Count(l, ": running ") != before || !strings.Contains(l, "refused: authentication failed") || !strings.Contains(l, "refused config: bench: --lcores 0-127: ") ||
		strings.Contains(l, "two-hosts-test-token") || strings.Contains(l, "not-the-token") {
		t.Errorf("serve log:\n%s", l)
	}
}

// The far side dies mid-run (serve killed): the near run stops with an
// error naming the peer.
func (h *twoHosts) twoHostFarDies(gen []string, addr string, serve *os.Process, log *lockedLog) {
	t := h.t
	args := append([]string(nil), gen...)
	for i, a := range args {
		if a == "--count" {
			args[i], args[i+1] = "--duration", "30s"
		}
	}
	runs := strings.Count(log.String(), ": running ")
	farPids := make(chan []int, 1)
	go func() {
		// once the far side runs, and the near side had time to start sending
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if strings.Count(log.String(), ": running ") > runs {
				time.Sleep(3 * time.Second)
				break
			}
		}
		farPids <- h.netnsPids(h.far) // serve and its dataplane child
		_ = serve.Kill()
	}()
	start := time.Now()
	code, _, errOut := h.nearRig(args...)
	if code != exitFailure || !strings.Contains(errOut, "peer "+addr+": the far side went away mid-run") || time.Since(start) > 45*time.Second {
		t.Errorf("far killed: exit %d after %v\n%s", code, time.Since(start), errOut)
	}
	// the orphaned child stops on its own (one SIGTERM per thread of the
	// dying serve counts once) and removes its EAL runtime dir
	pids := <-farPids
	if len(pids) < 2 {
		t.Fatalf("far netns held %v, want serve and its child", pids)
	}
	alive := func() bool {
		for _, pid := range pids {
			if pidAlive(pid) {
				return true
			}
		}
		return false
	}
	for deadline := time.Now().Add(bench.DefaultChildGrace); alive() && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
	}
	for _, pid := range pids {
		if d := filepath.Join("/var/run/dpdk", bench.DefaultFilePrefix(pid)); pidAlive(pid) || dirExists(d) {
			t.Errorf("far pid %d: alive %v, %s left %v", pid, pidAlive(pid), d, dirExists(d))
			if !pidAlive(pid) {
				_ = os.RemoveAll(d) // what the dead child left
			}
		}
	}
}

func dirExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// The token file is a secret: a file others may read, a short token or
// none is refused (exit 2) without showing the content.
func TestBenchTokenFileAndServeFlags(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", "a-secret-of-enough-bytes\n", 0o600)
	if tok, err := readTokenFile(good); err != nil || string(tok) != "a-secret-of-enough-bytes" {
		t.Errorf("good token: %q %v", tok, err)
	}
	for _, c := range []struct{ path, want string }{
		{write("open", "a-secret-of-enough-bytes-open\n", 0o644), "readable or writable by others (mode 0644): chmod 600"},
		{write("short", "short\n", 0o600), "holds 5 bytes of token: want at least 16"},
		{dir, "is not a regular file"},
		{filepath.Join(dir, "none"), "no such file"},
	} {
		_, err := readTokenFile(c.path)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "a-secret") {
			t.Errorf("%s: %v, want %q", c.path, err, c.want)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "serve", "--listen", ":7400", "--token-file", good}, "want ADDR:PORT with the address to listen on"},
		{[]string{"bench", "serve", "--listen", "127.0.0.1", "--token-file", good}, "want ADDR:PORT"},
		{[]string{"bench", "serve", "--listen", "127.0.0.1:0", "--token-file", filepath.Join(dir, "open")}, "--token-file: " + dir + "/open is readable"},
		{[]string{"bench", "gen", "--vdev", "net_null0", "--peer", "10.0.0.1:7400", "--peer-vdev", "net_null0"}, "--peer needs --peer-token-file"},
		{[]string{"bench", "gen", "--vdev", "net_null0", "--peer", "10.0.0.1:7400", "--peer-token-file", good}, "--peer needs the far side's ports"},
		{[]string{"bench", "gen", "--vdev", "net_null0", "--peer", "10.0.0.1", "--peer-token-file", good, "--peer-vdev", "net_null0"}, "--peer 10.0.0.1: want HOST:PORT"},
		{[]string{"bench", "gen", "--vdev", "net_null0", "--peer", "10.0.0.1:1", "--peer-token-file", good, "--peer-vdev", "net_null0,,x"}, "malformed devargs"},
		{[]string{"bench", "gen", "--vdev", "net_null0", "--peer", "10.0.0.1:1", "--peer-token-file", filepath.Join(dir, "short"), "--peer-vdev", "net_null0"}, "--peer-token-file: "},
	} {
		code, _, errOut := rig(t, c.args...)
		if code != exitUsage || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "a-secret") {
			t.Errorf("rig %v: exit %d, want %d with %q:\n%s", c.args, code, exitUsage, c.want, errOut)
		}
	}
	if code, _, _ := rig(t, "bench", "rx", "--peer", "x:1"); code != exitUsage {
		t.Errorf("rx has no --peer: exit %d", code)
	}
	// --dry-run shows what goes to the far side: the far role, its ports,
	// the near side's queue settings and the profile's devargs on its PCI ports
	code, p, errOut := dryRunPlan(t, "bench", "loop", "--vdev", "net_null0", "--vdev", "net_null1", "--profile", "mlx5-no-inline", "--peer", "10.0.0.1:7400",
		"--peer-token-file", good, "--peer-port", "0000:03:00.0", "--peer-port", "0000:03:00.1", "--peer-cores", "2")
	if code != exitOK || p.Peer != "10.0.0.1:7400" || p.Far == nil || p.Far.Role != bench.RoleFwd || p.Far.Cores != 2 || p.Far.RxQ != 3 || p.Far.Count != 0 ||
		p.Far.Ports[1] != "0000:03:00.1,mprq_en=0,rxqs_min_mprq=1,rxq_cqe_comp_en=1,rxq_pkt_pad_en=1,txq_inline_max=0,txq_inline_mpw=0,txqs_min_inline=1,txq_mpw_en=1" {
		t.Errorf("peer dry run: exit %d %+v far %+v\n%s", code, p, p.Far, errOut)
	}
}
