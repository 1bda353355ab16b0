package bench

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
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

func checkNoLoss(t *testing.T, r *Result, n uint64) {
	t.Helper()
	if r.Sent != n || r.Received != n || r.Lost != 0 || r.SeqGaps != 0 || r.Reordered != 0 || r.Unstamped != 0 {
		t.Fatalf("sent %d received %d lost %d gaps %d reordered %d unstamped %d, want %d/%d and zeros",
			r.Sent, r.Received, r.Lost, r.SeqGaps, r.Reordered, r.Unstamped, n, n)
	}
}

// gen -> net_ring (a port whose tx ring is its rx ring) -> rx, one process.
func TestLoopRingExactCountsFlowsSizes(t *testing.T) {
	needDataplane(t)
	const n = 200000
	out := runHelper(t, Config{Mode: ModeLoop, VDevs: []string{"net_ring0"}, Count: n, FrameSize: 128,
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
	}
	if len(srcs) != 4 || len(dsts) != 2 || len(sports) != 3 {
		t.Errorf("flows observed: %d src IPs, %d dst IPs, %d sports; want 4, 2, 3", len(srcs), len(dsts), len(sports))
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
func TestLoopMemifPairTwoQueues(t *testing.T) {
	needDataplane(t)
	sock := sockPath(t, "m.sock")
	const n = 300001
	// two worker lcores (lcore 2 shares CPU 0 with the main lcore: 2-core CI)
	out := runHelper(t, Config{Mode: ModeLoop, Count: n, RxQ: 2, TxQ: 2, RxD: 512, TxD: 512, FrameSize: 64,
		Cores: 2, Lcores: "0@0,1@1,2@0", SrcIP: "10.0.0.1-10.0.0.100",
		VDevs: []string{"net_memif0,role=server,socket=" + sock, "net_memif1,role=client,socket=" + sock}})
	r := out.Result
	checkNoLoss(t, r, n)
	if r.Ports[0].TxPkts != n || r.Ports[1].RxPkts != n || r.Ports[0].RxPkts != 0 {
		t.Errorf("ports %+v: want port0 tx %d, port1 rx %d", r.Ports, n, n)
	}
}

func TestPcapReplayByteExact(t *testing.T) {
	needDataplane(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "in.pcap")
	frames := [][]byte{make([]byte, 60), make([]byte, 333), make([]byte, 1514)}
	for i, f := range frames {
		for j := range f {
			f[j] = byte(i*7 + j*13)
		}
	}
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
	fh.Close()
	out := runHelper(t, Config{Mode: ModeLoop, VDevs: []string{"net_ring0"}, Pcap: path, Count: 7, Capture: 7, RxD: 512, TxD: 512})
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
func TestFwdModesRewriteFrames(t *testing.T) {
	needDataplane(t)
	for _, mode := range []string{"io", "mac", "macswap"} {
		t.Run(mode, func(t *testing.T) {
			s1, s2 := sockPath(t, "a.sock"), sockPath(t, "b.sock")
			const n = 20000
			// the generator owns the memif servers: start it first
			gen := startHelper(t, Config{Mode: ModeLoop, Count: n, Capture: 16, RxD: 512, TxD: 512, Lcores: "0@1,1@0",
				VDevs: []string{"net_memif0,role=server,socket=" + s1, "net_memif1,role=server,socket=" + s2}})
			dut := startHelper(t, Config{Mode: ModeFwd, FwdMode: mode, FwdDstMAC: "02:aa:00:00:00:01", FwdSrcMAC: "02:bb:00:00:00:02",
				RxD: 512, TxD: 512, TxRetry: 100000, Count: n,
				VDevs: []string{"net_memif0,role=client,socket=" + s1, "net_memif1,role=client,socket=" + s2}})
			out, err := gen.wait(30 * time.Second)
			if err != nil || out.Err != "" {
				t.Fatalf("generator: %v %s", err, out.Err)
			}
			dres, err := dut.wait(10 * time.Second)
			if err != nil || dres.Err != "" {
				t.Fatalf("DUT: %v %s", err, dres.Err)
			}
			if d := dres.Result; d.Ports[0].Drops != 0 {
				t.Errorf("DUT dropped %d", d.Ports[0].Drops)
			}
			checkNoLoss(t, out.Result, n)
			if d := dres.Result; d.Ports[0].RxPkts != n || d.Ports[1].TxPkts != n {
				t.Errorf("DUT forwarded rx %d tx %d, want %d", d.Ports[0].RxPkts, d.Ports[1].TxPkts, n)
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

func TestRateLimitWithin5Percent(t *testing.T) {
	needDataplane(t)
	const pps = 100000
	out := runHelper(t, Config{Mode: ModeLoop, VDevs: []string{"net_ring0"}, Rate: "100kpps", Duration: 2 * time.Second, RxD: 512, TxD: 512})
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
func TestSIGINTStopsCleanly(t *testing.T) {
	needDataplane(t)
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "hugetlbfs", "-o", "pagesize=2M", "nodev", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount hugetlbfs on %s: %v: %s", dir, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", dir).Run() })
	h := startHelper(t, Config{Mode: ModeLoop, VDevs: []string{"net_ring0"}, HugeDir: dir, RxD: 512, TxD: 512, Interval: 100 * time.Millisecond})
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
func TestGenToRxTwoProcesses(t *testing.T) {
	needDataplane(t)
	sock := sockPath(t, "g.sock")
	const n = 50000
	rx := startHelper(t, Config{Mode: ModeRx, Count: n, RxD: 512, TxD: 512, Lcores: "0@1,1@0",
		VDevs: []string{"net_memif0,role=server,socket=" + sock}})
	gout := runHelper(t, Config{Mode: ModeGen, Count: n, RxD: 512, TxD: 512, Rate: "1Mpps", DPort: "5000-5007",
		VDevs: []string{"net_memif0,role=client,socket=" + sock}})
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
}
