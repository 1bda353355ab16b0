package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"rig/bench"
	"rig/bench/child"
	"rig/internal/testutil"
)

// childOfThisTest is a child.Child whose "rig" is this test binary: its
// TestBenchChild runs `rig bench run-json` (RIG_CMD_BENCH_CHILD).
func childOfThisTest(t *testing.T, netns string) child.Child {
	t.Setenv("RIG_CMD_BENCH_CHILD", "bench\x1frun-json")
	var stderr strings.Builder
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("child stderr:\n%s", stderr.String())
		}
	})
	return child.Child{Exe: os.Args[0], Args: []string{"-test.run=^TestBenchChild$"}, NetNS: netns, Stderr: &stderr}
}

// A dataplane in a child process: a result, a failure with its cause and
// fix, and an interrupted run's partial result.
func TestPrivilegedBenchChildRing(t *testing.T) {
	testutil.RequirePrivileged(t)
	ch := childOfThisTest(t, "")
	ctx := context.Background()
	r, err := ch.Run(ctx, bench.Config{Role: bench.RoleLoop, VDevs: []string{"net_ring0"}, Count: 100000, RxD: 512, TxD: 512, NoHuge: true})
	if err != nil || r.SchemaVersion != bench.SchemaVersion || r.Sent != 100000 || r.Received != 100000 || r.Lost != 0 || len(r.Invalid) != 0 {
		t.Fatalf("ring loop: %+v, %v", r, err)
	}
	// a vdev EAL cannot probe: the child's error, with cause and fix
	_, err = ch.Run(ctx, bench.Config{Role: bench.RoleLoop, VDevs: []string{"net_af_packet0,iface=rignosuchif0"}, Count: 10, NoHuge: true})
	var cf interface {
		Cause() string
		Fix() string
	}
	if err == nil || !strings.Contains(err.Error(), "port net_af_packet0: probe failed") || !errors.As(err, &cf) || cf.Fix() == "" {
		t.Fatalf("bad vdev: %v, want a failure naming net_af_packet0 with a fix", err)
	}
	// until SIGINT: cancelling ctx stops it with a partial result
	ictx, cancel := context.WithCancel(ctx)
	time.AfterFunc(1500*time.Millisecond, cancel)
	r, err = ch.Run(ictx, bench.Config{Role: bench.RoleLoop, VDevs: []string{"net_ring0"}, RxD: 512, TxD: 512, NoHuge: true, Rate: "1Mpps"})
	if err != nil || !r.Interrupted || r.Sent == 0 || r.Received == 0 || r.Received > r.Sent {
		t.Fatalf("interrupted: %+v, %v", r, err)
	}
}

// A child whose hold may be released (Config.Release): it says when its
// figures are in, holds its links while the caller reads, and ends when
// released, not when the minute of Hold runs out; released at once, its
// result is the same run's.
func TestPrivilegedBenchChildHoldReleased(t *testing.T) {
	testutil.RequirePrivileged(t)
	ch := childOfThisTest(t, "")
	rel := bench.NewHoldRelease()
	type done struct {
		r   *bench.Result
		err error
	}
	got := make(chan done, 1)
	go func() {
		r, err := ch.Run(context.Background(), bench.Config{Role: bench.RoleLoop, VDevs: []string{"net_ring0"}, Count: 50000, RxD: 512, TxD: 512,
			NoHuge: true, Hold: time.Minute, Release: rel})
		got <- done{r, err}
	}()
	select {
	case <-rel.Measured:
	case d := <-got:
		t.Fatalf("the run ended before it said it was measured: %+v, %v", d.r, d.err)
	case <-time.After(30 * time.Second):
		t.Fatal("the child did not say it was measured within 30 s")
	}
	select {
	case d := <-got:
		t.Fatalf("the run ended before the release, with its 1 min hold not over: %+v, %v", d.r, d.err)
	case <-time.After(300 * time.Millisecond): // it holds
	}
	rel.Done()
	select {
	case d := <-got:
		if d.err != nil || d.r.Sent != 50000 || d.r.Received != 50000 || d.r.Interrupted {
			t.Fatalf("released run: %+v, %v", d.r, d.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the child still held its links 30 s after the release (its hold is 1 min)")
	}
}

// The child starts in a network namespace: a veth pair that exists only
// there carries the generator's frames from one end to the other. The
// link also carries what a real one does: IPv6 is on (the kernel sends
// ND and MLD as the fresh veths come up) and the test replays LLDP, ND,
// ARP and STP frames on it while the run runs. Those are counted apart as
// foreign frames, reported, and make neither the run invalid nor count as
// received: received stays at most what was sent, and all of it stamped.
func TestPrivilegedBenchChildNetNSAfPacket(t *testing.T) {
	testutil.RequirePrivileged(t)
	ns := fmt.Sprintf("rigdp%d", os.Getpid())
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v\n%s", args, err, out)
		}
	}
	ip("netns", "add", ns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	// IPv6 on: the kernel sends router solicitations, DAD and MLD on the link
	ip("netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=0")
	ip("-n", ns, "link", "add", "dpa", "type", "veth", "peer", "name", "dpb")
	ip("-n", ns, "link", "set", "dpa", "up")
	ip("-n", ns, "link", "set", "dpb", "up")
	if _, err := os.Stat("/sys/class/net/dpa"); err == nil {
		t.Fatal("dpa is in the host netns too: the test would prove nothing")
	}
	ch := childOfThisTest(t, ns)
	// a modest rate keeps the af_packet sockets lossless; on a loaded box
	// even that may not be reached, which the run rightly calls invalid:
	// the counts are what this test asserts, not the speed
	const n = 20000
	stop := make(chan struct{})
	replayed := replayForeign(t, ns, "dpa", stop) // dpa -> dpb: the receiver's side
	r, err := ch.Run(context.Background(), bench.Config{Role: bench.RoleLoop, NoHuge: true, Count: n, Rate: "100kpps",
		VDevs: []string{"net_af_packet0,iface=dpa", "net_af_packet1,iface=dpb"}})
	close(stop)
	nForeign := replayed()
	if err != nil || r.Sent != n || r.Received < n*99/100 || r.Received > n || r.Unstamped != 0 || r.Ports[1].RxPkts != r.Received {
		t.Fatalf("af_packet over a veth in netns %s: %+v, %v", ns, r, err)
	}
	if r.Foreign == 0 || nForeign == 0 {
		t.Fatalf("the test replayed %d foreign frames on the link while it ran, the receiver counted %d foreign: %+v", nForeign, r.Foreign, r)
	}
	for _, why := range r.Invalid {
		if !strings.HasPrefix(why, "asked --rate") {
			t.Errorf("invalid: %s", why)
		}
	}
	var text strings.Builder
	r.PrintSummary(&text)
	if !strings.Contains(text.String(), fmt.Sprintf("%d foreign frames ignored", r.Foreign)) {
		t.Errorf("the report does not say the foreign frames were ignored:\n%s", text.String())
	}
	t.Logf("replayed %d foreign frames; the receiver ignored %d (with the kernel's own ND/MLD)", nForeign, r.Foreign)
	// the same run from our netns cannot find the interfaces
	if _, err := childOfThisTest(t, "").Run(context.Background(), bench.Config{Role: bench.RoleLoop, NoHuge: true, Count: 10,
		VDevs: []string{"net_af_packet0,iface=dpa", "net_af_packet1,iface=dpb"}}); err == nil {
		t.Error("in the host netns dpa/dpb do not exist: want an error")
	}
}

// net_null "receives" whatever its buffers held: rig says the numbers
// cannot be right and exits 5, whatever --max-loss says, with no % of line.
func TestPrivilegedBenchInvalidMeasurementExit5(t *testing.T) {
	testutil.RequirePrivileged(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestBenchChild$")
	cmd.Env = append(os.Environ(), "RIG_CMD_BENCH_CHILD="+strings.Join([]string{"bench", "loop", "--vdev", "net_null0", "--vdev", "net_null1",
		"--duration", "1s", "--no-huge", "--max-loss", "0"}, "\x1f"))
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var xe *exec.ExitError
	if !errors.As(err, &xe) || xe.ExitCode() != exitInvalid {
		t.Fatalf("net_null loop: %v, want exit %d\n%s%s", err, exitInvalid, o.String(), e.String())
	}
	if !strings.Contains(o.String(), "INVALID MEASUREMENT: ") || !strings.Contains(e.String(), "invalid measurement") {
		t.Errorf("want the reason on stdout and stderr:\n%s%s", o.String(), e.String())
	}
	for _, l := range strings.Split(o.String(), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "net_null") && !strings.Contains(l, " - ") {
			t.Errorf("a %% of line from net_null's made-up speed: %q", l)
		}
	}
}

// A child that dies without its own cleanup (SIGKILL, a PMD's abort)
// leaves /var/run/dpdk/rig<pid>; the parent removes it.
func TestPrivilegedBenchChildKilledLeavesNoRuntimeDir(t *testing.T) {
	testutil.RequirePrivileged(t)
	// stands in for a dataplane: EAL made its runtime dir, then SIGKILL
	script := `d=/var/run/dpdk/rig$$; mkdir -p $d && : > $d/config && : > $d/fbarray_memseg-2048k-0-0 && echo $d >&2 && kill -KILL $$`
	var errOut bytes.Buffer
	_, err := child.Child{Exe: "/bin/sh", Args: []string{"-c", script}, Stderr: &errOut}.Run(context.Background(), bench.Config{})
	if err == nil || !strings.Contains(err.Error(), "ended without a result") {
		t.Fatalf("killed child: %v, want a failure", err)
	}
	d := strings.TrimSpace(errOut.String())
	if !strings.HasPrefix(d, "/var/run/dpdk/rig") {
		t.Fatalf("the stand-in made no runtime dir: %q", d)
	}
	if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s is left after the child died (%v)", d, err)
	}
}
