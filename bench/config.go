package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
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

	LinkSpeed string        `json:"linkSpeed,omitempty"`
	Capture   int           `json:"capture,omitempty"` // rx: keep the first N frames
	NoPinGo   bool          `json:"noPinGo,omitempty"` // leave Go threads unpinned
	Interval  time.Duration `json:"interval,omitempty"`
}

var pciRe = regexp.MustCompile(`^([0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]`)

// Defaults fills zero fields and validates the config.
func (c *Config) Defaults() error {
	switch c.Role {
	case RoleGen, RoleRx, RoleFwd, RoleLoop:
	default:
		return fmt.Errorf("bench: mode %q: want gen, rx, fwd or loop", c.Role)
	}
	if c.Role == RoleLoop && len(c.VDevs) == 0 && len(c.Ports) == 0 {
		// the single-host check without hardware: a memif server/client pair
		c.VDevs = DefaultLoopVDevs(fmt.Sprint(os.Getpid()))
	}
	if len(c.Ports) == 0 {
		for _, v := range c.VDevs {
			name, _, _ := strings.Cut(v, ",")
			c.Ports = append(c.Ports, name)
		}
	}
	need := 1 // loop over one port: it must loop back (a net_ring port does)
	if len(c.Ports) < need {
		return fmt.Errorf("bench %s: needs %d port(s) (--vdev or --port), got %d", c.Role, need, len(c.Ports))
	}
	if len(c.Ports) > 2 {
		return fmt.Errorf("bench %s: at most 2 ports, got %d", c.Role, len(c.Ports))
	}
	def := func(p *int, v int) {
		if *p == 0 {
			*p = v
		}
	}
	def(&c.Cores, 1)
	def(&c.RxQ, 1)
	def(&c.TxQ, 1)
	def(&c.RxD, 1024)
	def(&c.TxD, 1024)
	def(&c.Burst, 32)
	def(&c.MbufCache, 256)
	def(&c.FrameSize, 64)
	def(&c.TxFirst, 0)
	if c.Role == RoleFwd && c.TxQ < c.RxQ {
		c.TxQ = c.RxQ
	}
	if c.Role == RoleLoop && c.RxQ != c.TxQ && c.RxQ > 0 && c.TxQ > 0 {
		// each generator queue needs a receiving queue, and a memif pair
		// connects only with as many rings each way (else its link stays
		// down): both ports get the larger count, one gen and one rx each
		q := max(c.RxQ, c.TxQ)
		c.RxQ, c.TxQ = q, q
	}
	if c.TxQ > 64 || c.RxQ > 64 {
		return fmt.Errorf("bench: --txq/--rxq: at most 64 queues per port")
	}
	if c.Burst > 512 {
		return fmt.Errorf("bench: --burst %d: at most 512", c.Burst)
	}
	if c.FrameSize < 64 || c.FrameSize > 9000 {
		return fmt.Errorf("bench: --size %d: want 64..9000 bytes (FCS included)", c.FrameSize)
	}
	if c.FwdMode == "" {
		c.FwdMode = "io"
	}
	switch c.FwdMode {
	case "io", "mac", "macswap":
	default:
		return fmt.Errorf("bench: --fwd-mode %q: want io, mac or macswap", c.FwdMode)
	}
	if c.SrcIP == "" {
		c.SrcIP = "10.0.0.1"
	}
	if c.DstIP == "" {
		c.DstIP = "10.0.1.1"
	}
	if c.SPort == "" {
		c.SPort = "1024"
	}
	if c.DPort == "" {
		c.DPort = "1024"
	}
	if c.DstMAC == "" {
		c.DstMAC = "02:00:00:00:00:02"
	}
	if c.Interval == 0 {
		c.Interval = time.Second
	}
	if err := c.validate(); err != nil {
		return err
	}
	if err := checkEALArgs(c.EAL); err != nil {
		return err
	}
	explicit := c.Lcores != ""
	if c.Lcores == "" {
		c.Lcores = "0-" + strconv.Itoa(c.Cores)
	}
	m, err := c.LcoreMap()
	if err != nil {
		return err
	}
	if err := c.checkLcores(m, explicit, onlineCPUs()); err != nil {
		return err
	}
	if c.FilePrefix == "" {
		c.FilePrefix = DefaultFilePrefix(os.Getpid())
	}
	return nil
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
	m, err := ParseLcores(c.Lcores, ml)
	if err != nil {
		return LcoreMap{}, fmt.Errorf("bench: --lcores: %w", err)
	}
	return m, nil
}

// validate checks every flag value that Run would otherwise reject only
// after EAL started (or never): a bad value is a usage error.
func (c *Config) validate() error {
	pos := []struct {
		flag string
		v    int
	}{{"--cores", c.Cores}, {"--rxq", c.RxQ}, {"--txq", c.TxQ}, {"--rxd", c.RxD}, {"--txd", c.TxD}, {"--burst", c.Burst}}
	for _, p := range pos {
		if p.v < 1 {
			return fmt.Errorf("bench: %s %d: want at least 1", p.flag, p.v)
		}
	}
	nonneg := []struct {
		flag string
		v    int
	}{{"--mbuf-cache", c.MbufCache}, {"--mbufs", c.Mbufs}, {"--tx-first", c.TxFirst}, {"--tx-retry", c.TxRetry}, {"--capture", c.Capture}}
	for _, p := range nonneg {
		if p.v < 0 {
			return fmt.Errorf("bench: %s %d: want 0 or more", p.flag, p.v)
		}
	}
	if c.RxD > 65535 || c.TxD > 65535 {
		return fmt.Errorf("bench: --rxd/--txd: at most 65535 descriptors")
	}
	if c.Cores > 127 {
		return fmt.Errorf("bench: --cores %d: at most 127", c.Cores)
	}
	if c.Duration < 0 {
		return fmt.Errorf("bench: --duration %v: want 0 (until --count or SIGINT) or more", c.Duration)
	}
	if c.Interval < 0 {
		return fmt.Errorf("bench: --interval %v: want more than 0", c.Interval)
	}
	if _, err := ParseIPRange(c.SrcIP); err != nil {
		return fmt.Errorf("bench: --src-ip: %w", err)
	}
	if _, err := ParseIPRange(c.DstIP); err != nil {
		return fmt.Errorf("bench: --dst-ip: %w", err)
	}
	if _, err := ParsePortRange(c.SPort); err != nil {
		return fmt.Errorf("bench: --sport: %w", err)
	}
	if _, err := ParsePortRange(c.DPort); err != nil {
		return fmt.Errorf("bench: --dport: %w", err)
	}
	for _, m := range []struct{ flag, v string }{{"--dst-mac", c.DstMAC}, {"--fwd-dst-mac", c.FwdDstMAC}, {"--fwd-src-mac", c.FwdSrcMAC}} {
		if m.v == "" {
			continue
		}
		if _, err := ParseMAC(m.v); err != nil {
			return fmt.Errorf("bench: %s: %w", m.flag, err)
		}
	}
	linkBps := 0.0
	if c.LinkSpeed != "" {
		v, err := ParseLinkSpeed(c.LinkSpeed)
		if err != nil {
			return fmt.Errorf("bench: --link-speed: %w", err)
		}
		linkBps = v
	}
	// a % rate needs a link speed, which the port may report only later:
	// check its syntax against a nominal one
	if linkBps == 0 {
		linkBps = 10e9
	}
	if _, err := ParseRate(c.Rate, c.FrameSize, linkBps); err != nil {
		return fmt.Errorf("bench: --rate: %w", err)
	}
	return nil
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
	if strings.ContainsAny(c.Lcores, "@()") {
		lflag = "--lcores" // lcore-to-CPU mapping, e.g. 0@1,1@0
	}
	args := []string{"rig", lflag, c.Lcores, "--file-prefix", c.FilePrefix, "--log-level", "5"}
	pci := false
	for _, p := range c.Ports {
		if pciRe.MatchString(p) {
			pci = true
			args = append(args, "-a", p)
		}
	}
	if !pci {
		args = append(args, "--no-pci")
	}
	for _, v := range c.VDevs {
		args = append(args, "--vdev", v)
	}
	args = append(args, mem.Args...)
	return append(args, c.EAL...)
}
