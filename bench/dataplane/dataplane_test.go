package dataplane

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"rig/bench"
)

// stampSeq decodes rig's payload stamp (shim.c: magic, stream<<48|seq, tsc).
func stampSeq(t *testing.T, f []byte) (stream uint16, seq uint64) {
	t.Helper()
	if len(f) < 60 || binary.LittleEndian.Uint16(f[42:]) != 0x5247 {
		t.Fatalf("frame without rig stamp: % x", f[:min(len(f), 64)])
	}
	ss := binary.LittleEndian.Uint64(f[44:])
	return uint16(ss >> 48), ss & (1<<48 - 1)
}

func checkNoLoss(t *testing.T, r *bench.Result, n uint64) {
	t.Helper()
	if r.Sent != n || r.Received != n || r.Lost != 0 || r.SeqGaps != 0 || r.Reordered != 0 || r.Unstamped != 0 {
		t.Fatalf("sent %d received %d lost %d gaps %d reordered %d unstamped %d, want %d/%d and zeros",
			r.Sent, r.Received, r.Lost, r.SeqGaps, r.Reordered, r.Unstamped, n, n)
	}
}

// gen -> net_ring (a port whose tx ring is its rx ring) -> rx, one process.
func TestPrivilegedLoopRingExactCountsFlowsSizes(t *testing.T) {
	needDataplane(t)
	const n = 200000
	out := runHelper(t, bench.Config{Role: bench.RoleLoop, VDevs: []string{"net_ring0"}, Count: n, FrameSize: 128,
		SrcIP: "10.0.0.1-10.0.0.4", DstIP: "10.0.1.1-10.0.1.2", SPort: "1000-1002", DPort: "2000",
		RxD: 512, TxD: 512, Capture: 48})
	r := out.Result
	checkNoLoss(t, r, n)
	if p := r.Ports[0]; p.TxBytes != n*124 || p.RxBytes != n*124 {
		t.Errorf("bytes tx %d rx %d, want %d each (128 B frames less FCS)", p.TxBytes, p.RxBytes, n*124)
	}
	if r.Latency == nil || r.Latency.Samples != n || r.Latency.MinUs <= 0 || r.Latency.P50Us < r.Latency.MinUs || r.Latency.P99Us < r.Latency.P50Us || r.Latency.MaxUs < r.Latency.P99Us*0.9 {
		t.Errorf("latency %+v: want n samples and min <= p50 <= p99 <= max", r.Latency)
	}
	if len(out.Captured) != 48 {
		t.Fatalf("captured %d frames, want 48", len(out.Captured))
	}
	srcs, dsts, sports := map[string]bool{}, map[string]bool{}, map[uint16]bool{}
	for i, f := range out.Captured {
		if f.Len != 124 || len(f.Data) != 124 {
			t.Fatalf("frame %d: %d bytes, want 124", i, f.Len)
		}
		// 24 flows: one sequence per flow slot (stream<<10 | slot)
		if stream, seq := stampSeq(t, f.Data); seq != uint64(i/24) || int(stream) != i%24 {
			t.Fatalf("frame %d carries stream %#x seq %d, want slot %d seq %d", i, stream, seq, i%24, i/24)
		}
		if f.Data[12] != 0x08 || f.Data[13] != 0 || f.Data[23] != 17 {
			t.Fatalf("frame %d: not IPv4/UDP: % x", i, f.Data[:42])
		}
		if binary.BigEndian.Uint16(f.Data[16:]) != 110 || binary.BigEndian.Uint16(f.Data[38:]) != 90 {
			t.Fatalf("frame %d: ip len %d udp len %d, want 110/90", i, binary.BigEndian.Uint16(f.Data[16:]), binary.BigEndian.Uint16(f.Data[38:]))
		}
		if ipSum(f.Data[14:34]) != 0xffff {
			t.Fatalf("frame %d: bad IPv4 header checksum", i)
		}
		srcs[string(f.Data[26:30])] = true
		dsts[string(f.Data[30:34])] = true
		sports[binary.BigEndian.Uint16(f.Data[34:])] = true
		// flow order: src fastest, then dst, then sport
		if f.Data[29] != byte(1+i%4) || f.Data[33] != byte(1+i/4%2) || binary.BigEndian.Uint16(f.Data[34:]) != uint16(1000+i/8%3) {
			t.Fatalf("frame %d: src .%d dst .%d sport %d, want .%d .%d %d", i, f.Data[29], f.Data[33], binary.BigEndian.Uint16(f.Data[34:]), 1+i%4, 1+i/4%2, 1000+i/8%3)
		}
	}
	if len(srcs) != 4 || len(dsts) != 2 || len(sports) != 3 {
		t.Errorf("flows observed: %d src IPs, %d dst IPs, %d sports; want 4, 2, 3", len(srcs), len(dsts), len(sports))
	}
}

// More flows than the generator prebuilds (RIG_MAX_FLOW_TMPL): each frame
// is patched instead, in the same order, with a valid checksum.
func TestPrivilegedLoopRingManyFlowsPatched(t *testing.T) {
	needDataplane(t)
	const n = 5000
	out := runHelper(t, bench.Config{Role: bench.RoleLoop, VDevs: []string{"net_ring0"}, Count: n, SrcIP: "10.0.0.0-10.0.255.255",
		RxD: 512, TxD: 512, Capture: 1500})
	checkNoLoss(t, out.Result, n)
	if len(out.Captured) != 1500 {
		t.Fatalf("captured %d frames, want 1500", len(out.Captured))
	}
	for i, f := range out.Captured {
		if src := binary.BigEndian.Uint32(f.Data[26:]); src != 0x0a000000+uint32(i) {
			t.Fatalf("frame %d: src %#x, want %#x", i, src, 0x0a000000+i)
		}
		if ipSum(f.Data[14:34]) != 0xffff {
			t.Fatalf("frame %d: bad IPv4 header checksum", i)
		}
		if stream, seq := stampSeq(t, f.Data); int(stream) != i%1024 || seq != uint64(i/1024) {
			t.Fatalf("frame %d: stream %#x seq %d, want slot %d seq %d", i, stream, seq, i%1024, i/1024)
		}
	}
}

func ipSum(h []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(h); i += 2 {
		s += uint32(binary.BigEndian.Uint16(h[i:]))
	}
	for s > 0xffff {
		s = s&0xffff + s>>16
	}
	return uint16(s)
}

// gen -> memif server/client pair -> rx with 2 queues (2 streams) on one core.
func TestPrivilegedLoopMemifPairTwoQueues(t *testing.T) {
	needDataplane(t)
	sock := sockPath(t, "m.sock")
	const n = 300001
	// two worker lcores (lcore 2 shares CPU 0 with the main lcore: 2-core CI)
	out := runHelper(t, bench.Config{Role: bench.RoleLoop, Count: n, RxQ: 2, TxQ: 2, RxD: 512, TxD: 512, FrameSize: 64,
		Cores: 2, Lcores: "0@0,1@1,2@0", SrcIP: "10.0.0.1-10.0.0.100",
		VDevs: []string{"net_memif0,role=server,socket=" + sock, "net_memif1,role=client,socket=" + sock}})
	r := out.Result
	checkNoLoss(t, r, n)
	if r.Ports[0].TxPkts != n || r.Ports[1].RxPkts != n || r.Ports[0].RxPkts != 0 {
		t.Errorf("ports %+v: want port0 tx %d, port1 rx %d", r.Ports, n, n)
	}
}

func TestPrivilegedPcapReplayByteExact(t *testing.T) {
	needDataplane(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "in.pcap")
	frames := [][]byte{make([]byte, 60), make([]byte, 333), make([]byte, 1514)}
	for i, f := range frames {
		for j := range f {
			f[j] = byte(i*7 + j*13)
		}
	}
	writePcap(t, path, frames)
	out := runHelper(t, bench.Config{Role: bench.RoleLoop, VDevs: []string{"net_ring0"}, Pcap: path, Count: 7, Capture: 7, RxD: 512, TxD: 512})
	if out.Result.Sent != 7 || out.Result.Received != 7 || out.Result.Unstamped != 7 {
		t.Fatalf("sent %d received %d unstamped %d, want 7 each", out.Result.Sent, out.Result.Received, out.Result.Unstamped)
	}
	if len(out.Captured) != 7 {
		t.Fatalf("captured %d, want 7", len(out.Captured))
	}
	for i, c := range out.Captured {
		if want := frames[i%3]; !bytes.Equal(c.Data, want) || int(c.Len) != len(want) {
			t.Errorf("replayed frame %d (%d B) differs from pcap frame %d (%d B)", i, c.Len, i%3, len(want))
		}
	}
}

// Two processes: loop (gen+rx on memif servers) -> DUT fwd (memif clients).
func TestPrivilegedFwdModesRewriteFrames(t *testing.T) {
	needDataplane(t)
	for _, mode := range []string{"io", "mac", "macswap"} {
		t.Run(mode, func(t *testing.T) {
			s1, s2 := sockPath(t, "a.sock"), sockPath(t, "b.sock")
			const n = 20000
			// the generator owns the memif servers: start it first
			genCfg := bench.Config{Role: bench.RoleLoop, Count: n, Capture: 16, RxD: 512, TxD: 512, Lcores: "0@1,1@0",
				VDevs: []string{"net_memif0,role=server,socket=" + s1, "net_memif1,role=server,socket=" + s2}}
			dutCfg := bench.Config{Role: bench.RoleFwd, FwdMode: mode, FwdDstMAC: "02:aa:00:00:00:01", FwdSrcMAC: "02:bb:00:00:00:02",
				RxD: 512, TxD: 512, TxRetry: 100000, Count: n, Hold: heldDUTHold,
				VDevs: []string{"net_memif0,role=client,socket=" + s1, "net_memif1,role=client,socket=" + s2}}
			needDataplane(t, genCfg, dutCfg)
			gen := startHelper(t, genCfg)
			dut := startHelper(t, dutCfg)
			out, dres := dut.waitAfter(gen, 30*time.Second)
			if d := dres.Result; d.Ports[0].Drops != 0 {
				t.Errorf("DUT dropped %d", d.Ports[0].Drops)
			}
			checkNoLoss(t, out.Result, n)
			if d := dres.Result; d.Ports[0].RxPkts != n || d.Ports[1].TxPkts != n {
				t.Errorf("DUT forwarded rx %d tx %d, want %d", d.Ports[0].RxPkts, d.Ports[1].TxPkts, n)
			}
			// mac and macswap count bytes (Gbps, the measured frame size);
			// io reads no frame and says its bytes are not measured
			d := dres.Result
			if mode == "io" {
				for _, p := range d.Ports {
					if !p.BytesNotMeasured || p.RxBytes != 0 || p.TxBytes != 0 || p.RxGbps != 0 || p.TxGbps != 0 {
						t.Errorf("io DUT port %s: bytesNotMeasured %v, rx %d B, tx %d B, %.3f/%.3f Gbps: want not measured, no bytes, no Gbps", p.Name, p.BytesNotMeasured, p.RxBytes, p.TxBytes, p.RxGbps, p.TxGbps)
					}
				}
				if d.FrameSize != 0 || d.FrameSizeSource != bench.FrameSizeNotMeasured || !slices.Contains(d.Warnings, bench.IONoBytes) {
					t.Errorf("io DUT frame %d B (%s), warnings %q: want 0 B (%s) and the io note", d.FrameSize, d.FrameSizeSource, d.Warnings, bench.FrameSizeNotMeasured)
				}
			} else if d.Ports[0].RxBytes != n*60 || d.Ports[1].TxBytes != n*60 || d.FrameSize != 64 || d.Ports[0].BytesNotMeasured {
				t.Errorf("DUT counted rx %d B, tx %d B, frame %d B (bytes not measured: %v): want %d B each way (60 B frames without FCS), 64 B", d.Ports[0].RxBytes, d.Ports[1].TxBytes, d.FrameSize, d.Ports[0].BytesNotMeasured, n*60)
			}
			for i, f := range out.Captured {
				dst, src := f.Data[0:6], f.Data[6:12]
				var wantDst, wantSrc []byte
				switch mode {
				case "io":
					wantDst, wantSrc = []byte{2, 0, 0, 0, 0, 2}, nil
				case "mac":
					wantDst, wantSrc = []byte{2, 0xaa, 0, 0, 0, 1}, []byte{2, 0xbb, 0, 0, 0, 2}
				case "macswap":
					wantDst, wantSrc = nil, []byte{2, 0, 0, 0, 0, 2}
				}
				if wantDst != nil && !bytes.Equal(dst, wantDst) {
					t.Fatalf("%s frame %d: dst %x, want %x", mode, i, dst, wantDst)
				}
				if wantSrc != nil && !bytes.Equal(src, wantSrc) {
					t.Fatalf("%s frame %d: src %x, want %x", mode, i, src, wantSrc)
				}
				if mode == "macswap" && bytes.Equal(dst, []byte{2, 0, 0, 0, 0, 2}) {
					t.Fatalf("macswap frame %d: dst unchanged", i)
				}
				if _, seq := stampSeq(t, f.Data); seq != uint64(i) {
					t.Fatalf("frame %d: seq %d", i, seq)
				}
			}
		})
	}
}

func TestPrivilegedRateLimitWithin5Percent(t *testing.T) {
	needDataplane(t)
	const pps = 100000
	out := runHelper(t, bench.Config{Role: bench.RoleLoop, VDevs: []string{"net_ring0"}, Rate: "100kpps", Duration: 2 * time.Second, RxD: 512, TxD: 512})
	r := out.Result
	got := float64(r.Sent) / r.DurationS
	if math.Abs(got-pps)/pps > 0.05 {
		t.Errorf("rate %.0f pps (%d in %.3f s), want %d within 5%%", got, r.Sent, r.DurationS, pps)
	}
	if r.Lost != 0 {
		t.Errorf("lost %d", r.Lost)
	}
}

// SIGINT mid-run: exit 0 within 1 s, hugepage files gone.
func TestPrivilegedSIGINTStopsCleanly(t *testing.T) {
	needDataplane(t)
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "hugetlbfs", "-o", "pagesize=2M", "nodev", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount hugetlbfs on %s: %v: %s", dir, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", dir).Run() })
	// the helper keeps starting OS threads while rig pins: none may escape
	cfg := bench.Config{Role: bench.RoleLoop, VDevs: []string{"net_ring0"}, HugeDir: dir, RxD: 512, TxD: 512, Interval: 100 * time.Millisecond}
	needDataplane(t, cfg)
	h := startHelper(t, cfg, churnEnv+"=1")
	deadline := time.After(20 * time.Second)
	for running := false; !running; {
		select {
		case l, ok := <-h.lines:
			if !ok {
				t.Fatal("helper exited before running")
			}
			running = strings.HasPrefix(l, "[")
		case <-deadline:
			t.Fatal("helper never reported rates")
		}
	}
	// Go and EAL control threads sit on the main lcore's CPU, the worker alone on its own
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", h.cmd.Process.Pid))
	workers := 0
	for _, task := range tasks {
		comm, _ := os.ReadFile(task + "/comm")
		st, _ := os.ReadFile(task + "/status")
		cpus := ""
		for _, l := range strings.Split(string(st), "\n") {
			if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
				cpus = strings.TrimSpace(v)
			}
		}
		name := strings.TrimSpace(string(comm))
		switch {
		case strings.HasPrefix(name, "rte-worker"):
			workers++
			if cpus != "1" {
				t.Errorf("worker thread %s on CPUs %q, want 1", name, cpus)
			}
		case cpus != "0" && cpus != "":
			t.Errorf("thread %s (%s) on CPUs %q, want 0 (the main lcore's)", name, task, cpus)
		}
	}
	if workers != 1 {
		t.Errorf("%d worker lcore threads, want 1", workers)
	}
	t0 := time.Now()
	if err := h.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	out, err := h.wait(5 * time.Second)
	took := time.Since(t0)
	if err != nil {
		t.Fatalf("exit after SIGINT: %v (%s)", err, out.Err)
	}
	t.Logf("exited %v after SIGINT, %d frames sent", took, out.Result.Sent)
	if took > time.Second {
		t.Errorf("exit took %v after SIGINT, want < 1 s", took)
	}
	if !out.Result.Interrupted || out.Result.Sent == 0 {
		t.Errorf("result %+v: want interrupted with frames sent", out.Result)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(left) != 0 {
		t.Errorf("hugepage files left in %s: %v", dir, left)
	}
	// nor the EAL runtime dir (config, fbarrays, telemetry socket)
	rt := fmt.Sprintf("/var/run/dpdk/rig%d", h.cmd.Process.Pid)
	if _, err := os.Stat(rt); !os.IsNotExist(err) {
		ents, _ := os.ReadDir(rt)
		t.Errorf("EAL runtime dir %s left behind (%d entries)", rt, len(ents))
	}
}

// rig bench gen in one process -> memif -> rig bench rx in another.
func TestPrivilegedGenToRxTwoProcesses(t *testing.T) {
	needDataplane(t)
	sock := sockPath(t, "g.sock")
	const n = 50000
	rxCfg := bench.Config{Role: bench.RoleRx, Count: n, RxD: 512, TxD: 512, Lcores: "0@1,1@0",
		VDevs: []string{"net_memif0,role=server,socket=" + sock}}
	genCfg := bench.Config{Role: bench.RoleGen, Count: n, RxD: 512, TxD: 512, Rate: "1Mpps", DPort: "5000-5007", FrameSize: 200,
		VDevs: []string{"net_memif0,role=client,socket=" + sock}}
	needDataplane(t, rxCfg, genCfg)
	rx := startHelper(t, rxCfg)
	gout := runHelper(t, genCfg)
	rout, err := rx.wait(30 * time.Second)
	if err != nil || rout.Err != "" {
		t.Fatalf("rx: %v %s", err, rout.Err)
	}
	g, r := gout.Result, rout.Result
	if g.Sent != n || g.Ports[0].TxPkts != n || r.Received != n || r.SeqGaps != 0 || r.Reordered != 0 || r.Unstamped != 0 {
		t.Fatalf("gen sent %d, rx received %d gaps %d reordered %d unstamped %d; want %d, 0 loss", g.Sent, r.Received, r.SeqGaps, r.Reordered, r.Unstamped, n)
	}
	if r.Ports[0].RxMpps < 0.5 || r.Ports[0].RxMpps > 1.5 {
		t.Errorf("rx rate %.3f Mpps for a 1 Mpps generator", r.Ports[0].RxMpps)
	}
	// rx has no --size of its own: it reports what it measured
	if r.FrameSize != 200 || r.FrameSizeSource != "measured" {
		t.Errorf("rx frame size %d (%s), want 200 (measured)", r.FrameSize, r.FrameSizeSource)
	}
}

// A failed rte_eal_init (here: a --vdev no driver parses) must not leave
// its runtime dir (config, fbarrays: ~1.8 MB of tmpfs) behind.
func TestPrivilegedEALInitFailureRemovesRuntimeDir(t *testing.T) {
	needDataplane(t) // EAL fails before it maps any memory
	prefix := fmt.Sprintf("rigfail%d", os.Getpid())
	rt := "/var/run/dpdk/" + prefix
	t.Cleanup(func() { _ = os.RemoveAll(rt) })
	out, err := startHelper(t, bench.Config{Role: bench.RoleLoop, VDevs: []string{"net_nosuchdriver0"}, FilePrefix: prefix}).wait(30 * time.Second)
	if err == nil || !strings.Contains(out.Err, "rte_eal_init") || !strings.Contains(out.Err, "No such device") {
		t.Fatalf("bad vdev: exit %v, err %q; want an rte_eal_init failure", err, out.Err)
	}
	if _, err := os.Stat(rt); !os.IsNotExist(err) {
		ents, _ := os.ReadDir(rt)
		t.Errorf("EAL runtime dir %s left behind after a failed init (%d entries)", rt, len(ents))
	}
}

// A run that made /var/run/dpdk (a fresh host has none) removes it again
// with its own runtime dir, after a failed EAL init too; one it found
// there stays.
func TestPrivilegedRunLeavesNoRuntimeBase(t *testing.T) {
	needDataplane(t)
	const base = "/var/run/dpdk"
	if _, err := os.Stat(base); err == nil {
		if err := os.Remove(base); err != nil { // not empty: other processes' dirs
			t.Skipf("%s holds other DPDK processes' runtime dirs: %v", base, err)
		}
		t.Cleanup(func() { _ = os.MkdirAll(base, 0o700) }) // as the test found it
	}
	runHelper(t, bench.Config{Role: bench.RoleLoop, VDevs: []string{"net_ring0"}, Count: 1000, RxD: 512, TxD: 512})
	if _, err := os.Stat(base); !os.IsNotExist(err) {
		ents, _ := os.ReadDir(base)
		t.Errorf("after a run on a host without %s: it is there (%v), %d entries", base, err, len(ents))
	}
	if out, err := startHelper(t, bench.Config{Role: bench.RoleLoop, VDevs: []string{"net_nosuchdriver0"}}).wait(30 * time.Second); err == nil {
		t.Fatalf("bad vdev: %+v, want an rte_eal_init failure", out)
	}
	if _, err := os.Stat(base); !os.IsNotExist(err) {
		t.Errorf("after a failed EAL init on a host without %s: it is there (%v)", base, err)
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(base) })
	runHelper(t, bench.Config{Role: bench.RoleLoop, VDevs: []string{"net_ring0"}, Count: 1000, RxD: 512, TxD: 512})
	if _, err := os.Stat(base); err != nil {
		t.Errorf("a run removed the %s it found: %v", base, err)
	}
}

// loop --rxq 2 alone (the default memif pair): both ports get 2 queues each
// way, so the pair links up and every frame arrives (before: link down
// after 10 s, blamed on the cable).
func TestPrivilegedLoopRxQ2DefaultPair(t *testing.T) {
	needDataplane(t)
	const n = 100000
	out := runHelper(t, bench.Config{Role: bench.RoleLoop, Count: n, RxQ: 2, RxD: 512, TxD: 512})
	r := out.Result
	checkNoLoss(t, r, n)
}

// Real loss: gen (loop) -> memif -> DUT fwd (no tx retry) -> memif with a
// 16-slot ring -> rx (loop). The DUT receives the generator's bursts of 32
// whole (memif publishes a burst at once) and can put at most 16 into the
// return ring, so it drops frames mid-stream; nothing else loses any (memif
// tx back-pressures the generator). The loop must report exactly the DUT's
// drops as lost, and every frame missing before the last one received as a
// sequence gap.
func TestPrivilegedLossFromDUTDropsIsExact(t *testing.T) {
	needDataplane(t)
	s1, s2 := sockPath(t, "a.sock"), sockPath(t, "b.sock")
	const n = 20000
	genCfg := bench.Config{Role: bench.RoleLoop, Count: n, Capture: n, RxD: 512, TxD: 512, Lcores: "0@1,1@0",
		VDevs: []string{"net_memif0,role=server,socket=" + s1, "net_memif1,role=server,socket=" + s2}}
	dutCfg := bench.Config{Role: bench.RoleFwd, RxD: 512, TxD: 512, Count: n, Hold: heldDUTHold,
		VDevs: []string{"net_memif0,role=client,socket=" + s1, "net_memif1,role=client,rsize=4,socket=" + s2}}
	needDataplane(t, genCfg, dutCfg)
	gen := startHelper(t, genCfg)
	dut := startHelper(t, dutCfg)
	out, dout := dut.waitAfter(gen, 30*time.Second)
	r, d := out.Result, dout.Result
	drops := d.Ports[0].Drops
	t.Logf("sent %d received %d lost %d gaps %d reordered %d; DUT rx %d tx %d drops %d",
		r.Sent, r.Received, r.Lost, r.SeqGaps, r.Reordered, d.Ports[0].RxPkts, d.Ports[1].TxPkts, drops)
	if d.Ports[0].RxPkts != n || d.Ports[1].TxPkts+drops != n {
		t.Fatalf("DUT rx %d tx %d drops %d: want rx %d = tx + drops", d.Ports[0].RxPkts, d.Ports[1].TxPkts, drops, n)
	}
	if drops == 0 {
		t.Fatalf("DUT dropped nothing: the 16-slot return ring did not overflow, the test proves nothing")
	}
	if r.Sent != n || r.Received != d.Ports[1].TxPkts || r.Received+uint64(r.Lost) != r.Sent {
		t.Fatalf("sent %d received %d lost %d: want sent %d, received = DUT tx %d, received + lost = sent",
			r.Sent, r.Received, r.Lost, n, d.Ports[1].TxPkts)
	}
	if r.Lost != int64(drops) {
		t.Errorf("lost %d, want the DUT's %d drops", r.Lost, drops)
	}
	if r.Ports[1].RxPkts != r.Received || r.Ports[0].TxPkts != n {
		t.Errorf("ports %+v: want port0 tx %d, port1 rx %d", r.Ports, n, r.Received)
	}
	if uint64(len(out.Captured)) != r.Received {
		t.Fatalf("captured %d frames, want all %d received", len(out.Captured), r.Received)
	}
	// the oracle: the sequence numbers that actually arrived
	var last uint64
	for i, f := range out.Captured {
		stream, seq := stampSeq(t, f.Data)
		if stream != 0 {
			t.Fatalf("frame %d: stream %#x, want 0 (one tx queue, one flow)", i, stream)
		}
		if i > 0 && seq <= last {
			t.Fatalf("frame %d: seq %d after %d: memif and fwd keep order", i, seq, last)
		}
		last = seq
	}
	missingBefore := last + 1 - r.Received // gaps the receiver can see
	tail := n - 1 - last                   // dropped after the last frame received: invisible to seqs
	if r.SeqGaps != missingBefore || r.Reordered != 0 {
		t.Errorf("seq gaps %d reordered %d, want %d gaps (last seq %d, %d received) and 0 reordered",
			r.SeqGaps, r.Reordered, missingBefore, last, r.Received)
	}
	if r.SeqGaps == 0 || r.SeqGaps+tail != uint64(r.Lost) {
		t.Errorf("seq gaps %d + tail %d != lost %d (want gaps >= 1)", r.SeqGaps, tail, r.Lost)
	}
}

// stampedFrame is a 64 B (60 without FCS) IPv4/UDP frame carrying a rig
// stamp for stream/seq, as shim.c's generator writes it.
func stampedFrame(stream uint16, seq uint64) []byte {
	f := make([]byte, 60)
	copy(f, []byte{2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0})
	binary.LittleEndian.PutUint16(f[42:], 0x5247)
	binary.LittleEndian.PutUint64(f[44:], uint64(stream)<<48|seq)
	return f
}

// Sequence gaps and reordering, exactly: a pcap replay is sent byte for
// byte, so frames stamped by the test reach the receiver in the order
// written (net_ring keeps order). Two streams, tracked independently:
//
//	stream 1: 0..39 without 5, 6 and 10; then 10 late (47 frames after
//	          its gap showed: a later rx burst, bursts are <= 32), then 50
//	          (40..49 skipped). Gaps 2+1+10, the late 10 takes one back:
//	          12; reordered 1.
//	stream 0x402 (tx queue 1, flow slot 2): 0..29 in order interleaved
//	          with stream 1, then 30 32 31 33: gap 1 taken back; reordered 1.
//
// A receiver tracking one sequence for all streams, or not taking a late
// frame's gap back, or not counting gaps at all, gets other numbers.
func TestPrivilegedSeqGapsAndReorderExact(t *testing.T) {
	needDataplane(t)
	type sf struct {
		stream uint16
		seq    uint64
	}
	var order []sf
	for i := uint64(0); i < 40; i++ {
		if i != 5 && i != 6 && i != 10 {
			order = append(order, sf{1, i})
		}
		if i < 30 {
			order = append(order, sf{0x402, i})
		}
	}
	order = append(order, sf{1, 10}, sf{0x402, 30}, sf{0x402, 32}, sf{0x402, 31}, sf{0x402, 33}, sf{1, 50})
	const wantGaps, wantReordered = 12, 2

	path := filepath.Join(t.TempDir(), "seq.pcap")
	var frames [][]byte
	for _, o := range order {
		frames = append(frames, stampedFrame(o.stream, o.seq))
	}
	writePcap(t, path, frames)
	n := uint64(len(order)) // one pass over the file: no wrap back to seq 0
	out := runHelper(t, bench.Config{Role: bench.RoleLoop, VDevs: []string{"net_ring0"}, Pcap: path, Count: n, Capture: len(order), RxD: 512, TxD: 512})
	r := out.Result
	t.Logf("sent %d received %d lost %d gaps %d reordered %d unstamped %d", r.Sent, r.Received, r.Lost, r.SeqGaps, r.Reordered, r.Unstamped)
	if r.Sent != n || r.Received != n || r.Lost != 0 || r.Unstamped != 0 {
		t.Fatalf("sent %d received %d lost %d unstamped %d, want %d/%d, 0 lost, 0 unstamped", r.Sent, r.Received, r.Lost, r.Unstamped, n, n)
	}
	// the frames arrived in the order written (else the expectation is moot)
	if len(out.Captured) != len(order) {
		t.Fatalf("captured %d frames, want %d", len(out.Captured), len(order))
	}
	for i, f := range out.Captured {
		if s, q := stampSeq(t, f.Data); s != order[i].stream || q != order[i].seq {
			t.Fatalf("frame %d: stream %#x seq %d, want %#x %d", i, s, q, order[i].stream, order[i].seq)
		}
	}
	if r.SeqGaps != wantGaps || r.Reordered != wantReordered {
		t.Errorf("seq gaps %d reordered %d, want %d and %d", r.SeqGaps, r.Reordered, wantGaps, wantReordered)
	}
	if r.Latency == nil || r.Latency.Samples != n {
		t.Errorf("latency %+v: want %d stamped samples", r.Latency, n)
	}
}

// A forwarder, and a receiver, fed by a source that keeps sending past
// their deadline: the summary rate is the rate their own samples saw
// (before: the 1 s drain after the deadline was counted too, 50 % more
// than any sample over a 2 s run).
func TestPrivilegedFwdAndRxSummaryMatchTheirSamples(t *testing.T) {
	needDataplane(t)
	for _, role := range []bench.Role{bench.RoleFwd, bench.RoleRx} {
		t.Run(string(role), func(t *testing.T) {
			s1, s2 := sockPath(t, "a.sock"), sockPath(t, "b.sock")
			// the source outlasts the measured 2 s even when the
			// measured side's EAL start takes seconds on a loaded
			// machine (with 4 s, a DUT that started 2.4 s late saw the
			// source stop 1.6 s into its 2 s); the measured side keeps
			// its links long enough to disconnect after the source
			// stopped polling (a memif peer must not leave under a
			// poller: quiesceMemif)
			src := bench.Config{Role: bench.RoleLoop, Duration: 7 * time.Second, Rate: "300kpps", RxD: 512, TxD: 512, Lcores: "0@1,1@0",
				VDevs: []string{"net_memif0,role=server,socket=" + s1, "net_memif1,role=server,socket=" + s2}}
			dut := bench.Config{Role: role, Duration: 2 * time.Second, Hold: 6 * time.Second, Interval: 250 * time.Millisecond, RxD: 512, TxD: 512,
				VDevs: []string{"net_memif0,role=client,socket=" + s1, "net_memif1,role=client,socket=" + s2}}
			if role == bench.RoleRx {
				src.Role, src.VDevs = bench.RoleGen, src.VDevs[:1]
				dut.VDevs = dut.VDevs[:1]
			}
			needDataplane(t, src, dut)
			sh := startHelper(t, src)
			dout, err := startHelper(t, dut).wait(30 * time.Second)
			if err != nil || dout.Err != "" {
				t.Fatalf("%s: %v %s", role, err, dout.Err)
			}
			if _, err := sh.wait(30 * time.Second); err != nil {
				t.Fatalf("source: %v", err)
			}
			d := dout.Result
			var pkts, secs float64
			for i, s := range d.Samples {
				dt := s.T
				if i > 0 {
					dt -= d.Samples[i-1].T
				}
				pkts += s.RxMpps[0] * dt
				secs += dt
			}
			if len(d.Samples) < 6 || secs <= 0 || d.Ports[0].RxPkts == 0 {
				t.Fatalf("%d samples over %.2f s, %d frames received: no steady traffic", len(d.Samples), secs, d.Ports[0].RxPkts)
			}
			fromSamples, summary := pkts/secs, d.Ports[0].RxMpps
			t.Logf("summary %.4f Mpps over %.3f s; samples %.4f Mpps over %.2f s", summary, d.DurationS, fromSamples, secs)
			// the fault this guards against (the drain counted) makes the
			// summary higher than the samples: 2 % at most. Lower is the
			// run's end seen late: under make test's other test binary
			// (-p 2, CPU-bound unit tests beside this one) the summary came
			// out 4.8-6.2 % below its samples in 4 of 5 suite runs, 0.0-0.3 %
			// alone; 10 % at most below.
			if summary > fromSamples*1.02 || summary < fromSamples*0.90 {
				t.Errorf("summary %.4f Mpps, samples %.4f Mpps: summary more than 2 %% above or 10 %% below", summary, fromSamples)
			}
			if d.DurationS > 2.5 {
				t.Errorf("timed over %.2f s for --duration 2s: the drain is in it", d.DurationS)
			}
		})
	}
}
