package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"rig/bench"
	"rig/bench/peer"
	"rig/internal/testutil"
)

// serveProc is a real `rig bench serve` on loopback.
type serveProc struct {
	t    *testing.T
	cmd  *exec.Cmd
	addr string
	log  *lockedLog
	done chan struct{}
}

// startServe runs bin's serve (under wrap, e.g. prlimit) with args after
// --listen and --token-file, and waits for its address.
func startServe(t *testing.T, wrap []string, bin, token string, args ...string) *serveProc {
	t.Helper()
	return startServeOn(t, wrap, bin, token, "127.0.0.1:0", args...)
}

// startServeOn is startServe listening on listen (ADDR:0 picks a port).
func startServeOn(t *testing.T, wrap []string, bin, token, listen string, args ...string) *serveProc {
	t.Helper()
	argv := append(append(append([]string(nil), wrap...), bin, "bench", "serve", "--listen", listen, "--token-file", token, "--quiet"), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &serveProc{t: t, cmd: cmd, log: &lockedLog{}, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(errPipe)
		re := regexp.MustCompile(`listening on (\S+) `)
		for sc.Scan() {
			s.log.add(sc.Text())
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		_ = cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-s.done
	})
	select {
	case s.addr = <-addr:
	case <-time.After(10 * time.Second):
		t.Fatalf("serve did not say where it listens:\n%s", s.log.String())
	}
	return s
}

func (s *serveProc) running() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// waitLog waits until the log holds want.
func (s *serveProc) waitLog(want string, max time.Duration) bool {
	for deadline := time.Now().Add(max); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if strings.Contains(s.log.String(), want) {
			return true
		}
	}
	return false
}

// stop ends serve with SIGINT and waits.
func (s *serveProc) stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.t.Errorf("serve did not stop on SIGINT:\n%s", s.log.String())
	}
}

func writeToken(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte("serve-test-token-0123456789abcdef\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// The real serve under a flood of silent connections: every caller gets
// its hello, the oldest silent ones are closed to make room (at most 8
// pending from one address, 32 in all, by default), logged once, and
// authenticated callers are served while the flood's newest connections
// are still open (a cap that closed new callers at once locked them out);
// with a valid token, the far configs that deleted and overwrote files on
// a v1 serve (a vhost socket over an existing file, a pcap through DPDK's
// alias eth_pcap) are refused before any EAL and the files are as they
// were; the memif dir serve made is root's alone and removed when it stops.
func TestBenchServeCapsCallersAndRefusesFiles(t *testing.T) {
	bin := buildRig(t)
	token := writeToken(t)
	memif := filepath.Join(t.TempDir(), "memif")
	s := startServe(t, nil, bin, token, "--handshake-timeout", "30s", "--memif-dir", memif)
	if st, err := os.Stat(memif); err != nil || st.Mode().Perm() != 0o700 || !st.IsDir() {
		t.Fatalf("memif dir: %v %v", st, err)
	}
	flood := peer.DefaultMaxPending + 8
	var idle []*bufio.Reader
	var conns []net.Conn
	for i := 0; i < flood; i++ {
		c, err := net.Dial("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		r := bufio.NewReader(c)
		if l, err := r.ReadString('\n'); err != nil || !strings.Contains(l, `"hello"`) {
			t.Fatalf("caller %d of a flood got no hello: %q %v", i, l, err)
		}
		idle = append(idle, r)
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	closed := 0
	for i, r := range idle {
		_ = conns[i].SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		_, err := r.ReadString('\n')
		switch {
		case errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET):
			closed++
			if i >= flood-peer.DefaultMaxPendingPerSource {
				t.Errorf("caller %d (one of the %d newest) was closed", i, peer.DefaultMaxPendingPerSource)
			}
		case errors.Is(err, os.ErrDeadlineExceeded):
		default:
			t.Errorf("caller %d: %v", i, err)
		}
	}
	if closed != flood-peer.DefaultMaxPendingPerSource {
		t.Errorf("%d of %d silent callers were closed; want all but the %d newest", closed, flood, peer.DefaultMaxPendingPerSource)
	}
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ vdev, want string }{
		{"net_vhost0,iface=" + victim, "driver net_vhost is not served"},
		{"eth_pcap0,tx_pcap=" + victim, "driver net_pcap (eth_pcap is DPDK's alias of it) is not served"},
		{"net_af_packet0,iface=lo", "netdev lo is not one serve was started with (--allow-netdev)"},
	} {
		code, _, errOut := runBin(t, bin, "bench", "gen", "--vdev", "net_null0", "--no-huge", "--count", "10", "--peer", s.addr, "--peer-token-file", token,
			"--peer-vdev", c.vdev, "--peer-no-huge")
		if code != exitUsage || !strings.Contains(errOut, "peer "+s.addr+": refused (config)") || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "unauthenticated") {
			t.Errorf("--peer-vdev %s: exit %d\n%s\nserve:\n%s", c.vdev, code, errOut, s.log.String())
		}
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "keep me\n" {
		t.Errorf("victim file: %q %v", b, err)
	}
	// serve logs each refusal before it sends it, but its stderr reaches
	// s.log through a pipe: the last line may still be on its way
	s.waitLog("netdev lo is not one serve was started with", 5*time.Second)
	l := s.log.String()
	if n := strings.Count(l, ", for a newer caller: "); n < 1 || n > 2 || !strings.Contains(l, "without a start, for a newer caller: its source 127.0.0.1 already had 8 callers in their handshake (--max-pending-per-source)") ||
		strings.Count(l, "refused config") != 3 || strings.Contains(l, ": running ") || strings.Contains(l, "serve-test-token") {
		t.Errorf("serve log:\n%s", l)
	}
	s.stop()
	if _, err := os.Stat(memif); !os.IsNotExist(err) {
		t.Errorf("memif dir after serve stopped: %v", err)
	}
}

// Under fd exhaustion the real serve keeps serving: run with 64 file
// descriptors (prlimit) and room for 1000 callers from one address (the
// per-source share would otherwise close the oldest), 300 idle connections
// make accept fail with EMFILE; serve logs it once, backs off and stays
// up; once they are gone a real near side is served (net_null on both
// sides, real DPDK).
func TestPrivilegedBenchServeFDExhaustion(t *testing.T) {
	testutil.RequirePrivileged(t)
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("needs prlimit (util-linux)")
	}
	bin := buildRig(t)
	token := writeToken(t)
	memif := filepath.Join(t.TempDir(), "memif")
	s := startServe(t, []string{"prlimit", "--nofile=64:64", "--"}, bin, token, "--handshake-timeout", "2s", "--max-pending", "1000", "--max-pending-per-source", "1000", "--memif-dir", memif)
	var idle []net.Conn
	for i := 0; i < 300; i++ {
		c, err := net.DialTimeout("tcp", s.addr, 2*time.Second)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		idle = append(idle, c)
	}
	if !s.waitLog("too many open files; retrying", 5*time.Second) {
		t.Fatalf("no EMFILE logged:\n%s", s.log.String())
	}
	time.Sleep(time.Second) // a few backoffs
	if !s.running() {
		t.Fatalf("serve exited under fd exhaustion:\n%s", s.log.String())
	}
	for _, c := range idle {
		c.Close()
	}
	// serve closes its side of each as its handshake reads the EOF: wait
	// for that (the doc's "once they are gone"), or the near side's run can
	// find serve still at its 64 descriptors, and its dataplane child's
	// fork/exec fails with EMFILE (1 suite run)
	for deadline := time.Now().Add(10 * time.Second); openFDs(t, s.cmd.Process.Pid) > 32; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("serve still holds %d descriptors 10 s after the idle callers closed:\n%s", openFDs(t, s.cmd.Process.Pid), s.log.String())
		}
	}
	code, out, errOut := runBin(t, bin, "bench", "gen", "--vdev", "net_null0", "--no-huge", "--count", "5000", "--rate", "10kpps", "-o", "json",
		"--peer", s.addr, "--peer-token-file", token, "--peer-vdev", "net_null0,no-rx=1", "--peer-no-huge")
	var r bench.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil || (code != exitOK && code != exitInvalid) || r.Peer == nil || r.Peer.Addr != s.addr || r.Sent != 5000 || len(r.Ports) != 2 || r.Ports[1].Host != "far" {
		t.Fatalf("near side after the flood: exit %d %v\n%s\n%s\nserve:\n%s", code, err, out, errOut, s.log.String())
	}
	l := s.log.String()
	// logged once per streak of failed accepts, not once per failure
	if n := strings.Count(l, "retrying"); n < 1 || n > strings.Count(l, "works again after")+1 || !strings.Contains(l, "works again after") || !strings.Contains(l, ": running rx on net_null0") || !strings.Contains(l, "done: received 0") {
		t.Errorf("serve log:\n%s", l)
	}
	if !s.running() {
		t.Fatalf("serve exited:\n%s", l)
	}
	// a far memif pair: serve puts its socket into its memif dir (a path
	// socket, not an abstract one), and DPDK brings the pair up there
	code, out, errOut = runBin(t, bin, "bench", "gen", "--vdev", "net_null0", "--no-huge", "--count", "1000", "--rate", "10kpps", "-o", "json",
		"--peer", s.addr, "--peer-token-file", token, "--peer-no-huge",
		"--peer-vdev", "net_memif0,role=server,socket=pair.sock", "--peer-vdev", "net_memif1,role=client,socket=pair.sock")
	r = bench.Result{}
	if err := json.Unmarshal([]byte(out), &r); err != nil || (code != exitOK && code != exitInvalid) || r.Peer == nil || len(r.Ports) != 3 {
		t.Fatalf("far memif pair: exit %d %v\n%s\n%s\nserve:\n%s", code, err, out, errOut, s.log.String())
	}
	if !strings.Contains(s.log.String(), ": running rx on net_memif0, net_memif1") {
		t.Errorf("serve log:\n%s", s.log.String())
	}
	unix, _ := os.ReadFile("/proc/net/unix")
	if strings.Contains(string(unix), "@"+memif) || strings.Contains(string(unix), "@pair.sock") {
		t.Errorf("an abstract memif socket was made")
	}
	t.Logf("serve log:\n%s", s.log.String())
}

// openFDs is how many file descriptors process pid holds.
func openFDs(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatalf("descriptors of pid %d: %v", pid, err)
	}
	return len(ents)
}
