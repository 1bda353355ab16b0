package bench

import (
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"rig/internal/devargs"
)

// seed001Lines are the two testpmd command lines of seed 001, verbatim
// (checked against the seed file when it is here).
var seed001Lines = map[string]string{
	"CMD-1": "(CMD-1) dpdk-testpmd --file-prefix testpmd -l 40-79 -n 8 -a 0000:01:00.0,mprq_en=1,rxqs_min_mprq=1,rxq_cqe_comp_en=1,rxq_pkt_pad_en=1,txq_inline_max=1024,txq_inline_mpw=1024,txqs_min_inline=1,txq_mpw_en=1 -- -i --rss-ip --nb-cores=1  --burst=128 --txq=3 --rxq=3  --mbcache=512 --rxd=1024 --txd=1024  -a",
	"CMD-2": "(CMD-2) dpdk-testpmd --file-prefix testpmd -l 40-79 -n 8 -a 0000:01:00.0,mprq_en=0,rxqs_min_mprq=1,rxq_cqe_comp_en=1,rxq_pkt_pad_en=1,txq_inline_max=0,txq_inline_mpw=0,txqs_min_inline=1,txq_mpw_en=1 -- -i --rss-ip --nb-cores=1  --burst=128 --txq=3 --rxq=3  --mbcache=512 --rxd=1024 --txd=1024  -a",
}

// The profiles are the seed's two command lines, key for key: each
// devargs option and each testpmd setting the profile claims is on the
// line the profile names (CMD-1 inline, CMD-2 non-inline).
func TestProfilesMatchSeed(t *testing.T) {
	lines := seed001Lines
	if seed, err := os.ReadFile(filepath.Join("..", "..", "shared", "reference", "seeds", "001_c111fcc72c92cd67.txt")); err == nil {
		for _, l := range lines {
			if !strings.Contains(string(seed), "\n"+l+"\n") {
				t.Errorf("seed 001 has no line %q", l)
			}
		}
	}
	for _, c := range []struct{ name, cmd string }{{"mlx5-inline-mprq", "CMD-1"}, {"mlx5-no-inline", "CMD-2"}} {
		p, err := LookupProfile(c.name)
		if err != nil {
			t.Fatal(err)
		}
		line := lines[c.cmd]
		if line == "" || !strings.HasSuffix(p.Source, c.cmd) {
			t.Fatalf("%s: source %q, seed line %q", c.name, p.Source, line)
		}
		// the devargs of -a, in the seed's order
		a := strings.Fields(line[strings.Index(line, " -a ")+4:])[0]
		if want := strings.TrimPrefix(a, "0000:01:00.0,"); p.DevargsString() != want {
			t.Errorf("%s devargs\n %s\nwant (seed %s)\n %s", c.name, p.DevargsString(), c.cmd, want)
		}
		s := p.Settings
		for flag, v := range map[string]int{"--burst=": s.Burst, "--txq=": s.TxQ, "--rxq=": s.RxQ, "--mbcache=": s.MbufCache, "--rxd=": s.RxD, "--txd=": s.TxD} {
			if !strings.Contains(line, flag+strconv.Itoa(v)+" ") {
				t.Errorf("%s: %s%d is not on the seed's %s line", c.name, flag, v, c.cmd)
			}
		}
	}
	if _, err := LookupProfile("mlx5-fast"); err == nil || !strings.Contains(err.Error(), "known: mlx5-inline-mprq, mlx5-no-inline") {
		t.Errorf("unknown profile: %v", err)
	}
}

// A profile fills what was not given: an explicit flag keeps its value,
// a port's own devargs key keeps its value, vdev ports get no mlx5
// devargs (said in a note) and the result validates.
func TestApplyProfileExpansionAndOverride(t *testing.T) {
	p, _ := LookupProfile("mlx5-no-inline")
	c := DefaultConfig(RoleFwd)
	c.Ports = []string{"0000:01:00.0,txq_inline_max=128", "0000:01:00.1"}
	c.Burst = 64 // given on the command line
	notes := ApplyProfile(&c, p, func(flag string) bool { return flag == "burst" })
	if c.Burst != 64 || c.RxQ != 3 || c.TxQ != 3 || c.RxD != 1024 || c.TxD != 1024 || c.MbufCache != 512 || c.Profile != "mlx5-no-inline" || len(notes) != 0 {
		t.Errorf("settings: %+v notes %v", c, notes)
	}
	want := []string{
		"0000:01:00.0,txq_inline_max=128,mprq_en=0,rxqs_min_mprq=1,rxq_cqe_comp_en=1,rxq_pkt_pad_en=1,txq_inline_mpw=0,txqs_min_inline=1,txq_mpw_en=1",
		"0000:01:00.1,mprq_en=0,rxqs_min_mprq=1,rxq_cqe_comp_en=1,rxq_pkt_pad_en=1,txq_inline_max=0,txq_inline_mpw=0,txqs_min_inline=1,txq_mpw_en=1",
	}
	if !reflect.DeepEqual(c.Ports, want) {
		t.Errorf("ports\n %q\nwant\n %q", c.Ports, want)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("expanded config: %v", err)
	}
	// applying again changes nothing
	again := c
	again.Ports = append([]string(nil), c.Ports...)
	ApplyProfile(&again, p, func(flag string) bool { return flag == "burst" })
	if !reflect.DeepEqual(again.Ports, c.Ports) {
		t.Errorf("second expansion: %q", again.Ports)
	}
	// vdevs: settings apply, devargs cannot
	v := DefaultConfig(RoleLoop)
	v.VDevs = []string{"net_ring0"}
	notes = ApplyProfile(&v, p, nil)
	if v.RxQ != 3 || len(v.Ports) != 0 || len(notes) != 1 || !strings.Contains(notes[0], "mlx5 devargs not applied to port net_ring0") {
		t.Errorf("vdev: %+v %v", v, notes)
	}
	// an explicit zero stays and is refused, like the flag alone
	z := DefaultConfig(RoleGen)
	z.VDevs, z.RxQ = []string{"net_null0"}, 0
	ApplyProfile(&z, p, func(flag string) bool { return flag == "rxq" })
	if err := z.Validate(); err == nil || !strings.Contains(err.Error(), "--rxq 0") {
		t.Errorf("explicit --rxq 0 under a profile: %v", err)
	}
	z.Profile = "mlx5-nope"
	z.RxQ = 1
	if err := z.Validate(); err == nil || !strings.Contains(err.Error(), "no such profile") {
		t.Errorf("unknown profile in a config: %v", err)
	}
}

// One -a per PCI function: an uplink and its representors share one
// devargs with one representor list; options that disagree are refused.
func TestPCIAllowList(t *testing.T) {
	got := pciAllowList([]string{"0000:03:00.0,x=1", "net_ring0", "0000:03:00.0,representor=[65535],x=1", "0000:03:00.0,representor=vf2", "0000:04:00.0,representor=vf1"})
	want := []string{"0000:03:00.0,representor=[65535,2],x=1", "0000:04:00.0,representor=vf1"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("allow list %q, want %q", got, want)
	}
	c := DefaultConfig(RoleFwd)
	c.Ports = []string{"0000:03:00.0,x=1", "0000:03:00.0,representor=[65535],x=2"}
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "PCI function 0000:03:00.0: two of its ports give x=1 and x=2") {
		t.Errorf("disagreeing options: %v", err)
	}
	c.Ports[1] = "0000:03:00.0,representor=[65535],x=1"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	args := strings.Join(c.EALArgs(Memory{}), " ") + " "
	if !strings.Contains(args, " -a 0000:03:00.0,representor=[65535],x=1 ") || strings.Count(args, " -a ") != 1 || strings.Contains(args, "--no-pci") {
		t.Errorf("EAL args: %s", args)
	}
}

// Ports named by netdev come after the --port/--vdev ones, PCI functions
// as ports, vdevs (a lab's af_packet) as --vdev; the result names them
// by role.
func TestAddPortAndLabels(t *testing.T) {
	c := DefaultConfig(RoleFwd)
	c.VDevs = []string{"net_ring0"}
	c.AddPort("net_af_packet_p0,iface=p0,framecnt=8192", PortOrigin{Netdev: "p0", Role: "uplink", Label: "uplink p0", Substitution: "p0: mlx5 devargs 0000:03:00.0 substituted by ..."})
	if !reflect.DeepEqual(c.Ports, []string{"net_ring0", "net_af_packet_p0"}) || !reflect.DeepEqual(c.VDevs, []string{"net_ring0", "net_af_packet_p0,iface=p0,framecnt=8192"}) {
		t.Fatalf("vdev port: ports %q vdevs %q", c.Ports, c.VDevs)
	}
	h := DefaultConfig(RoleGen)
	h.AddPort("0000:03:00.0,representor=[65535]", PortOrigin{Netdev: "pf0hpf", Role: "host-pf-rep", Label: "host-PF representor pf0hpf"})
	if !reflect.DeepEqual(h.Ports, []string{"0000:03:00.0,representor=[65535]"}) || len(h.VDevs) != 0 || h.PortOrigins[0].Port != h.Ports[0] {
		t.Fatalf("pci port: %+v", h)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	r := &Result{Role: RoleFwd, Ports: []PortStats{{Name: "net_ring0", Driver: "net_ring"}, {Name: "net_af_packet_p0", Driver: "net_af_packet"}}}
	LabelPorts(&c, r)
	if r.Ports[0].Origin != nil || r.Ports[1].Origin == nil || r.Ports[1].DisplayName() != "uplink p0" {
		t.Fatalf("labels: %+v", r.Ports)
	}
	var b strings.Builder
	r.PrintSummary(&b)
	out := b.String()
	for _, want := range []string{"\n  uplink p0  net_af_packet", "port uplink p0: netdev p0 (uplink), devargs net_af_packet_p0,iface=p0,framecnt=8192\n  substituted: p0: mlx5 devargs 0000:03:00.0 substituted by ..."} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

// A representor list with a comma inside its brackets survives bench's
// flags whole: --port, a profile's merge, the -a allow-list.
func TestRepresentorListSurvivesBenchFlags(t *testing.T) {
	const d = "0000:03:00.0,representor=[0,65535]"
	var c Config
	c.AddPort(d, PortOrigin{})
	if !reflect.DeepEqual(c.Ports, []string{d}) || len(c.VDevs) != 0 {
		t.Fatalf("AddPort: ports %q vdevs %q", c.Ports, c.VDevs)
	}
	if got := pciAllowList([]string{d, "0000:03:00.0,representor=[1]"}); !reflect.DeepEqual(got, []string{"0000:03:00.0,representor=[0,65535,1]"}) {
		t.Errorf("allow-list: %q", got)
	}
	if got := devargs.Merge(d, []string{"representor=[2]", "mprq_en=1"}); got != d+",mprq_en=1" {
		t.Errorf("profile merge: %q", got)
	}
}
