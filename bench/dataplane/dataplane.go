//go:build cgo

package dataplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"rig/bench"
	"rig/bench/internal/dpdk"
)

// workUnit is a planned unit and the C unit that carries it out.
type workUnit struct {
	bench.UnitPlan
	u *dpdk.Unit
}

// dataplane is an open DPDK dataplane: EAL, the mbuf pool, the ports and
// the units of one run. open, start, stop, close; close undoes whatever
// open got to, in reverse.
type dataplane struct {
	cfg       *bench.Config
	eal       *dpdk.EAL // nil until EAL is up
	workers   []uint
	pool      *dpdk.Mempool
	ports     []openPort
	speeds    []uint32 // Mbps per port as the driver reports it; 0: unknown
	units     []workUnit
	releases  []func()
	running   bool
	logMark   uint64   // EAL's log before this dataplane (dpdk.LogSince)
	noBackend []string // virtio-user server ports whose backend never connected
}

// openDataplane starts EAL and opens the pool and the ports of plan l, and
// waits for their links. On error, what was opened is closed again.
func openDataplane(ctx context.Context, c *bench.Config, mem bench.Memory, l bench.Layout, mounts []string) (d *dataplane, err error) {
	d = &dataplane{cfg: c, logMark: dpdk.LogMark()}
	defer func() {
		if err != nil {
			d.close()
		}
	}()
	if err := d.initEAL(ctx, mem, mounts); err != nil {
		return d, err
	}
	workers := dpdk.WorkerLcores()
	if len(workers) < c.Cores {
		return d, fmt.Errorf("bench: %d worker lcore(s) from -l %s, want --cores %d", len(workers), c.LcoreList(), c.Cores)
	}
	d.workers = workers[:c.Cores]
	if d.pool, err = dpdk.NewMempool("rig_pool", uint32(l.PoolSize), uint32(c.MbufCache), uint32(l.DataRoom)); err != nil {
		return d, bench.NewError("mempool", err, "", "reserve more hugepages or lower --rxd/--txd")
	}
	for _, name := range c.Ports {
		if err := d.openPort(ctx, name); err != nil {
			return d, err
		}
	}
	if err := d.waitLinks(ctx, 10*time.Second); err != nil {
		return d, err
	}
	return d, d.checkPortLogs()
}

// initEAL starts EAL; a virtio-user server port's wait for its vhost-user
// backend inside it is bounded (backendWatchdog).
func (d *dataplane) initEAL(ctx context.Context, mem bench.Memory, mounts []string) error {
	c := d.cfg
	w := startBackendWatchdog(ctx, c.VDevs, backendWait)
	eal, err := dpdk.InitEAL(c.EALArgs(mem))
	d.noBackend = w.stop()
	servers := virtioServers(c.VDevs)
	for _, n := range d.noBackend {
		// the PMD gave up without removing its listening socket
		if fi, err := os.Stat(servers[n]); err == nil && fi.Mode()&os.ModeSocket != 0 {
			_ = os.Remove(servers[n])
		}
	}
	if err != nil {
		return explainEALInit(err, mem, euid(), unwritableHugeDirs(c.HugeDir, mounts))
	}
	d.eal = eal
	return nil
}

// probeFailure explains a port EAL did not create: a virtio-user server
// whose backend never connected, or a vdev whose probe failed.
func (d *dataplane) probeFailure(ctx context.Context, name string, err error) error {
	if slices.Contains(d.noBackend, name) {
		path := virtioServers(d.cfg.VDevs)[name]
		what := fmt.Errorf("no vhost-user backend connected to %s within %v", path, backendWait)
		if ctx.Err() != nil {
			what = fmt.Errorf("interrupted while waiting for a vhost-user backend to connect to %s", path)
		}
		return bench.NewError("port "+name, what,
			"with server=1 rig is the vhost-user server and waits for the client (OvS: a dpdkvhostuserclient port) to connect",
			"add the port to the bridge: ovs-vsctl add-port BRIDGE PORT -- set Interface PORT type=dpdkvhostuserclient options:vhost-server-path="+path+"; or drop server=1 to connect to a dpdkvhostuser socket")
	}
	if lines := logLines(dpdk.LogSince(d.logMark), "failed to initialize "+name+" device"); len(lines) > 0 {
		return d.portFailure([]string{name}, fmt.Errorf("probe failed: %s", lines[0]), "check the --vdev devargs against the PMD's log lines above")
	}
	return bench.NewError("port "+name, err, "", "name a device given with --vdev, or a PCI address DPDK can probe: an mlx5 (ConnectX/BlueField) function stays bound to mlx5_core, other NICs are bound to vfio-pci")
}

// portFailure is a port's error, explained by what its PMD logged when it can.
func (d *dataplane) portFailure(names []string, err error, fix string) error {
	object := "port " + strings.Join(names, ", ")
	log := dpdk.LogSince(d.logMark)
	for _, n := range names {
		if dg, ok := diagnosePort(n, d.cfg.VDevs, log); ok {
			return bench.NewError(object, err, dg.cause, dg.fix)
		}
	}
	return bench.NewError(object, err, "", fix)
}

// peerRefused: the log says a memif peer disconnected one of these ports.
func (d *dataplane) peerRefused(down []string) bool {
	log := dpdk.LogSince(d.logMark)
	for _, n := range down {
		if _, ok := diagnosePort(n, d.cfg.VDevs, log); ok && strings.HasPrefix(n, "net_memif") {
			return true
		}
	}
	return false
}

// checkPortLogs fails the run when a port is up but its PMD said it cannot
// work (a virtio-user port whose memory table the backend refused carries
// no frame).
func (d *dataplane) checkPortLogs() error {
	log := dpdk.LogSince(d.logMark)
	for _, p := range d.ports {
		if !strings.HasPrefix(p.name, "net_virtio_user") {
			continue
		}
		if dg, ok := diagnosePort(p.name, d.cfg.VDevs, log); ok {
			return bench.NewError("port "+p.name, errors.New("the vhost-user backend cannot use this port"), dg.cause, dg.fix)
		}
	}
	return nil
}

// openPort configures and starts one port; a memif client fails to start
// until its server listens, so it is retried for up to 10 s.
func (d *dataplane) openPort(ctx context.Context, name string) error {
	c := d.cfg
	id, err := dpdk.PortByName(name)
	if err != nil {
		return d.probeFailure(ctx, name, err)
	}
	pc := dpdk.PortConf{RxQ: uint16(c.RxQ), TxQ: uint16(c.TxQ), RxD: uint16(c.RxD), TxD: uint16(c.TxD), RSS: c.RxQ > 1, Pool: d.pool}
	for deadline := time.Now().Add(10 * time.Second); ; {
		err := dpdk.SetupPort(id, pc)
		if err == nil {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			_ = dpdk.StopClosePort(id)
			return d.portFailure([]string{name}, fmt.Errorf("start failed: %w", err), "check the devargs; a memif client needs its server running")
		}
		time.Sleep(100 * time.Millisecond)
	}
	info, _ := dpdk.GetPortInfo(id)
	mac, _ := dpdk.PortMAC(id)
	d.ports = append(d.ports, openPort{name: name, id: id, drv: info.Driver, mac: mac})
	d.speeds = append(d.speeds, realSpeedMbps(info.Driver, info.SpeedMbps, vdevArgs(c.VDevs, name)))
	return nil
}

// portLinkBps is the first port's reported speed in bit/s (0: none reported).
func (d *dataplane) portLinkBps() float64 {
	for _, s := range d.speeds {
		if s > 0 && s < 10_000_000 {
			return float64(s) * 1e6
		}
	}
	return 0
}

// addUnits creates and configures the C units of plan l.
func (d *dataplane) addUnits(l bench.Layout, frames [][]byte, linkBps float64) error {
	c := d.cfg
	for i, p := range l.Units {
		var rp, rq, tp, tq uint16
		if p.RxPort >= 0 {
			rp, rq = d.ports[p.RxPort].id, uint16(p.RxQueue)
		}
		if p.TxPort >= 0 {
			tp, tq = d.ports[p.TxPort].id, uint16(p.TxQueue)
		}
		u, err := dpdk.NewUnit(dpdkKind(p.Kind), rp, rq, tp, tq, uint16(c.Burst), d.pool)
		if err != nil {
			return fmt.Errorf("bench: unit %d: %w", i, err)
		}
		d.units = append(d.units, workUnit{UnitPlan: p, u: u})
		if err := d.configure(u, p, frames, linkBps); err != nil {
			return err
		}
		if p.TxPort >= 0 {
			if err := d.txKick(u, p.TxPort); err != nil {
				return err
			}
		}
	}
	return nil
}

// txKick gives a unit transmitting on an af_packet port that port's
// sockets to kick when it is idle after a tx (shim_internal.h).
func (d *dataplane) txKick(u *dpdk.Unit, port int) error {
	op := d.ports[port]
	if op.drv != afPacketDriver {
		return nil
	}
	ifx := dpdk.PortIfIndex(op.id)
	fds, err := afPacketSockets(ifx)
	if err != nil || len(fds) == 0 {
		return fmt.Errorf("bench: port %s: its AF_PACKET sockets (ifindex %d) to kick after a tx: %v (found %d)", op.name, ifx, err, len(fds))
	}
	if err := u.SetTxKick(fds); err != nil {
		return fmt.Errorf("bench: port %s: %w", op.name, err)
	}
	return nil
}

func dpdkKind(k bench.UnitKind) int {
	return map[bench.UnitKind]int{bench.KindGen: dpdk.KindGen, bench.KindRx: dpdk.KindRx, bench.KindFwd: dpdk.KindFwd}[k]
}

// configure sets a unit up for its kind (the config was validated: its
// ranges, MACs and rate parse).
func (d *dataplane) configure(u *dpdk.Unit, p bench.UnitPlan, frames [][]byte, linkBps float64) error {
	c := d.cfg
	switch p.Kind {
	case bench.KindGen:
		if p.Halted {
			u.Halt()
		}
		g, err := genConf(c, p, frames, linkBps, d.ports[p.TxPort].mac)
		if err != nil {
			return err
		}
		rel, err := u.SetGen(g)
		if err != nil {
			return fmt.Errorf("bench: gen queue %d: %w", p.TxQueue, err)
		}
		d.releases = append(d.releases, rel)
	case bench.KindRx:
		if c.Pcap != "" {
			u.KeepForeign() // a replay's own frames are whatever the file holds
		}
		if p.Capture {
			return u.SetCapture(uint32(c.Capture), 2048)
		}
	case bench.KindFwd:
		mode := map[string]int{"io": dpdk.FwdIO, "mac": dpdk.FwdMAC, "macswap": dpdk.FwdMACSwap}[c.FwdMode]
		var dst [6]byte
		src := d.ports[p.TxPort].mac
		if c.FwdDstMAC != "" {
			dst, _ = bench.ParseMAC(c.FwdDstMAC)
		}
		if c.FwdSrcMAC != "" {
			src, _ = bench.ParseMAC(c.FwdSrcMAC)
		}
		u.SetFwd(mode, dst, src, uint32(c.TxRetry))
		if pps, depth, restart := bench.Policer(c); pps > 0 {
			u.SetPolice(pps, depth, restart, bench.PolicerIdle)
		}
		if p.TxFirst {
			u.SetTxFirst(uint16(c.TxFirst))
		}
	}
	return nil
}

// genConf is a generator unit's frames: addresses, ports, count and rate.
func genConf(c *bench.Config, p bench.UnitPlan, frames [][]byte, linkBps float64, srcMAC [6]byte) (dpdk.GenConf, error) {
	src, _ := bench.ParseIPRange(c.SrcIP)
	dst, _ := bench.ParseIPRange(c.DstIP)
	sp, _ := bench.ParsePortRange(c.SPort)
	dp, _ := bench.ParsePortRange(c.DPort)
	dmac, _ := bench.ParseMAC(c.DstMAC)
	pps, err := bench.ParseRate(c.Rate, c.FrameSize, linkBps)
	if err != nil {
		return dpdk.GenConf{}, fmt.Errorf("bench: --rate: %w", err)
	}
	return dpdk.GenConf{
		PktLen: uint32(c.FrameSize - bench.FCSLen), Stream: uint16(p.TxQueue), Stamp: len(frames) == 0,
		DstMAC: dmac, SrcMAC: srcMAC,
		SrcIP: src.First, NSrcIP: src.N, DstIP: dst.First, NDstIP: dst.N,
		SPort: sp.First, NSPort: sp.N, DPort: dp.First, NDPort: dp.N,
		Count: p.Count, PPS: pps / float64(p.RateShare), Frames: frames,
	}, nil
}

// start launches every worker lcore on its units.
func (d *dataplane) start() error {
	perWorker := make([][]*dpdk.Unit, len(d.workers))
	for _, u := range d.units {
		perWorker[u.Worker] = append(perWorker[u.Worker], u.u)
	}
	d.running = true
	for i, l := range d.workers {
		if err := dpdk.Launch(l, perWorker[i]); err != nil {
			d.stop()
			return fmt.Errorf("bench: %w", err)
		}
	}
	return nil
}

// stop makes every lcore loop return and joins them; a no-op when stopped.
func (d *dataplane) stop() {
	if d.running {
		dpdk.Stop()
		dpdk.Wait()
		d.running = false
	}
}

// close stops the lcores, frees the units, closes the ports (memif ones
// quiesced first), frees the pool and cleans EAL up.
func (d *dataplane) close() {
	d.stop()
	for _, u := range d.units {
		u.u.Free()
	}
	for _, r := range d.releases {
		r()
	}
	quiesceMemif(d.ports, d.cfg.VDevs, linkUp)
	closeMemifAware(d.ports, d.cfg.VDevs, linkUp, func(p openPort) { _ = dpdk.StopClosePort(p.id) })
	d.pool.Free()
	if d.eal != nil {
		_ = d.eal.Cleanup()
	}
}

func linkUp(p openPort) bool {
	info, err := dpdk.GetPortInfo(p.id)
	return err == nil && info.LinkUp
}

// waitLinks waits until every port reports link up (memif connects
// asynchronously), so the first stamped frames do not wait in a queue.
func (d *dataplane) waitLinks(ctx context.Context, max time.Duration) error {
	deadline := time.Now().Add(max)
	for i := 1; ; i++ {
		var down []string
		for _, p := range d.ports {
			if !linkUp(p) {
				down = append(down, p.name)
			}
		}
		if len(down) == 0 {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("bench: interrupted while waiting for link up on %s", strings.Join(down, ", "))
		}
		if i%50 == 0 && d.peerRefused(down) {
			// a memif server said no: waiting longer changes nothing
			return d.portFailure(down, errors.New("link down: the peer refused the connection"), "")
		}
		if time.Now().After(deadline) {
			return d.portFailure(down, fmt.Errorf("link down after %v", max),
				"connect the cable/peer: a memif client needs its server running, a virtio-user port its vhost-user backend, a tap its interface up")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
