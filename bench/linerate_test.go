package bench

import (
	"fmt"
	"math"
	"testing"
)

// Published table: shared/reference/hardware-formats.md §9 (RFC 5180 A.1).
var publishedMpps = map[int][]float64{
	64:   {14.881, 37.202, 59.524, 74.405, 148.810, 297.619, 595.238},
	128:  {8.446, 21.115, 33.784, 42.230, 84.459, 168.919, 337.838},
	256:  {4.529, 11.322, 18.116, 22.645, 45.290, 90.580, 181.159},
	512:  {2.350, 5.874, 9.398, 11.748, 23.496, 46.992, 93.985},
	1024: {1.197, 2.993, 4.789, 5.987, 11.973, 23.946, 47.893},
	1280: {0.962, 2.404, 3.846, 4.808, 9.615, 19.231, 38.462},
	1518: {0.813, 2.032, 3.251, 4.064, 8.127, 16.255, 32.510},
}

func TestLineRateTableMatchesPublished(t *testing.T) {
	tab := LineRateTable(LineRateFrames(), LineRateSpeeds())
	for i, f := range LineRateFrames() {
		want := publishedMpps[f]
		for j := range LineRateSpeeds() {
			if got := math.Round(tab[i][j]*1000) / 1000; got != want[j] {
				t.Errorf("%d B at %gG: got %.3f Mpps, published %.3f", f, LineRateSpeeds()[j], got, want[j])
			}
		}
	}
	// RFC 5180: 10 Gb/s at 64 B = 14,880,952 pps; 1518 B = 812,743; 1280 B = 961,538
	for _, c := range []struct {
		frame int
		pps   float64
	}{{64, 14880952}, {1518, 812743}, {1280, 961538}} {
		if got := LineRatePPS(10e9, c.frame); math.Abs(got-c.pps) > 1 {
			t.Errorf("10G %d B: %.1f pps, RFC 5180 says %.0f", c.frame, got, c.pps)
		}
	}
	if got := LineRatePPS(100e9, 64) / 1e6; math.Abs(got-148.81) > 0.001 {
		t.Errorf("100G/64 B = %.4f Mpps, want 148.81", got)
	}
}

func TestParseRate(t *testing.T) {
	cases := []struct {
		in    string
		frame int
		link  float64
		want  float64
		err   bool
	}{
		{"", 64, 0, 0, false},
		{"100kpps", 64, 0, 100e3, false},
		{"1.5Mpps", 64, 0, 1.5e6, false},
		{"2000pps", 64, 0, 2000, false},
		{"10Gbps", 64, 0, 14880952.38, false},
		{"50%", 64, 100e9, 74404761.9, false},
		{"50%", 64, 0, 0, true},
		{"150%", 64, 10e9, 0, true},
		{"fast", 64, 0, 0, true},
		{"-3kpps", 64, 0, 0, true},
	}
	for _, c := range cases {
		got, err := ParseRate(c.in, c.frame, c.link)
		if (err != nil) != c.err {
			t.Errorf("ParseRate(%q): err %v, want error %v", c.in, err, c.err)
			continue
		}
		if math.Abs(got-c.want) > 1 {
			t.Errorf("ParseRate(%q) = %.2f, want %.2f", c.in, got, c.want)
		}
	}
}

func TestParseLinkSpeed(t *testing.T) {
	for in, want := range map[string]float64{"100G": 100e9, "25Gbps": 25e9, "100000": 100e9, "10g": 10e9, "400G": 400e9} {
		got, err := ParseLinkSpeed(in)
		if err != nil || got != want {
			t.Errorf("ParseLinkSpeed(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseLinkSpeed("fast"); err == nil {
		t.Error("ParseLinkSpeed(fast): want an error")
	}
}

func TestParseRanges(t *testing.T) {
	r, err := ParseIPRange("10.0.0.1-10.0.0.16")
	if err != nil || r.First != 0x0a000001 || r.N != 16 {
		t.Errorf("ip range: %+v %v", r, err)
	}
	if _, err := ParseIPRange("10.0.0.9-10.0.0.1"); err == nil {
		t.Error("reversed ip range: want an error")
	}
	p, err := ParsePortRange("1024-1087")
	if err != nil || p.First != 1024 || p.N != 64 {
		t.Errorf("port range: %+v %v", p, err)
	}
	if _, err := ParsePortRange("70000"); err == nil {
		t.Error("port 70000: want an error")
	}
}

func TestEALArgsAndMemory(t *testing.T) {
	c := Config{Role: RoleLoop, VDevs: []string{"net_ring0"}, FilePrefix: "x"}
	c.Defaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	m := ChooseMemory(false, "", 100, false)
	got := fmt.Sprint(c.EALArgs(m))
	want := "[rig -l 0-1 --file-prefix x --log-level 5 --no-pci --vdev net_ring0 --in-memory]"
	if got != want {
		t.Errorf("EAL args\n got %s\nwant %s", got, want)
	}
	if m := ChooseMemory(false, "", 0, true); m.Warning == "" || m.Args[0] != "--no-huge" {
		t.Errorf("no free hugepages: %+v, want --no-huge with a warning", m)
	}
	if m := ChooseMemory(false, "/mnt/h", 10, true); fmt.Sprint(m.Args) != "[--huge-dir /mnt/h --huge-unlink]" {
		t.Errorf("huge dir: %v", m.Args)
	}
	pc := Config{Role: RoleFwd, Ports: []string{"0000:03:00.0", "0000:03:00.1"}, FilePrefix: "y"}
	pc.Defaults()
	if err := pc.Validate(); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(pc.EALArgs(Memory{})); got != "[rig -l 0-1 --file-prefix y --log-level 5 -a 0000:03:00.0 -a 0000:03:00.1]" {
		t.Errorf("PCI EAL args: %s", got)
	}
	if err := (&Config{Role: "bogus"}).Validate(); err == nil {
		t.Error("mode bogus: want an error")
	}
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"100kpps", "1.5Mpps", "10Gbps", "50%", "", "max", "0.0001pps", "1e3kpps"} {
		f.Add(s, 64)
	}
	f.Fuzz(func(t *testing.T, s string, frame int) {
		if frame < 64 || frame > 9000 {
			return
		}
		v, err := ParseRate(s, frame, 100e9)
		if err == nil && (v < 0 || math.IsNaN(v) || v > LineRatePPS(100e9, frame)*1.0000001 && !isPPS(s)) {
			t.Fatalf("ParseRate(%q, %d) = %v", s, frame, v)
		}
	})
}

func isPPS(s string) bool {
	for _, suf := range []string{"pps", "gbps", "mbps", "kbps"} {
		if len(s) >= len(suf) && equalFold(s[len(s)-len(suf):], suf) {
			return true
		}
	}
	return false
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i]|0x20, b[i]|0x20
		if x != y {
			return false
		}
	}
	return true
}
