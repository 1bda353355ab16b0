package dataplane

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"rig/bench"
	"rig/internal/testutil"
	"rig/internal/testutil/hugetest"
)

// EAL can be initialised once per process: dataplane tests re-exec the
// test binary as a helper that runs one Run and prints helperOut as JSON.
const helperEnv = "RIG_BENCH_HELPER"

// churnEnv makes the helper start OS threads all through its start-up (as
// a busy Go program does), so a thread created while rig pins the process
// would escape the pinning and be seen on the forwarding CPU.
const churnEnv = "RIG_BENCH_HELPER_CHURN"

func churnThreads(ctx context.Context) {
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		go func() {
			runtime.LockOSThread() // never unlocked: this goroutine owns a new thread
			<-ctx.Done()
		}()
	}
}

type helperOut struct {
	Result   *bench.Result `json:"result"`
	Captured []bench.Frame `json:"captured"`
	Err      string        `json:"err"`
	Cause    string        `json:"cause"`
	Fix      string        `json:"fix"`
}

func TestMain(m *testing.M) {
	if cfg := os.Getenv(helperEnv); cfg != "" {
		os.Exit(helperMain(cfg))
	}
	cleanBase := testutil.KeepNoRuntimeBase()
	code := m.Run()
	cleanBase()
	os.Exit(code)
}

func helperMain(cfgJSON string) int {
	var c bench.Config
	if err := json.Unmarshal([]byte(cfgJSON), &c); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if os.Getenv(churnEnv) != "" {
		go churnThreads(ctx)
	}
	res, err := Run(ctx, c, bench.Progress{W: os.Stderr})
	out := helperOut{Result: res}
	if res != nil {
		out.Captured = res.Captured
	}
	if err != nil {
		out.Err = err.Error()
		var be *bench.Error
		if errors.As(err, &be) {
			out.Cause, out.Fix = be.Cause(), be.Fix()
		}
	}
	_ = json.NewEncoder(os.Stdout).Encode(out)
	if err != nil {
		return 1
	}
	return 0
}

// helper is a running re-exec'd dataplane process.
type helper struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdout bytes.Buffer
	stderr *bufio.Reader
	lines  chan string
	done   chan error
}

func startHelper(t *testing.T, c bench.Config, env ...string) *helper {
	t.Helper()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	h := &helper{t: t, lines: make(chan string, 1024), done: make(chan error, 1)}
	h.cmd = exec.Command(os.Args[0], "-test.run=^$")
	h.cmd.Env = append(append(os.Environ(), env...), helperEnv+"="+string(b))
	h.cmd.Stdout = &h.stdout
	pr, err := h.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			select {
			case h.lines <- sc.Text():
			default:
			}
		}
		close(h.lines)
	}()
	go func() { h.done <- h.cmd.Wait() }()
	t.Cleanup(func() {
		if h.cmd.ProcessState == nil {
			_ = h.cmd.Process.Kill() // by pid, only our own child
			<-h.done
		}
	})
	return h
}

// wait returns the helper's output and its exit error.
func (h *helper) wait(timeout time.Duration) (helperOut, error) {
	h.t.Helper()
	var err error
	select {
	case err = <-h.done:
	case <-time.After(timeout):
		_ = h.cmd.Process.Kill()
		<-h.done
		h.t.Fatalf("helper did not finish within %v; stderr: %s", timeout, h.drain())
	}
	var out helperOut
	if jerr := json.Unmarshal(h.stdout.Bytes(), &out); jerr != nil {
		h.t.Fatalf("helper output %q: %v (exit %v); stderr: %s", h.stdout.String(), jerr, err, h.drain())
	}
	return out, err
}

// heldDUTHold is how long a one-shot DUT between another helper's memif
// servers keeps its links after its run (Config.Hold): until the test saw
// the server side exit and interrupts it (waitAfter). A client that
// disconnects while the server still polls can crash the server (DPDK
// 22.11's memif unmaps the rings under the poller: the generator died of
// SIGSEGV in 1 of 28 TestPrivilegedFwdModesRewriteFrames runs on a loaded
// 2-CPU machine, quiesceMemif's 200 ms not being enough there).
const heldDUTHold = 60 * time.Second

// waitAfter waits for server (the memif servers' helper), then interrupts
// the held DUT h (its lcores stopped long before: the server waits up to
// 2 s for the client to leave first) and returns both outputs.
func (h *helper) waitAfter(server *helper, timeout time.Duration) (serverOut, hOut helperOut) {
	h.t.Helper()
	sout, err := server.wait(timeout)
	if err != nil || sout.Err != "" {
		h.t.Fatalf("server side: %v %s", err, sout.Err)
	}
	if err := h.cmd.Process.Signal(syscall.SIGINT); err != nil {
		h.t.Fatal(err)
	}
	hout, err := h.wait(10 * time.Second)
	if err != nil || hout.Err != "" {
		h.t.Fatalf("held DUT: %v %s", err, hout.Err)
	}
	return sout, hout
}

func (h *helper) drain() string {
	var b bytes.Buffer
	for {
		select {
		case l, ok := <-h.lines:
			if !ok {
				return b.String()
			}
			b.WriteString(l + "\n")
		default:
			return b.String()
		}
	}
}

// runHelper runs one config to completion and fails on error; it reserves
// the config's hugepages first (what other helpers of the test already run
// holds its own: a test that starts several at once names them all to
// needDataplane before the first).
func runHelper(t *testing.T, c bench.Config) helperOut {
	t.Helper()
	needDataplane(t, c)
	out, err := startHelper(t, c).wait(60 * time.Second)
	if err != nil || out.Err != "" {
		t.Fatalf("helper: exit %v: %s", err, out.Err)
	}
	return out
}

// needDataplane skips without root and reserves the hugepages of the
// helpers the test is about to run at once: each config's EAL memory as
// the dataplane sizes it (MemoryMB). Pages a running process (an OvS, an
// earlier helper) already took are not free: it needs no share here.
func needDataplane(t *testing.T, concurrent ...bench.Config) {
	t.Helper()
	testutil.RequirePrivileged(t)
	hugetest.ReserveFor(t, helperNeeds(t, concurrent...)...)
}

// helperNeeds is the hugepage memory of each helper config.
func helperNeeds(t *testing.T, cfgs ...bench.Config) []hugetest.Need {
	t.Helper()
	var needs []hugetest.Need
	for _, c := range cfgs {
		mb, err := MemoryMB(c)
		if err != nil {
			t.Fatalf("helper config: %v", err)
		}
		on := strings.Join(c.VDevs, " ")
		if on == "" {
			on = "its default memif pair"
		}
		needs = append(needs, hugetest.DPDK(fmt.Sprintf("rig %s helper on %s", c.Role, on), mb))
	}
	return needs
}

func sockPath(t *testing.T, name string) string {
	// memif socket paths must fit sun_path (108 bytes)
	d, err := os.MkdirTemp("", "rigb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return filepath.Join(d, name)
}

func captureInfo(n int) gopacket.CaptureInfo {
	return gopacket.CaptureInfo{Timestamp: time.Unix(1700000000, 0), CaptureLength: n, Length: n}
}

// writePcap writes frames as an Ethernet pcap file.
func writePcap(t *testing.T, path string, frames [][]byte) {
	t.Helper()
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := pcapgo.NewWriter(fh)
	if err := w.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		if err := w.WritePacket(captureInfo(len(f)), f); err != nil {
			t.Fatal(err)
		}
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
}
