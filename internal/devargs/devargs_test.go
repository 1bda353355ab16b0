package devargs

import (
	"reflect"
	"strings"
	"testing"
)

func TestSplitKeepsBracketedLists(t *testing.T) {
	for s, want := range map[string][]string{
		"0000:03:00.0,representor=[0,65535]":                {"0000:03:00.0", "representor=[0,65535]"},
		"0000:03:00.0,representor=[0-1,65535],dv_flow_en=1": {"0000:03:00.0", "representor=[0-1,65535]", "dv_flow_en=1"},
		"net_null0":        {"net_null0"},
		"net_ring0,a=1,,b": {"net_ring0", "a=1", "", "b"},
		"":                 {""},
	} {
		if got := Split(s); !reflect.DeepEqual(got, want) {
			t.Errorf("Split(%q) = %q, want %q", s, got, want)
		}
	}
}

func TestParseGetStringMerge(t *testing.T) {
	const s = "0000:03:00.0,representor=[0,65535],dv_xmeta_en=1"
	d, err := Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	if d.Device != "0000:03:00.0" || len(d.Opts) != 2 {
		t.Fatalf("Parse(%q) = %+v", s, d)
	}
	if v, ok := d.Get("representor"); !ok || v != "[0,65535]" {
		t.Errorf("Get(representor) = %q, %v; want [0,65535]", v, ok)
	}
	if _, ok := d.Get("65535]"); ok {
		t.Error("Get found a key cut out of a bracketed list")
	}
	if d.String() != s {
		t.Errorf("String() = %q, want %q", d.String(), s)
	}
	if bdf, ok := PCI(s); !ok || bdf != "0000:03:00.0" {
		t.Errorf("PCI = %q, %v", bdf, ok)
	}
	if _, ok := PCI("net_null0,size=64"); ok {
		t.Error("PCI(net_null0) says PCI")
	}
	if got := Merge(s, []string{"representor=[1]", "txq_inline_max=128", "txq_inline_max=0"}); got != s+",txq_inline_max=128" {
		t.Errorf("Merge = %q", got)
	}
	if v, ok := Lookup(s, "representor"); !ok || v != "[0,65535]" {
		t.Errorf("Lookup = %q, %v", v, ok)
	}
}

func TestCheck(t *testing.T) {
	for _, g := range []string{"0000:03:00.0", "03:00.0,representor=[0-1,65535]", "net_null0", "net_af_packet0,iface=p0,qpairs=2", "0000:03:00.0,representor=pf0vf[0-3]"} {
		if why := Check(g); why != "" {
			t.Errorf("Check(%q) = %q, want ok", g, why)
		}
	}
	for b, want := range map[string]string{
		"":                            "empty",
		"net null0":                   "whitespace",
		"0000:03:00.0,representor=[0": "unbalanced '['",
		"0000:03:00.0,representor=0]": "unbalanced ']'",
		",a=1":                        "no device name",
		"net/null0":                   "neither a PCI address",
		"net_null0,,a=1":              "empty argument",
		"net_null0,a":                 "not key=value",
		"net_null0,=1":                "invalid key",
	} {
		if why := Check(b); !strings.Contains(why, want) {
			t.Errorf("Check(%q) = %q, want it to say %q", b, why, want)
		}
	}
}

// FuzzRoundTrip: whatever Parse accepts, String gives back to the byte,
// and parsing that again is the same value; Split never loses a byte.
func FuzzRoundTrip(f *testing.F) {
	for _, s := range []string{"0000:03:00.0,representor=[0,65535]", "net_null0", "net_memif0,role=server,socket=/run/m.sock", "a,b=[[1,2],[3]],c=", "x,,", "[,]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got := strings.Join(Split(s), ","); got != s {
			t.Fatalf("Split(%q) joined is %q", s, got)
		}
		d, err := Parse(s)
		if err != nil {
			return
		}
		if d.String() != s {
			t.Fatalf("Parse(%q).String() = %q", s, d.String())
		}
		d2, err := Parse(d.String())
		if err != nil || !reflect.DeepEqual(d, d2) {
			t.Fatalf("Parse(String()) of %q = %+v, %v; want %+v", s, d2, err, d)
		}
		for _, o := range d.Opts {
			if strings.Count(o.Value, "[") != strings.Count(o.Value, "]") {
				t.Fatalf("option %q of %q cut inside brackets", o.Key+"="+o.Value, s)
			}
		}
	})
}

// The forms ovs.CheckDevargs was tested with before it moved here.
func TestCheckKnownForms(t *testing.T) {
	good := []string{"0000:03:00.0", "03:00.0", "0000:03:00.0,representor=[65535]", "0000:08:00.0,representor=vf3",
		"0000:03:00.0,representor=[0-1,65535],dv_xmeta_en=1", "net_null0", "net_af_packet0,iface=veth0,qpairs=1",
		"net_memif0,role=server,socket=/tmp/x/m.sock", "0000:03:00.0,representor=sf[0-1023]"}
	for _, g := range good {
		if why := Check(g); why != "" {
			t.Errorf("%q: %s", g, why)
		}
	}
	bad := []string{"", "net_null1,foo=bar,,=", ",x=1", "net_null0,", "net_null0,novalue", "net null0", "0000:03:00.0,representor=[1",
		"0000:03:00.0,representor=1]", "net_null0,=1", "dev/x"}
	for _, b := range bad {
		if Check(b) == "" {
			t.Errorf("%q: want a syntax error", b)
		}
	}
	if bdf, ok := PCI("0000:03:00.0,representor=[65535]"); !ok || bdf != "0000:03:00.0" {
		t.Errorf("PCIAddress: %s %v", bdf, ok)
	}
	if _, ok := PCI("net_null0"); ok {
		t.Error("net_null0 is not PCI")
	}
}

// bench.SplitDevargs and bench.MergeDevargs were tested so before they moved here.
func TestMergeAndSplit(t *testing.T) {
	if got := Split("0000:03:00.0,representor=[0,65535],a=1"); !reflect.DeepEqual(got, []string{"0000:03:00.0", "representor=[0,65535]", "a=1"}) {
		t.Errorf("split: %q", got)
	}
	if got := Merge("0000:03:00.0,representor=[0,65535],a=1", []string{"a=2", "b=3", "b=4"}); got != "0000:03:00.0,representor=[0,65535],a=1,b=3" {
		t.Errorf("merge: %q", got)
	}
}
