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
	"syscall"
	"testing"
	"time"

	"rig/bench"
	"rig/bench/child"
	"rig/bench/peer"
	"rig/bench/search"
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
	wrap      []string // run serve and the near rig under this (e.g. nice -n -10)
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
	for deadline := time.Now().Add(child.DefaultChildGrace + 5*time.Second); anyAlive() && time.Now().Before(deadline); {
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
	// the far ports' netdevs allowed; the memif dir in the test's temp dir
	// (the default /run/rig/serve-<pid> would stay behind a killed serve)
	args := append(append([]string{"netns", "exec", h.far}, h.wrap...), h.bin, "bench", "serve", "--listen", h.farIP+":0", "--token-file", h.token,
		"--allow-netdev", "dpf0", "--allow-netdev", "dpf1", "--memif-dir", filepath.Join(h.t.TempDir(), "memif"))
	cmd := exec.Command("ip", args...)
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
	cmd := exec.Command("ip", append(append(append([]string{"netns", "exec", h.near}, h.wrap...), h.bin), args...)...)
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
	for deadline := time.Now().Add(child.DefaultChildGrace); alive() && time.Now().Before(deadline); {
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
	if tok, err := peer.ReadTokenFile(good); err != nil || string(tok) != "a-secret-of-enough-bytes" {
		t.Errorf("good token: %q %v", tok, err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	theirs := write("theirs", "a-secret-of-enough-bytes-theirs\n", 0o600)
	if os.Geteuid() == 0 {
		if err := os.Chown(theirs, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ path, want string }{
		{write("open", "a-secret-of-enough-bytes-open\n", 0o644), "readable or writable by others (mode 0644): chmod 600"},
		{write("group", "a-secret-of-enough-bytes-group\n", 0o640), "readable or writable by others (mode 0640): chmod 600"},
		{write("big", "a-secret"+strings.Repeat("x", 5000), 0o600), "is 5008 bytes: a token file holds one line (at most 4096 bytes)"},
		{fifo, "is not a regular file"},
		{write("short", "short\n", 0o600), "holds 5 bytes of token: want at least 16"},
		{dir, "is not a regular file"},
		{filepath.Join(dir, "none"), "no such file"},
	} {
		start := time.Now()
		_, err := peer.ReadTokenFile(c.path)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "a-secret") || time.Since(start) > time.Second {
			t.Errorf("%s: %v after %v, want %q", c.path, err, time.Since(start), c.want)
		}
	}
	// a file of another user: root can give it away and must refuse it
	if os.Geteuid() == 0 {
		if _, err := peer.ReadTokenFile(theirs); err == nil || !strings.Contains(err.Error(), "is owned by uid 65534, not by the user running rig (uid 0): chown 0 "+theirs) {
			t.Errorf("another user's token file: %v", err)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "serve", "--listen", ":7400", "--token-file", good}, "want ADDR:PORT with the address to listen on"},
		{[]string{"bench", "serve", "--listen", "127.0.0.1", "--token-file", good}, "want ADDR:PORT"},
		{[]string{"bench", "serve", "--listen", ":99999", "--token-file", good}, `--listen ":99999": want ADDR:PORT with the address to listen on`},
		{[]string{"bench", "serve", "--listen", "127.0.0.1:99999", "--token-file", good}, `--listen "127.0.0.1:99999": port "99999": want a number 0..65535`},
		{[]string{"bench", "serve", "--listen", "127.0.0.1:http", "--token-file", good}, `port "http": want a number 0..65535`},
		{[]string{"bench", "serve", "--listen", "127.0.0.1:-1", "--token-file", good}, `port "-1": want a number 0..65535`},
		{[]string{"bench", "serve", "--listen", "127.0.0.1:0", "--token-file", fifo}, "--token-file: " + fifo + " is not a regular file"},
		{[]string{"bench", "serve", "--listen", "127.0.0.1:0", "--token-file", good, "--allow-netdev", "../p0"}, `--allow-netdev "../p0": not a netdev name`},
		{[]string{"bench", "serve", "--listen", "127.0.0.1:0", "--token-file", good, "--allow-netdev", "averyveryverylongname"}, `--allow-netdev "averyveryverylongname": not a netdev name`},
		{[]string{"bench", "serve", "--listen", "127.0.0.1:0", "--token-file", good, "--allow-pci", "03:00"}, `--allow-pci "03:00": not a PCI address`},
		{[]string{"bench", "serve", "--listen", "127.0.0.1:0", "--token-file", good, "--max-pending", "0"}, "--max-pending 0: want 1..4096"},
		{[]string{"bench", "serve", "--listen", "127.0.0.1:0", "--token-file", good, "--memif-dir", "rel"}, `--memif-dir "rel": want an absolute path`},
		{[]string{"bench", "serve", "--listen", "127.0.0.1:0", "--token-file", good, "--memif-dir", dir}, "--memif-dir " + dir + " exists: serve creates its own directory"},
		{[]string{"bench", "serve", "--listen", "127.0.0.1:0", "--token-file", good, "--handshake-timeout", "0s"}, "--handshake-timeout 0s: want more than 0"},
		{[]string{"bench", "serve", "--listen", "127.0.0.1:0", "--token-file", filepath.Join(dir, "open")}, "--token-file: " + dir + "/open is readable"},
		{[]string{"bench", "gen", "--vdev", "net_null0", "--peer", "10.0.0.1:7400", "--peer-vdev", "net_null0"}, "--peer needs --peer-token-file"},
		{[]string{"bench", "gen", "--vdev", "net_null0", "--peer", "10.0.0.1:7400", "--peer-token-file", good}, "--peer needs the far side's ports"},
		{[]string{"bench", "gen", "--vdev", "net_null0", "--peer", "10.0.0.1", "--peer-token-file", good, "--peer-vdev", "net_null0"}, `--peer "10.0.0.1": want ADDR:PORT`},
		{[]string{"bench", "gen", "--vdev", "net_null0", "--peer", ":7400", "--peer-token-file", good, "--peer-vdev", "net_null0"}, `--peer ":7400": want ADDR:PORT with the far host`},
		{[]string{"bench", "gen", "--vdev", "net_null0", "--peer", "10.0.0.1:0", "--peer-token-file", good, "--peer-vdev", "net_null0"}, `--peer "10.0.0.1:0": port "0": want a number 1..65535`},
		{[]string{"bench", "gen", "--vdev", "net_null0", "--peer", "10.0.0.1:99999", "--peer-token-file", good, "--peer-vdev", "net_null0"}, `port "99999": want a number 1..65535`},
		{[]string{"bench", "gen", "--vdev", "net_null0", "--peer", "10.0.0.1:7400", "--peer-token-file", fifo, "--peer-vdev", "net_null0"}, "--peer-token-file: " + fifo + " is not a regular file"},
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

// sweep and ndr take gen/loop's --peer flags (one set): each is checked
// before anything runs (exit 2 naming the flag); the far config follows
// the near one's queues; a far host that does not answer fails each
// cell (the cells go through the peer) without a dataplane here.
func TestBenchSweepNDRPeerFlags(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "token")
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(good, []byte("a-secret-of-enough-bytes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(short, []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	peer := []string{"--peer", "10.0.0.1:7400", "--peer-token-file", good, "--peer-vdev", "net_null0"}
	with := func(args ...string) []string { return append(args, peer...) }
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "sweep", "--peer", "10.0.0.1:7400", "--peer-vdev", "net_null0"}, "--peer needs --peer-token-file"},
		{[]string{"bench", "ndr", "--peer", "10.0.0.1:7400", "--peer-token-file", good}, "--peer needs the far side's ports"},
		{[]string{"bench", "sweep", "--peer", "10.0.0.1", "--peer-token-file", good, "--peer-vdev", "net_null0"}, `--peer "10.0.0.1": want ADDR:PORT`},
		{with("bench", "sweep", "--role", "rx"), "--peer is for gen"},
		{with("bench", "sweep", "--role", "fwd"), "--peer is for gen"},
		{with("bench", "sweep", "--role", "gen", "--vdev", "net_null0", "--peer-max-rate", "1Mpps"), "--peer-max-rate 1Mpps: caps the far forwarder of a loop"},
		{with("bench", "sweep", "--role", "gen", "--vdev", "net_null0", "--peer-tx-retry", "3"), "--peer-tx-retry 3: is the far forwarder's"},
		{with("bench", "sweep", "--role", "gen", "--vdev", "net_null0", "--peer-fwd-mode", "macswap"), "--peer-fwd-mode macswap: is the far forwarder's"},
		{with("bench", "ndr", "--peer-max-rate", "1Gbps"), "--peer-max-rate: rate \"1Gbps\": want frames per second"},
		{with("bench", "ndr", "--peer-cores", "0"), "--peer-cores 0: want 1 or more"},
		{with("bench", "ndr", "--peer-vdev", "net_null1,,x"), "malformed devargs"},
		{[]string{"bench", "ndr", "--peer", "10.0.0.1:1", "--peer-token-file", short, "--peer-vdev", "net_null0"}, "--peer-token-file: "},
		{[]string{"bench", "ndr", "--peer-vdev", "net_null0", "--peer-max-rate", "1Mpps"}, "--peer-max-rate, --peer-vdev: the far side's settings need --peer"},
		{[]string{"bench", "sweep", "--peer-cores", "2"}, "--peer-cores: the far side's settings need --peer"},
		{[]string{"bench", "loop", "--peer-vdev", "net_null0"}, "--peer-vdev: the far side's settings need --peer"},
		{with("bench", "ndr", "--trial-duration", "1ms"), "--trial-duration"},
	} {
		code, _, errOut := rig(t, c.args...)
		if code != exitUsage || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "a-secret") {
			t.Errorf("rig %v: exit %d, want %d with %q:\n%s", c.args, code, exitUsage, c.want, errOut)
		}
	}
	if code, _, errOut := rig(t, "bench", "gen", "--vdev", "net_null0", "--peer-max-rate", "1Mpps"); code != exitUsage || !strings.Contains(errOut, "unknown flag: --peer-max-rate") {
		t.Errorf("gen has no far forwarder: exit %d\n%s", code, errOut)
	}
	// the far config of each trial: the far role, the near side's queues,
	// the forwarder's cap
	p := peerFlags{addr: "10.0.0.1:7400", tokenFile: good, far: bench.Config{VDevs: []string{"net_null0", "net_null1"}, Cores: 1, FwdMode: "io", MaxRate: "20kpps", TxRetry: 5}}
	far, err := p.farConfig(bench.Config{Role: bench.RoleLoop, RxQ: 2, TxQ: 2, RxD: 512, TxD: 512, Burst: 16, Duration: time.Second, Rate: "1Mpps"})
	if err != nil || far.Role != bench.RoleFwd || far.RxQ != 2 || far.RxD != 512 || far.Burst != 16 || far.MaxRate != "20kpps" || far.TxRetry != 5 || far.Duration != 0 || far.Rate != "" {
		t.Errorf("far config %+v %v", far, err)
	}
	p.far.MaxRate, p.far.TxRetry = "", 0
	if far, err := p.farConfig(bench.Config{Role: bench.RoleGen}); err != nil || far.Role != bench.RoleRx || far.FwdMode != "" {
		t.Errorf("gen's far config %+v %v", far, err)
	}
	// nothing listens there: each cell fails naming the peer, and no
	// dataplane starts here (the peer is asked first)
	code, out, errOut := rig(t, "bench", "sweep", "--role", "gen", "--vdev", "net_null0", "--size", "64,128", "--duration", "1s", "--plot", "", "-o", "json",
		"--peer", "127.0.0.1:1", "--peer-token-file", good, "--peer-vdev", "net_null0")
	var sw search.Sweep
	if err := json.Unmarshal([]byte(out), &sw); err != nil || code != exitFailure || len(sw.Cells) != 2 || sw.Peer != "127.0.0.1:1" || sw.FarRole != bench.RoleRx {
		t.Fatalf("sweep, peer down: exit %d %v\n%s\n%s", code, err, out, errOut)
	}
	for _, c := range sw.Cells {
		if c.Status != search.CellFailed || !strings.Contains(c.Error, "peer 127.0.0.1:1") || !strings.Contains(c.Error, "rig bench serve") {
			t.Errorf("cell %d: %s %s", c.N, c.Status, c.Error)
		}
	}
}
