package bench

// The layout plan: which units (gen, rx, fwd on a port and queue) a run
// needs, on which worker lcore each runs, and how big the mbuf pool and its
// data room are. Pure: it reads the Config and nothing else, and calls no
// DPDK function (the dataplane handle carries it out).

// DPDKMaxBurst is the largest burst the C loops take (RIG_MAX_BURST in
// internal/dpdk/shim.h; dataplane's plan_cgo_test checks they agree).
const DPDKMaxBurst = 512

// UnitKind is what a unit's lcore loop does.
type UnitKind int

const (
	KindGen UnitKind = iota + 1 // send generated (or replayed) frames on tx
	KindRx                      // receive and account on rx
	KindFwd                     // receive on rx, send on tx
)

// UnitPlan is one unit of lcore work. Ports are indexes into Config.Ports;
// -1: the unit does not use that direction.
type UnitPlan struct {
	Kind            UnitKind
	RxPort, RxQueue int
	TxPort, TxQueue int
	Worker          int    // index into the worker lcores
	Count           uint64 // gen: frames to send (0: unlimited)
	Halted          bool   // gen: --count left it no frame (it starts halted)
	RateShare       int    // gen: the rate is divided among this many generators
	Capture         bool   // rx: keeps the first --capture frames
	TxFirst         bool   // fwd: sends --tx-first frames before forwarding
}

// Layout is the whole plan of a run.
type Layout struct {
	Units    []UnitPlan
	PoolSize int // mbufs
	DataRoom int // bytes per mbuf, headroom included
}

// PlanLayout lays out a defaulted, valid config; frames are the pcap ones
// (nil: generated frames of c.FrameSize).
func PlanLayout(c *Config, frames [][]byte) Layout {
	nports := len(c.Ports)
	var units []UnitPlan
	if c.Role == RoleGen || c.Role == RoleLoop {
		units = append(units, genUnits(c)...)
	}
	if c.Role == RoleRx || c.Role == RoleLoop {
		rp := 0
		if c.Role == RoleLoop && nports > 1 {
			rp = 1
		}
		for q := 0; q < c.RxQ; q++ {
			units = append(units, UnitPlan{Kind: KindRx, RxPort: rp, RxQueue: q, TxPort: -1, Capture: c.Capture > 0 && q == 0})
		}
	}
	if c.Role == RoleFwd {
		for q := 0; q < c.RxQ; q++ {
			for i := 0; i < nports; i++ {
				units = append(units, UnitPlan{Kind: KindFwd, RxPort: i, RxQueue: q, TxPort: (i + 1) % nports, TxQueue: q % c.TxQ,
					TxFirst: c.TxFirst > 0 && q == 0})
			}
		}
	}
	// round-robin over the worker lcores
	for i := range units {
		units[i].Worker = i % c.Cores
	}
	return Layout{Units: units, PoolSize: max(poolMbufs(c, nports), c.Mbufs), DataRoom: dataRoom(c.FrameSize, frames)}
}

// MemoryMB is the DPDK memory the run allocates after EAL starts, in MiB,
// with room for EAL's own heap, the ports' rings and the mempool's ring:
// per mbuf its data room, the 128 B rte_mbuf and the pool's object header
// (a cache line); each unit (unitBytes, from the C side), each generator's
// prebuilt flows (at most flowTemplateBytes) and the capture buffers (2 KiB
// and a length per frame).
func (l Layout) MemoryMB(capture, unitBytes int) int {
	const slack = 32 << 20
	gens := 0
	for _, u := range l.Units {
		if u.Kind == KindGen {
			gens++
		}
	}
	b := int64(l.PoolSize)*int64(l.DataRoom+128+64) + int64(len(l.Units))*int64(unitBytes) + int64(gens)*flowTemplateBytes +
		int64(capture)*(2048+4) + slack
	return int((b + 1<<20 - 1) >> 20)
}

// flowTemplateBytes is the most a generator prebuilds: RIG_MAX_FLOW_TMPL
// flows of RIG_FLOW_STRIDE bytes (bench/internal/dpdk/shim.h).
const flowTemplateBytes = 16384 * 64

// genUnits: one generator per tx queue of port 0, --count split among them.
func genUnits(c *Config) []UnitPlan {
	n := c.TxQ
	var units []UnitPlan
	for q := 0; q < n; q++ {
		u := UnitPlan{Kind: KindGen, RxPort: -1, TxPort: 0, TxQueue: q, RateShare: n}
		if c.Count > 0 {
			u.Count = c.Count / uint64(n)
			if uint64(q) < c.Count%uint64(n) {
				u.Count++
			}
			u.Halted = u.Count == 0
		}
		units = append(units, u)
	}
	return units
}

// poolMbufs is the pool a run needs: every rx and tx descriptor filled, each
// lcore's cache and a few bursts in flight, and slack.
func poolMbufs(c *Config, nports int) int {
	return nports*(c.RxQ*c.RxD+c.TxQ*c.TxD) + c.Cores*(c.MbufCache+4*c.Burst) + 4096
}

// dataRoom fits a 2 KiB buffer, the largest frame and 128 B of headroom.
func dataRoom(frameSize int, frames [][]byte) int {
	room := max(2048+mbufHeadroom, frameSize+mbufHeadroom)
	for _, f := range frames {
		room = max(room, len(f)+mbufHeadroom)
	}
	return room
}

// mbufHeadroom is DPDK's RTE_PKTMBUF_HEADROOM (128): the data room's
// bytes before a frame.
const mbufHeadroom = 128
