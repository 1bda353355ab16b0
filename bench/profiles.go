package bench

import (
	"fmt"
	"sort"
	"strings"

	"rig/internal/devargs"
)

// Profile is a named set of mlx5 PMD devargs and queue, descriptor, burst
// and mempool-cache settings, taken from a command line of a procedure
// users follow by hand (../shared/reference/seeds/). `rig bench ...
// --profile NAME` expands it (ApplyProfile); flags given explicitly win.
type Profile struct {
	Name    string `json:"name"`
	Summary string `json:"summary"`
	// Source names the seed file and the command line the profile copies.
	Source string `json:"source"`
	// Devargs are mlx5 PMD options (key=value), appended to every PCI port.
	Devargs  []string         `json:"devargs"`
	Settings ProfileSettings  `json:"settings"`
	Omitted  []ProfileOmitted `json:"omitted,omitempty"`
}

// ProfileSettings are the profile's bench.Config fields.
type ProfileSettings struct {
	RxQ       int `json:"rxq"`
	TxQ       int `json:"txq"`
	RxD       int `json:"rxd"`
	TxD       int `json:"txd"`
	Burst     int `json:"burst"`
	MbufCache int `json:"mbufCache"`
}

// ProfileOmitted is a part of the seed's command line the profile does not
// carry, and why.
type ProfileOmitted struct {
	Arg string `json:"arg"`
	Why string `json:"why"`
}

// seed001 is the Ampere Altra DPDK/Pktgen guide (ConnectX-6, 100G).
const seed001 = "seeds/001_c111fcc72c92cd67.txt (Ampere Altra DPDK guide, ConnectX-6)"

// seed001Settings: both of the guide's command lines run 3 rx and 3 tx
// queues of 1024 descriptors, bursts of 128 and a 512-mbuf cache.
var seed001Settings = ProfileSettings{RxQ: 3, TxQ: 3, RxD: 1024, TxD: 1024, Burst: 128, MbufCache: 512}

// seed001Omitted: the rest of the guide's testpmd line, which is the host's
// or testpmd's, not the NIC's.
var seed001Omitted = []ProfileOmitted{
	{"-l 40-79", "the guide host's cores: give --lcores/--cores for this host"},
	{"-n 8", "the guide host's memory channels: give --eal '-n 8' on a host with 8"},
	{"--nb-cores=1", "rig's --cores, default 1 as in the guide"},
	{"--rss-ip", "rig hashes IP, UDP and TCP, as far as the port offers, when --rxq > 1"},
	{"-i, -a, --file-prefix testpmd", "testpmd's interactive mode and autostart; rig picks its own file prefix"},
}

// profiles is the table of named profiles, by name.
var profiles = []Profile{
	{
		Name: "mlx5-inline-mprq",
		Summary: "data inline mode: Multi-Packet Rx Queue, enhanced multi-packet write with 1024-byte tx inline, CQE compression; " +
			"saves PCIe bandwidth under PCIe back pressure at the cost of CPU copies (the guide's choice at high packet rates)",
		Source:   seed001 + ", CMD-1",
		Devargs:  []string{"mprq_en=1", "rxqs_min_mprq=1", "rxq_cqe_comp_en=1", "rxq_pkt_pad_en=1", "txq_inline_max=1024", "txq_inline_mpw=1024", "txqs_min_inline=1", "txq_mpw_en=1"},
		Settings: seed001Settings,
		Omitted:  seed001Omitted,
	},
	{
		Name: "mlx5-no-inline",
		Summary: "non-inline mode: MPRQ off, no tx data inline (txq_inline_max/mpw 0), enhanced multi-packet write and CQE compression kept; " +
			"the guide's recommendation when the packet rate is not high",
		Source:   seed001 + ", CMD-2",
		Devargs:  []string{"mprq_en=0", "rxqs_min_mprq=1", "rxq_cqe_comp_en=1", "rxq_pkt_pad_en=1", "txq_inline_max=0", "txq_inline_mpw=0", "txqs_min_inline=1", "txq_mpw_en=1"},
		Settings: seed001Settings,
		Omitted:  seed001Omitted,
	},
}

// Profiles returns every named profile, in name order.
func Profiles() []Profile {
	out := make([]Profile, len(profiles))
	copy(out, profiles)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// LookupProfile finds a profile by name; the error lists the names.
func LookupProfile(name string) (Profile, error) {
	var names []string
	for _, p := range Profiles() {
		if p.Name == name {
			return p, nil
		}
		names = append(names, p.Name)
	}
	return Profile{}, failuref("--profile "+name, "`rig bench profiles` lists them with what each sets",
		"no such profile (known: %s)", strings.Join(names, ", "))
}

// DevargsString is the profile's devargs as one comma-separated string.
func (p Profile) DevargsString() string { return strings.Join(p.Devargs, ",") }

// ProfileFlags are the flags a profile sets, as rig names them.
var ProfileFlags = []string{"rxq", "txq", "rxd", "txd", "burst", "mbuf-cache"}

// ApplyProfile expands p into c: ApplySettings, then ApplyDevargs.
func ApplyProfile(c *Config, p Profile, explicit func(flag string) bool) []string {
	p.ApplySettings(c, explicit)
	return p.ApplyDevargs(c)
}

// ApplySettings sets each of c's fields the profile has unless explicit
// reports its flag (ProfileFlags) as given on the command line, and
// records p in c.Profile.
func (p Profile) ApplySettings(c *Config, explicit func(flag string) bool) {
	s := p.Settings
	for _, f := range []struct {
		flag string
		dst  *int
		v    int
	}{
		{"rxq", &c.RxQ, s.RxQ}, {"txq", &c.TxQ, s.TxQ}, {"rxd", &c.RxD, s.RxD},
		{"txd", &c.TxD, s.TxD}, {"burst", &c.Burst, s.Burst}, {"mbuf-cache", &c.MbufCache, s.MbufCache},
	} {
		if explicit == nil || !explicit(f.flag) {
			*f.dst = f.v
		}
	}
	c.Profile = p.Name
}

// ApplyDevargs appends the profile's devargs to every PCI port of c (a key
// the port's own devargs already give keeps its value) and records p in
// c.Profile. It returns notes on the ports they could not go to (vdevs: no
// mlx5 PMD there), except ports whose origin already says so (a virtual
// lab's substitution).
func (p Profile) ApplyDevargs(c *Config) []string {
	c.Profile = p.Name
	var notes []string
	for i, port := range c.PortNames() {
		// a PCI port is always one of c.Ports (the --vdev names are never
		// PCI addresses), so c.Ports[i] is it
		dev := devargs.Device(port)
		if !pciAddr(dev) {
			if o := c.origin(port); o == nil || o.Substitution == "" {
				notes = append(notes, fmt.Sprintf("profile %s: mlx5 devargs not applied to port %s (a vdev, not an mlx5 PCI function)", p.Name, port))
			}
			continue
		}
		merged := devargs.Merge(port, p.Devargs)
		if o := c.origin(port); o != nil {
			o.Port, o.Devargs = merged, merged
		}
		c.Ports[i] = merged
	}
	return notes
}
