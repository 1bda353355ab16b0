// Package dpdk is rig's only cgo boundary: EAL, mempools, ports and the C
// gen/rx/fwd loops that run on EAL worker lcores. Go configures, starts,
// stops and reads counters; it never touches packets.
//
// Compiler flags (include paths, -include rte_config.h, the -march DPDK was
// built for) come from pkg-config's libdpdk, for whatever architecture this
// host's DPDK is; link flags from link_shared.go or link_static.go.
package dpdk

/*
#cgo CFLAGS: -O3 -Wno-deprecated-declarations
#cgo pkg-config: libdpdk
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// Unit kinds.
const (
	KindGen = C.RIG_GEN
	KindRx  = C.RIG_RX
	KindFwd = C.RIG_FWD
)

// Forwarding modes (testpmd vocabulary).
const (
	FwdIO      = C.RIG_FWD_IO
	FwdMAC     = C.RIG_FWD_MAC
	FwdMACSwap = C.RIG_FWD_MACSWAP
)

// MaxBurst is the largest burst the C loops accept.
const MaxBurst = C.RIG_MAX_BURST

// MaxStreams is how many generator streams the receiver tracks.
const MaxStreams = C.RIG_MAX_STREAMS

// The latency histogram (shim.h): log-linear buckets of TSC cycles,
// HistSub per power of two (HistSubBits bits), HistN in all, values of
// 2^HistMaxBits and more in the last.
const (
	HistSubBits = C.RIG_HIST_SUB_BITS
	HistSub     = C.RIG_HIST_SUB
	HistMaxBits = C.RIG_HIST_MAX_BITS
	HistN       = C.RIG_HIST_N
)

// HistIndex is the C loop's bucket of v cycles (tests check Go's mirror).
func HistIndex(v uint64) int { return int(C.rig_hist_idx(C.uint64_t(v))) }

// IsRigFrame says whether the receiver takes frame for one of rig's
// (Ethernet II, IPv4 without options, UDP: the signature shim_rx.c
// checks); any other frame is foreign (Counters.Foreign).
func IsRigFrame(frame []byte) bool {
	if len(frame) == 0 {
		return false
	}
	return C.rig_frame_is_rig((*C.uint8_t)(unsafe.Pointer(&frame[0])), C.uint32_t(len(frame))) != 0
}

func errnoErr(what string, r C.int) error {
	if r >= 0 {
		return nil
	}
	return &Error{Op: what, Errno: syscall.Errno(-r), Text: C.GoString(C.rig_strerror(-r))}
}

// Error is a failed DPDK call: errors.Is(err, syscall.EACCES) and the like
// work for system errnos (DPDK's own start at 1000, RTE_ERRNO_BASE).
type Error struct {
	Op    string
	Errno syscall.Errno
	Text  string // rte_strerror
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s (errno %d)", e.Op, e.Text, int(e.Errno)) }

// Unwrap returns the system errno, nil for a DPDK-specific one.
func (e *Error) Unwrap() error {
	if e.Errno < 1000 {
		return e.Errno
	}
	return nil
}

// EAL is this process's initialised EAL (InitEAL); Cleanup ends it.
type EAL struct {
	// madeBase: the runtime dirs' base (/var/run/dpdk) when this EAL made
	// it (a fresh host has none), removed again at Cleanup when empty
	madeBase string
}

// InitEAL runs rte_eal_init with args (args[0] is the program name). It must
// be called once per process; the calling goroutine's OS thread becomes the
// main lcore, so it is locked for the rest of the process.
func InitEAL(args []string) (*EAL, error) {
	runtime.LockOSThread()
	before := existingRuntimeDirs()
	absent := absentBases()
	argv := make([]*C.char, len(args)+1)
	for i, a := range args {
		argv[i] = C.CString(a)
	}
	// EAL keeps pointers into argv: never freed (once per process).
	r := C.rig_eal_init(C.int(len(args)), (**C.char)(unsafe.Pointer(&argv[0])))
	e := &EAL{}
	if dir := RuntimeDir(); dir != "" && absent[filepath.Dir(dir)] {
		e.madeBase = filepath.Dir(dir)
	}
	if r < 0 {
		err := errnoErr("rte_eal_init "+fmt.Sprint(args[1:]), r)
		// a failed init leaves its runtime dir (config, fbarrays, sockets)
		// behind and rte_eal_cleanup must not run: remove it here, unless it
		// was there before (another process's, with the same --file-prefix)
		if dir := RuntimeDir(); dir != "" && !before[dir] {
			if rerr := removeRuntimeDir(dir); rerr != nil {
				return nil, fmt.Errorf("%w; also: %v", err, rerr)
			}
			e.removeBase()
		}
		return nil, err
	}
	return e, nil
}

// runtimeBases are the bases EAL 22.11 may put its runtime dirs under
// (root: /var/run/dpdk; others: $XDG_RUNTIME_DIR/dpdk or /tmp/dpdk).
func runtimeBases() []string {
	bases := []string{"/var/run/dpdk", "/tmp/dpdk"}
	if x := os.Getenv("XDG_RUNTIME_DIR"); x != "" {
		bases = append(bases, filepath.Join(x, "dpdk"))
	}
	return bases
}

// absentBases are the runtime bases that do not exist now.
func absentBases() map[string]bool {
	out := map[string]bool{}
	for _, b := range runtimeBases() {
		if _, err := os.Lstat(b); errors.Is(err, os.ErrNotExist) {
			out[b] = true
		}
	}
	return out
}

// removeBase removes the base this EAL made, when nothing else is in it
// (another DPDK process's runtime dir keeps it).
func (e *EAL) removeBase() {
	if e.madeBase != "" {
		_ = os.Remove(e.madeBase) // only an empty directory goes
	}
}

// existingRuntimeDirs lists the EAL runtime dirs present now, under every
// base EAL 22.11 may use (root: /var/run/dpdk; others: $XDG_RUNTIME_DIR/dpdk
// or /tmp/dpdk).
func existingRuntimeDirs() map[string]bool {
	seen := map[string]bool{}
	for _, b := range runtimeBases() {
		ents, _ := os.ReadDir(b)
		for _, e := range ents {
			seen[filepath.Join(b, e.Name())] = true
		}
	}
	return seen
}

// RuntimeDir is EAL's runtime directory for this process
// (/var/run/dpdk/<file-prefix> as root); empty before EAL parsed its args.
func RuntimeDir() string { return C.GoString(C.rig_eal_runtime_dir()) }

// Cleanup releases EAL resources (hugepages, memif sockets...) and
// removes the EAL runtime directory (/var/run/dpdk/<file-prefix>), which
// rte_eal_cleanup in 22.11 leaves behind: one empty directory per run;
// then /var/run/dpdk itself when this EAL made it and it is empty. Only
// empty directories are removed.
func (e *EAL) Cleanup() error {
	dir := C.GoString(C.rig_eal_runtime_dir())
	if r := C.rig_eal_cleanup(); r != 0 {
		return errnoErr("rte_eal_cleanup", r)
	}
	if err := removeRuntimeDir(dir); err != nil {
		return err
	}
	e.removeBase()
	return nil
}

// removeRuntimeDir deletes the files a primary EAL process leaves in its
// runtime directory: shared config, fbarrays, hugepage info, the telemetry
// sockets (dpdk_telemetry.v2, and the legacy "telemetry" one that a static
// build opens) and multi-process sockets; then the directory, if nothing
// else is in it.
func removeRuntimeDir(dir string) error {
	if dir == "" {
		return nil
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("EAL runtime dir %s: %w", dir, err)
	}
	for _, e := range ents {
		n := e.Name()
		if n == "config" || n == "hugepage_info" || n == "dpdk_telemetry.v2" || n == "telemetry" || n == "mp_socket" ||
			strings.HasPrefix(n, "fbarray_") || strings.HasPrefix(n, "mp_socket_") {
			if err := os.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("EAL runtime dir: %w", err)
			}
		}
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove EAL runtime dir %s: %w", dir, err)
	}
	return nil
}

// LogMark is how much EAL and the PMDs have logged so far; LogSince(mark)
// returns what they logged after it.
func LogMark() uint64 { return uint64(C.rig_log_mark()) }

// LogSince returns the log text written since mark (at most its last 64 KiB).
func LogSince(mark uint64) string {
	const max = 64 * 1024
	buf := (*C.char)(C.malloc(max))
	defer C.free(unsafe.Pointer(buf))
	n := C.rig_log_since(C.uint64_t(mark), buf, max)
	return C.GoStringN(buf, n)
}

// Mempool is a pktmbuf pool.
type Mempool struct{ p unsafe.Pointer }

// NewMempool creates a pktmbuf pool of n mbufs with dataRoom bytes each
// (headroom included).
func NewMempool(name string, n, cache, dataRoom uint32) (*Mempool, error) {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	p := C.rig_mempool_create(cn, C.uint32_t(n), C.uint32_t(cache), C.uint32_t(dataRoom))
	if p == nil {
		return nil, errnoErr(fmt.Sprintf("mempool %s: %d mbufs of %d B", name, n, dataRoom), -C.rig_errno())
	}
	return &Mempool{p: p}, nil
}

// Free releases the pool (all mbufs must be back).
func (m *Mempool) Free() {
	if m != nil && m.p != nil {
		C.rig_mempool_free(m.p)
		m.p = nil
	}
}

// PortByName finds the ethdev port id of a device name (a vdev name such as
// net_ring0, or a PCI address), else the first port devargs match
// (0000:03:00.0,representor=[65535]: the representor).
func PortByName(name string) (uint16, error) {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	var p C.uint16_t
	if r := C.rig_port_by_name(cn, &p); r != 0 {
		return 0, errnoErr("port "+name, r)
	}
	return uint16(p), nil
}

// PortCount is the number of available ethdev ports.
func PortCount() int { return int(C.rig_port_count()) }

// PortConf configures one port.
type PortConf struct {
	RxQ, TxQ, RxD, TxD uint16
	RSS                bool
	Pool               *Mempool
}

// SetupPort configures queues and starts the port.
func SetupPort(port uint16, c PortConf) error {
	rss := C.int(0)
	if c.RSS {
		rss = 1
	}
	r := C.rig_port_setup(C.uint16_t(port), C.uint16_t(c.RxQ), C.uint16_t(c.TxQ),
		C.uint16_t(c.RxD), C.uint16_t(c.TxD), rss, c.Pool.p)
	return errnoErr(fmt.Sprintf("port %d: setup rxq=%d txq=%d rxd=%d txd=%d", port, c.RxQ, c.TxQ, c.RxD, c.TxD), r)
}

// PortMAC returns the port's MAC address.
func PortMAC(port uint16) ([6]byte, error) {
	var mac [6]byte
	r := C.rig_port_mac(C.uint16_t(port), (*C.uint8_t)(unsafe.Pointer(&mac[0])))
	return mac, errnoErr(fmt.Sprintf("port %d: mac", port), r)
}

// PortInfo is what the driver reports.
type PortInfo struct {
	Driver    string
	SpeedMbps uint32
	LinkUp    bool
}

// GetPortInfo reads the driver name and link state.
func GetPortInfo(port uint16) (PortInfo, error) {
	var buf [64]C.char
	var speed C.uint32_t
	var up C.int
	r := C.rig_port_info(C.uint16_t(port), &buf[0], C.int(len(buf)), &speed, &up)
	if r != 0 {
		return PortInfo{}, errnoErr(fmt.Sprintf("port %d: info", port), r)
	}
	return PortInfo{Driver: C.GoString(&buf[0]), SpeedMbps: uint32(speed), LinkUp: up != 0}, nil
}

// PortIfIndex is the kernel netdev's ifindex a port drives (net_af_packet,
// net_tap report it), 0 when none.
func PortIfIndex(port uint16) int { return int(C.rig_port_ifindex(C.uint16_t(port))) }

// PortDrops are a port's counters that mean a frame was dropped, by
// name, those that are not 0: the ethdev stats (imissed, ierrors,
// oerrors, rx_nombuf) and the xstats among xstatNames the PMD has
// (hardware-formats.md §21: mlx5's rx_phy_discard_packets and the rest).
func PortDrops(port uint16, xstatNames []string) map[string]uint64 {
	out := map[string]uint64{}
	var im, ie, oe, nb C.uint64_t
	if C.rig_port_drop_stats(C.uint16_t(port), &im, &ie, &oe, &nb) == 0 {
		for k, v := range map[string]C.uint64_t{"imissed": im, "ierrors": ie, "oerrors": oe, "rx_nombuf": nb} {
			if v != 0 {
				out[k] = uint64(v)
			}
		}
	}
	for _, n := range xstatNames {
		cs := C.CString(n)
		var v C.uint64_t
		if C.rig_port_xstat(C.uint16_t(port), cs, &v) == 0 && v != 0 {
			out[n] = uint64(v)
		}
		C.free(unsafe.Pointer(cs))
	}
	return out
}

// StopClosePort stops and closes a port.
func StopClosePort(port uint16) error {
	return errnoErr(fmt.Sprintf("port %d: stop/close", port), C.rig_port_stop_close(C.uint16_t(port)))
}

// Unit is one piece of lcore work: a gen, rx or fwd on a (port, queue).
type Unit struct{ u *C.struct_rig_unit }

// UnitBytes is the DPDK memory one unit takes.
func UnitBytes() int { return int(C.rig_unit_size()) }

// NewUnit allocates a unit (in DPDK memory, so the lcore reads it locally).
func NewUnit(kind int, rxPort, rxQueue, txPort, txQueue, burst uint16, pool *Mempool) (*Unit, error) {
	var mp unsafe.Pointer
	if pool != nil {
		mp = pool.p
	}
	u := C.rig_unit_new(C.int(kind), C.uint16_t(rxPort), C.uint16_t(rxQueue), C.uint16_t(txPort), C.uint16_t(txQueue), C.uint16_t(burst), mp)
	if u == nil {
		return nil, errors.New("dpdk: unit: out of DPDK memory")
	}
	return &Unit{u: u}, nil
}

// GenConf is a generator unit's configuration (host-order addresses).
type GenConf struct {
	PktLen         uint32 // frame length without FCS
	Stream         uint16
	Stamp          bool
	DstMAC, SrcMAC [6]byte
	SrcIP, DstIP   uint32
	NSrcIP, NDstIP uint32
	SPort, DPort   uint16
	NSPort, NDPort uint32
	Count          uint64
	PPS            float64
	Frames         [][]byte // pcap replay
}

// SetGen configures a generator unit. Pcap frames are copied into C memory
// owned by the returned release func.
func (u *Unit) SetGen(g GenConf) (release func(), err error) {
	var c C.struct_rig_gen_conf
	c.pkt_len = C.uint32_t(g.PktLen)
	c.stream = C.uint16_t(g.Stream)
	if g.Stamp {
		c.stamp = 1
	}
	for i := 0; i < 6; i++ {
		c.dst_mac[i] = C.uint8_t(g.DstMAC[i])
		c.src_mac[i] = C.uint8_t(g.SrcMAC[i])
	}
	c.src_ip, c.dst_ip = C.uint32_t(g.SrcIP), C.uint32_t(g.DstIP)
	c.n_src_ip, c.n_dst_ip = C.uint32_t(g.NSrcIP), C.uint32_t(g.NDstIP)
	c.sport, c.dport = C.uint16_t(g.SPort), C.uint16_t(g.DPort)
	c.n_sport, c.n_dport = C.uint32_t(g.NSPort), C.uint32_t(g.NDPort)
	c.count = C.uint64_t(g.Count)
	c.pps = C.double(g.PPS)
	release = func() {}
	if len(g.Frames) > 0 {
		total := 0
		for _, f := range g.Frames {
			total += len(f)
		}
		data := C.malloc(C.size_t(total + 1))
		offs := C.malloc(C.size_t(4 * len(g.Frames)))
		lens := C.malloc(C.size_t(4 * len(g.Frames)))
		db := unsafe.Slice((*byte)(data), total+1)
		ob := unsafe.Slice((*uint32)(offs), len(g.Frames))
		lb := unsafe.Slice((*uint32)(lens), len(g.Frames))
		off := 0
		for i, f := range g.Frames {
			copy(db[off:], f)
			ob[i], lb[i] = uint32(off), uint32(len(f))
			off += len(f)
		}
		c.pcap_data = (*C.uint8_t)(data)
		c.pcap_off = (*C.uint32_t)(offs)
		c.pcap_len = (*C.uint32_t)(lens)
		c.pcap_n = C.uint32_t(len(g.Frames))
		release = func() { C.free(data); C.free(offs); C.free(lens) }
	}
	if r := C.rig_unit_gen(u.u, &c); r != 0 {
		release()
		return func() {}, errnoErr("gen: frame size does not fit the mbuf data room", r)
	}
	return release, nil
}

// SetFwd sets the forwarding mode, for mac mode the MACs to write, and how
// many times (1 us apart) a partial tx burst is retried before dropping.
func (u *Unit) SetFwd(mode int, dst, src [6]byte, txRetry uint32) {
	C.rig_unit_fwd(u.u, C.int(mode), (*C.uint8_t)(unsafe.Pointer(&dst[0])), (*C.uint8_t)(unsafe.Pointer(&src[0])), C.uint32_t(txRetry))
}

// SetPolice caps a fwd unit at pps frames per second: a token bucket of
// depth frames in its lcore loop, restarted with restart tokens after idle
// without a frame; frames beyond it are dropped on arrival and counted as
// policed.
func (u *Unit) SetPolice(pps float64, depth, restart uint32, idle time.Duration) {
	C.rig_unit_police(u.u, C.double(pps), C.uint32_t(depth), C.uint32_t(restart), C.double(idle.Seconds()))
}

// SetTxKick gives a unit its tx port's AF_PACKET sockets (at most
// MaxKickFDs) to kick while it is idle after a tx (shim_internal.h).
func (u *Unit) SetTxKick(fds []int) error {
	if len(fds) > MaxKickFDs {
		fds = fds[:MaxKickFDs]
	}
	if len(fds) == 0 {
		return nil
	}
	cf := make([]C.int, len(fds))
	for i, fd := range fds {
		cf[i] = C.int(fd)
	}
	return errnoErr("unit: tx kick", C.rig_unit_tx_kick(u.u, &cf[0], C.int(len(cf))))
}

// MaxKickFDs is how many sockets a unit kicks (RIG_MAX_KICK_FDS).
const MaxKickFDs = C.RIG_MAX_KICK_FDS

// SetTxFirst makes a fwd unit send n frames before forwarding (testpmd --tx-first).
func (u *Unit) SetTxFirst(n uint16) { C.rig_unit_txfirst(u.u, C.uint16_t(n)) }

// KeepForeign makes an rx unit count every frame as received, rig's or
// not (a pcap replay sends frames of any kind); by default a frame without
// rig's signature is only counted in Counters.Foreign.
func (u *Unit) KeepForeign() { C.rig_unit_keep_foreign(u.u, 1) }

// SetCapture makes an rx unit keep the first n frames (snap bytes each).
func (u *Unit) SetCapture(n, snap uint32) error {
	return errnoErr("capture", C.rig_unit_capture(u.u, C.uint32_t(n), C.uint32_t(snap)))
}

// Captured returns copies of the captured frames (truncated to snap) and
// their original lengths. Call after the lcores are joined.
func (u *Unit) Captured() (frames [][]byte, lens []uint32) {
	var data *C.uint8_t
	var lp *C.uint32_t
	var csnap C.uint32_t
	n := int(C.rig_unit_captured(u.u, &data, &lp, &csnap))
	if n == 0 || data == nil {
		return nil, nil
	}
	ls := unsafe.Slice((*uint32)(unsafe.Pointer(lp)), n)
	snap := int(csnap)
	all := unsafe.Slice((*byte)(unsafe.Pointer(data)), n*snap)
	for i := 0; i < n; i++ {
		l := int(ls[i])
		if l > snap {
			l = snap
		}
		frames = append(frames, append([]byte(nil), all[i*snap:i*snap+l]...))
		lens = append(lens, ls[i])
	}
	return frames, lens
}

// Counters is a snapshot of a unit's counters.
type Counters struct {
	RxPkts, RxBytes, TxPkts, TxBytes, Drops uint64
	Policed                                 uint64 // fwd: frames over its --max-rate
	Stamped, Lost, Reordered                uint64
	LatMin, LatMax, LatSum                  uint64 // TSC cycles
	LatN                                    uint64 // latency samples since the last LatReset
	TxFirstTSC, TxLastTSC                   uint64 // gen: TSC of the first and last accepted burst (0: none)
	TxKicks                                 uint64 // af_packet tx: idle kicks that sent frames the PMD's own kick left queued
	Foreign                                 uint64 // rx: frames without rig's signature (not in RxPkts unless KeepForeign)
	Done                                    bool
	Hist                                    []uint64 // rx: the latency histogram (HistN buckets), only when asked
}

// Snapshot reads the counters (relaxed atomic loads; safe while running).
func (u *Unit) Snapshot(withHist bool) Counters {
	var c C.struct_rig_counters
	C.rig_unit_snapshot(u.u, &c)
	out := Counters{
		RxPkts: uint64(c.rx_pkts), RxBytes: uint64(c.rx_bytes),
		TxPkts: uint64(c.tx_pkts), TxBytes: uint64(c.tx_bytes), Drops: uint64(c.drops), Policed: uint64(c.policed),
		Stamped: uint64(c.stamped), Lost: uint64(c.lost), Reordered: uint64(c.reordered),
		LatMin: uint64(c.lat_min), LatMax: uint64(c.lat_max), LatSum: uint64(c.lat_sum), LatN: uint64(c.lat_n),
		TxFirstTSC: uint64(c.tx_first_tsc), TxLastTSC: uint64(c.tx_last_tsc), TxKicks: uint64(c.tx_kicks),
		Foreign: uint64(c.foreign), Done: c.done != 0,
	}
	if withHist {
		out.Hist = make([]uint64, HistN)
		C.rig_unit_hist(u.u, (*C.uint64_t)(unsafe.Pointer(&out.Hist[0])))
	}
	return out
}

// Free releases the unit (after the lcores are joined).
func (u *Unit) Free() {
	if u != nil && u.u != nil {
		C.rig_unit_free(u.u)
		u.u = nil
	}
}

// Launch starts units on a worker lcore.
func Launch(lcore uint, units []*Unit) error {
	if len(units) == 0 {
		return nil
	}
	arr := (**C.struct_rig_unit)(C.malloc(C.size_t(len(units)) * C.size_t(unsafe.Sizeof(uintptr(0)))))
	defer C.free(unsafe.Pointer(arr))
	s := unsafe.Slice(arr, len(units))
	for i, u := range units {
		s[i] = u.u
	}
	return errnoErr(fmt.Sprintf("lcore %d: launch", lcore), C.rig_launch(C.unsigned(lcore), arr, C.int(len(units))))
}

// Stop asks every lcore loop to return; Wait joins them.
func Stop() { C.rig_stop() }

// Wait blocks until every worker lcore is back to WAIT state.
func Wait() { C.rig_wait_all() }

// WorkerTID is the Linux thread id of a launched worker lcore (0 until it runs).
func WorkerTID(lcore uint) int { return int(C.rig_worker_tid(C.unsigned(lcore))) }

// TSCHz is the TSC frequency.
func TSCHz() uint64 { return uint64(C.rig_tsc_hz()) }

// MainLcore is the main lcore id.
func MainLcore() uint { return uint(C.rig_main_lcore()) }

// WorkerLcores lists the worker lcores in order.
func WorkerLcores() []uint {
	var out []uint
	for l := int(C.rig_next_lcore(-1)); l >= 0; l = int(C.rig_next_lcore(C.int(l))) {
		out = append(out, uint(l))
	}
	return out
}

// LcoreCPU is the first CPU an lcore is pinned to.
func LcoreCPU(lcore uint) int { return int(C.rig_lcore_cpu(C.unsigned(lcore))) }

// Halt makes a generator unit stop sending (its lcore keeps running the
// other units, so receivers can drain).
func (u *Unit) Halt() { C.rig_unit_halt(u.u) }

// LatReset makes an rx unit drop the latency stats gathered so far (the
// warm-up); its lcore applies it before it accounts the next burst.
func (u *Unit) LatReset() { C.rig_unit_lat_reset(u.u) }

// LatResetPending: a LatReset not applied yet (no frame arrived since), so
// the latency stats still include the warm-up.
func (u *Unit) LatResetPending() bool { return C.rig_unit_lat_reset_pending(u.u) != 0 }
