package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"rig/internal/devargs"
	"rig/internal/pci"
)

// Role is what a run's dataplane does with its ports.
type Role string

// Roles.
const (
	RoleGen  Role = "gen"  // txonly
	RoleRx   Role = "rx"   // rxonly
	RoleFwd  Role = "fwd"  // io / mac / macswap
	RoleLoop Role = "loop" // gen on port 0, rx on port 1, one process
)

// Config is one benchmark run. Zero values mean the defaults below.
type Config struct {
	Role   Role     `json:"role"`
	VDevs  []string `json:"vdevs,omitempty"`  // EAL --vdev values
	Ports  []string `json:"ports,omitempty"`  // device names (vdev name or PCI address); default: the vdev names
	EAL    []string `json:"eal,omitempty"`    // extra EAL args (argv, never a shell)
	Cores  int      `json:"cores,omitempty"`  // worker lcores (default 1)
	Lcores string   `json:"lcores,omitempty"` // EAL -l list (default 0-<cores>)

	RxQ       int `json:"rxq,omitempty"`
	TxQ       int `json:"txq,omitempty"`
	RxD       int `json:"rxd,omitempty"`
	TxD       int `json:"txd,omitempty"`
	Burst     int `json:"burst,omitempty"`
	MbufCache int `json:"mbufCache,omitempty"`
	Mbufs     int `json:"mbufs,omitempty"`

	NoHuge     bool   `json:"noHuge,omitempty"`
	HugeDir    string `json:"hugeDir,omitempty"`
	FilePrefix string `json:"filePrefix,omitempty"`

	FrameSize int           `json:"frameSize,omitempty"` // bytes incl. FCS (64..9000)
	Count     uint64        `json:"count,omitempty"`     // frames to send (gen/loop) or receive (rx, fwd)
	Duration  time.Duration `json:"duration,omitempty"`
	Rate      string        `json:"rate,omitempty"` // 100kpps, 1Mpps, 10Gbps, 50%
	SrcIP     string        `json:"srcIP,omitempty"`
	DstIP     string        `json:"dstIP,omitempty"`
	SPort     string        `json:"sport,omitempty"`
	DPort     string        `json:"dport,omitempty"`
	DstMAC    string        `json:"dstMAC,omitempty"`
	Pcap      string        `json:"pcap,omitempty"`

	FwdMode   string `json:"fwdMode,omitempty"` // io, mac, macswap
	FwdDstMAC string `json:"fwdDstMAC,omitempty"`
	FwdSrcMAC string `json:"fwdSrcMAC,omitempty"`
	TxFirst   int    `json:"txFirst,omitempty"`
	TxRetry   int    `json:"txRetry,omitempty"` // fwd: retries (1 us apart) of a partial tx burst
	MaxRate   string `json:"maxRate,omitempty"` // fwd: forward at most this many frames per second per port (500kpps)

	LinkSpeed string        `json:"linkSpeed,omitempty"`
	Capture   int           `json:"capture,omitempty"` // rx: keep the first N frames
	NoPinGo   bool          `json:"noPinGo,omitempty"` // leave Go threads unpinned
	Interval  time.Duration `json:"interval,omitempty"`
	// Hold keeps the ports open (links up, no traffic) this long after the
	// run, so that a peer's counters can still be read: OvS reports a
	// vhost-user port's counters only while its peer is connected.
	Hold time.Duration `json:"hold,omitempty"`
	// Release, when set, ends Hold early: the run closes Release.Measured
	// once its figures are in (traffic over, drained) and holds its links
	// until the caller closes Release.Release or Hold runs out. A child
	// (child.Child.Run) gets HoldReleasable instead and the same signals over
	// its ready pipe and stdin.
	Release *HoldRelease `json:"-"`
	// HoldReleasable: this run is a child whose parent set Release: it
	// writes "measured" to the ready fd (child.ReadyFDEnv) and ends its hold
	// when its stdin closes.
	HoldReleasable bool `json:"holdReleasable,omitempty"`
	// DrainQuiet: a loop's drain (after its generators halt) ends when
	// everything came back or nothing arrived for this long; 0: 50 ms.
	// Frames through a far host may lag more (peer.Peer.Trial sets 500 ms).
	DrainQuiet time.Duration `json:"drainQuiet,omitempty"`
	// Settle waits this long after every link is up before the first
	// frame: OvS starts sending to a vhost-user port only once the device
	// runs there, a moment after rig's side sees the link; frames sent
	// before are dropped by OvS and not a measurement of the path.
	Settle time.Duration `json:"settle,omitempty"`
	// LatWarmup is how long after the first received frame latency
	// samples start to count (0: LatencyWarmup(Duration)).
	LatWarmup time.Duration `json:"latencyWarmup,omitempty"`
	// LatencyLoad ("50%", loop only) runs the generator at that fraction
	// of the path's capacity, so latency is measured below saturation;
	// AtLatencyLoad measures the capacity first (CapacityMpps) and sets
	// Rate from it.
	LatencyLoad  string  `json:"latencyLoad,omitempty"`
	CapacityMpps float64 `json:"capacityMpps,omitempty"`

	// Profile is the named profile (bench.Profiles) the settings and mlx5
	// devargs were expanded from (ApplyProfile), for the report.
	Profile string `json:"profile,omitempty"`
	// PortOrigins: the ports named by netdev, with their roles (AddPort).
	PortOrigins []PortOrigin `json:"portOrigins,omitempty"`
}

// DefaultConfig is the one table of defaults: rig's flags start from it,
// and Defaults fills a Config's zero fields from it.
func DefaultConfig(role Role) Config {
	return Config{
		Role: role, Cores: 1, RxQ: 1, TxQ: 1, RxD: 1024, TxD: 1024, Burst: 32, MbufCache: 256,
		FrameSize: 64, FwdMode: "io", SrcIP: "10.0.0.1", DstIP: "10.0.1.1", SPort: "1024", DPort: "1024",
		DstMAC: "02:00:00:00:00:02", Interval: time.Second,
	}
}

// Defaults fills zero fields from DefaultConfig, then derives what the rest
// implies: the ports (the --vdev names; loop's memif pair when none), queue
// counts a role needs, the lcore list and EAL's file prefix. Validate checks
// the result; a zero count given explicitly is refused by calling Validate
// before Defaults (rig's flags start from DefaultConfig, so nothing is zero
// by default there).
func (c *Config) Defaults() {
	d := DefaultConfig(c.Role)
	for _, f := range []struct{ p, def *int }{
		{&c.Cores, &d.Cores}, {&c.RxQ, &d.RxQ}, {&c.TxQ, &d.TxQ}, {&c.RxD, &d.RxD}, {&c.TxD, &d.TxD},
		{&c.Burst, &d.Burst}, {&c.MbufCache, &d.MbufCache}, {&c.FrameSize, &d.FrameSize},
	} {
		if *f.p == 0 {
			*f.p = *f.def
		}
	}
	for _, f := range []struct{ p, def *string }{
		{&c.FwdMode, &d.FwdMode}, {&c.SrcIP, &d.SrcIP}, {&c.DstIP, &d.DstIP}, {&c.SPort, &d.SPort},
		{&c.DPort, &d.DPort}, {&c.DstMAC, &d.DstMAC},
	} {
		if *f.p == "" {
			*f.p = *f.def
		}
	}
	if c.Interval == 0 {
		c.Interval = d.Interval
	}
	if c.Role == RoleLoop && len(c.VDevs) == 0 && len(c.Ports) == 0 {
		// the single-host check without hardware: a memif server/client pair
		c.VDevs = DefaultLoopVDevs(fmt.Sprint(os.Getpid()))
	}
	c.Ports = c.PortNames()
	if c.Role == RoleFwd && c.TxQ < c.RxQ {
		c.TxQ = c.RxQ
	}
	if c.Role == RoleLoop && c.RxQ != c.TxQ && c.RxQ > 0 && c.TxQ > 0 && !c.throughSwitch() {
		// each generator queue needs a receiving queue, and a memif pair
		// connects only with as many rings each way (else its link stays
		// down): both ports get the larger count, one gen and one rx each.
		// Through a switch (OvS) the counts are the switch's to match:
		// kept as given (see dataplane's memifQueueHint)
		q := max(c.RxQ, c.TxQ)
		c.RxQ, c.TxQ = q, q
	}
	if c.FilePrefix == "" {
		c.FilePrefix = DefaultFilePrefix(os.Getpid())
	}
}

// PortNames are the ports a run uses: --port, else the --vdev names (loop
// without either: its default memif pair).
func (c *Config) PortNames() []string {
	if len(c.Ports) > 0 {
		return c.Ports
	}
	vdevs := c.VDevs
	if c.Role == RoleLoop && len(vdevs) == 0 {
		vdevs = DefaultLoopVDevs("")
	}
	var out []string
	for _, v := range vdevs {
		name := devargs.Device(v)
		out = append(out, name)
	}
	return out
}

// LcoreList is --lcores, or 0-<cores> when not given.
func (c *Config) LcoreList() string {
	if c.Lcores != "" {
		return c.Lcores
	}
	return "0-" + strconv.Itoa(c.Cores)
}

// DefaultFilePrefix is EAL's --file-prefix of a rig process: its runtime
// dir is /var/run/dpdk/rig<pid> as root.
func DefaultFilePrefix(pid int) string { return fmt.Sprintf("rig%d", pid) }

// LcoreMap reads c.Lcores (and --main-lcore among the extra EAL args).
func (c *Config) LcoreMap() (LcoreMap, error) {
	ml, err := mainLcoreArg(c.EAL)
	if err != nil {
		return LcoreMap{}, fmt.Errorf("bench: %w", err)
	}
	m, err := ParseLcores(c.LcoreList(), ml)
	if err != nil {
		return LcoreMap{}, fmt.Errorf("bench: --lcores: %w", err)
	}
	return m, nil
}

// Validate checks every field before EAL starts (a bad value is a usage
// error) and changes nothing. Zero counts are refused: call it before
// Defaults to refuse an explicit zero, after it for a zero meaning default.
func (c *Config) Validate() error {
	for _, check := range []func() error{c.checkRole, c.checkPCIPorts, c.checkCounts, c.checkTraffic, c.checkMaxRate, c.checkLatency, c.checkMbufs, c.checkVdevSizes, c.checkEAL, c.checkMemory} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

func (c *Config) checkRole() error {
	switch c.Role {
	case RoleGen, RoleRx, RoleFwd, RoleLoop:
	default:
		return fmt.Errorf("bench: role %q: want gen, rx, fwd or loop", c.Role)
	}
	// loop over one port: it must loop back (a net_ring port does)
	if n := len(c.PortNames()); n < 1 || n > 2 {
		return fmt.Errorf("bench %s: needs 1 or 2 ports (--vdev or --port), got %d", c.Role, n)
	}
	switch c.FwdMode {
	case "io", "mac", "macswap":
	default:
		return fmt.Errorf("bench: --fwd-mode %q: want io, mac or macswap", c.FwdMode)
	}
	if c.Profile != "" {
		if _, err := LookupProfile(c.Profile); err != nil {
			return err
		}
	}
	return nil
}

// checkCounts: every number against its range (DPDK's limits where it has
// them: 64 queues here, 65535 descriptors, a 512-frame burst and cache).
func (c *Config) checkCounts() error {
	for _, n := range []struct {
		flag     string
		v        int
		min, max int
		unit     string
	}{
		{"--cores", c.Cores, 1, 127, ""}, {"--rxq", c.RxQ, 1, 64, " queues"}, {"--txq", c.TxQ, 1, 64, " queues"},
		{"--rxd", c.RxD, 1, 65535, " descriptors"}, {"--txd", c.TxD, 1, 65535, " descriptors"},
		{"--burst", c.Burst, 1, DPDKMaxBurst, " frames"}, {"--mbuf-cache", c.MbufCache, 0, 512, " mbufs"},
		{"--size", c.FrameSize, 64, 9000, " bytes (FCS included)"}, {"--tx-first", c.TxFirst, 0, DPDKMaxBurst, " frames"},
		{"--tx-retry", c.TxRetry, 0, 1 << 30, ""}, {"--capture", c.Capture, 0, 1 << 20, " frames"},
	} {
		if n.v < n.min || n.v > n.max {
			return fmt.Errorf("bench: %s %d: want %d..%d%s", n.flag, n.v, n.min, n.max, n.unit)
		}
	}
	if c.Duration < 0 {
		return fmt.Errorf("bench: --duration %v: want 0 (until --count or SIGINT) or more", c.Duration)
	}
	if c.DrainQuiet < 0 || c.DrainQuiet > 2*time.Second {
		return fmt.Errorf("bench: drain quiet %v: want 0..2s", c.DrainQuiet)
	}
	if c.Hold < 0 || c.Hold > time.Minute {
		return fmt.Errorf("bench: --hold %v: want 0..1m", c.Hold)
	}
	if c.Settle < 0 || c.Settle > time.Minute {
		return fmt.Errorf("bench: --settle %v: want 0..1m", c.Settle)
	}
	if c.Interval < 0 {
		return fmt.Errorf("bench: --interval %v: want more than 0", c.Interval)
	}
	return nil
}

// checkTraffic parses every address, range, MAC, speed and rate.
func (c *Config) checkTraffic() error {
	ip := func(v string) error { _, err := ParseIPRange(v); return err }
	port := func(v string) error { _, err := ParsePortRange(v); return err }
	mac := func(v string) error { _, err := ParseMAC(v); return err }
	speed := func(v string) error { _, err := ParseLinkSpeed(v); return err }
	for _, r := range []struct {
		flag, v  string
		parse    func(string) error
		optional bool // empty: not given, nothing to check
	}{
		{"--src-ip", c.SrcIP, ip, false}, {"--dst-ip", c.DstIP, ip, false},
		{"--sport", c.SPort, port, false}, {"--dport", c.DPort, port, false},
		{"--dst-mac", c.DstMAC, mac, false}, {"--fwd-dst-mac", c.FwdDstMAC, mac, true},
		{"--fwd-src-mac", c.FwdSrcMAC, mac, true}, {"--link-speed", c.LinkSpeed, speed, true},
	} {
		if r.v == "" && r.optional {
			continue
		}
		if err := r.parse(r.v); err != nil {
			return fmt.Errorf("bench: %s: %w", r.flag, err)
		}
	}
	// a % rate needs a link speed, which the port may report only later:
	// check its syntax against a nominal one
	linkBps := 10e9
	if c.LinkSpeed != "" {
		linkBps, _ = ParseLinkSpeed(c.LinkSpeed)
	}
	if _, err := ParseRate(c.Rate, c.FrameSize, linkBps); err != nil {
		return fmt.Errorf("bench: --rate: %w", err)
	}
	return nil
}

// checkMbufs: --mbufs 0 sizes the pool from the queues; a given count must
// hold at least that much, or the ports cannot fill their rings.
func (c *Config) checkMbufs() error {
	d := *c
	d.Defaults() // the queue counts the run will have (loop evens them out)
	if need := poolMbufs(&d, len(d.Ports)); c.Mbufs != 0 && c.Mbufs < need {
		return fmt.Errorf("bench: --mbufs %d: want 0 (sized from the queues) or at least %d (descriptors, lcore caches and bursts)", c.Mbufs, need)
	}
	return nil
}

// checkVdevSizes bounds a net_null vdev's size= by the mbuf: it is the
// length of every frame the PMD makes on rx, and with copy=1 the bytes it
// copies into (rx) or out of (tx) each mbuf with no bound of its own
// (DPDK 22.11 drivers/net/null eth_null_copy_rx/tx): a larger size
// overruns the mbuf (a far net_null0,size=65535,copy=1 crashed serve's
// dataplane). This run's mbufs hold max(2048, --size) bytes after their
// headroom (PlanLayout's data room). Serve validates far configs here too.
func (c *Config) checkVdevSizes() error {
	room := dataRoom(c.FrameSize, nil) - mbufHeadroom
	for _, v := range c.VDevs {
		if dev := devargs.Device(v); !strings.HasPrefix(dev, "net_null") && !strings.HasPrefix(dev, "eth_null") {
			continue
		}
		s, ok := devargs.Lookup(v, "size")
		if !ok {
			continue
		}
		if n, err := strconv.Atoi(s); err != nil || n < 1 || n > room {
			return fmt.Errorf("bench: --vdev %s: size=%s: want 1..%d, the bytes an mbuf of this run holds (with copy=1 the PMD copies size bytes into each mbuf, and more overrun it); give at most %d, or a larger --size", v, s, room, room)
		}
	}
	return nil
}

// checkEAL: extra EAL arguments and the lcore list.
func (c *Config) checkEAL() error {
	if err := checkEALArgs(c.EAL); err != nil {
		return err
	}
	m, err := c.LcoreMap()
	if err != nil {
		return err
	}
	return c.checkLcores(m, c.Lcores != "", OnlineCPUs())
}

// DefaultLoopVDevs is a connected pair in one process: a memif server and
// a client on the same socket, so what port 0 sends, port 1 receives.
func DefaultLoopVDevs(tag string) []string {
	sock := filepath.Join(os.TempDir(), "rig-memif-"+tag+".sock")
	return []string{
		"net_memif_a" + tag + ",role=server,id=0,socket=" + sock,
		"net_memif_b" + tag + ",role=client,id=0,socket=" + sock,
	}
}

// Memory says how EAL gets its memory.
type Memory struct {
	Args    []string
	Warning string
}

// ChooseMemory picks hugepages when some are free (files in a hugetlbfs
// mount, unlinked at once; or anonymous memfd with --in-memory when nothing
// is mounted), --no-huge otherwise or when asked, with a warning.
func ChooseMemory(noHuge bool, hugeDir string, freeHuge int, mounted bool) Memory {
	const slow = "running without hugepages (--no-huge): slower, with TLB misses; reserve 2 MiB hugepages for real numbers"
	if noHuge {
		return Memory{Args: []string{"--no-huge", "-m", "512"}, Warning: slow}
	}
	if freeHuge <= 0 {
		return Memory{Args: []string{"--no-huge", "-m", "512"}, Warning: "no free hugepages: " + slow}
	}
	if hugeDir != "" {
		return Memory{Args: []string{"--huge-dir", hugeDir, "--huge-unlink"}}
	}
	if mounted {
		return Memory{Args: []string{"--huge-unlink"}}
	}
	return Memory{Args: []string{"--in-memory"}}
}

// EALArgs builds rte_eal_init's argv.
func (c *Config) EALArgs(mem Memory) []string {
	lflag := "-l"
	lcores := c.LcoreList()
	if strings.ContainsAny(lcores, "@()") {
		lflag = "--lcores" // lcore-to-CPU mapping, e.g. 0@1,1@0
	}
	args := []string{"rig", lflag, lcores, "--file-prefix", c.FilePrefix, "--log-level", "5"}
	allow := pciAllowList(c.Ports)
	for _, a := range allow {
		args = append(args, "-a", a)
	}
	if len(allow) == 0 {
		args = append(args, "--no-pci")
	}
	memif := false
	for _, v := range c.VDevs {
		args = append(args, "--vdev", v)
		memif = memif || strings.HasPrefix(v, "net_memif")
	}
	if memif {
		// the memif PMD says why a peer disconnected at INFO only: let
		// INFO through (global 7) for memif alone, every other type at 5
		args = append(args, "--log-level", "7", "--log-level", "*:5", "--log-level", "pmd.net.memif:7")
	}
	args = append(args, mem.Args...)
	return append(args, c.EAL...)
}

// pciAddr tells a PCI address (0000:03:00.0 or 03:00.0) from a vdev name.
func pciAddr(dev string) bool {
	_, err := pci.Parse(dev)
	return err == nil
}
