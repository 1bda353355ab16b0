package pci

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	ok := map[string]Addr{
		"0000:03:00.0":  {0, 3, 0, 0},
		"03:00.1":       {0, 3, 0, 1},
		"0000:AF:1f.7":  {0, 0xaf, 0x1f, 7},
		"0001:b3:00.0":  {1, 0xb3, 0, 0},
		"10000:e1:00.0": {0x10000, 0xe1, 0, 0},
	}
	for in, want := range ok {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "03:00", "3:00.0", "0000:03:0.0", "0000:03:20.0", "0000:03:00.8",
		"000:03:00.0", "0000:03:00.0,representor=[0]", "0000:03:00.00", "x000:03:00.0", "0:0:0:00.0",
		"+000:03:00.0", "0000:03:00.", " 03:00.0", "net_null0"} {
		if a, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) = %+v; want an error", bad, a)
		} else if !strings.Contains(err.Error(), "0000:03:00.0") || !strings.Contains(err.Error(), bad) {
			t.Errorf("Parse(%q): error %q should quote the input and show the form", bad, err)
		}
	}
}

func TestString(t *testing.T) {
	for in, want := range map[string]string{"03:00.0": "0000:03:00.0", "0000:AF:1F.7": "0000:af:1f.7", "10000:e1:00.0": "10000:e1:00.0"} {
		if got, ok := Canonical(in); !ok || got != want {
			t.Errorf("Canonical(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	if got, ok := Canonical("net_null0"); ok || got != "" {
		t.Errorf("Canonical(net_null0) = %q, %v; want not a PCI address", got, ok)
	}
}

// FuzzParse: whatever parses prints a canonical form that parses back to
// the same address and prints the same again.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"0000:03:00.0", "03:00.1", "0000:AF:1f.7", "10000:e1:00.0", "0000:03:20.0", "::.", "0000:03:00.0,x=1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := Parse(s)
		if err != nil {
			return
		}
		if a.Dev > 0x1f || a.Fn > 7 {
			t.Fatalf("Parse(%q) = %+v: device or function out of range", s, a)
		}
		b, err := Parse(a.String())
		if err != nil || b != a {
			t.Fatalf("Parse(%q) = %+v prints %q which parses to %+v, %v", s, a, a.String(), b, err)
		}
		if !strings.EqualFold(strings.TrimPrefix(a.String(), "0000:"), strings.TrimPrefix(strings.ToLower(s), "0000:")) && len(s) <= 12 {
			t.Fatalf("Parse(%q) prints %q: not the same address", s, a.String())
		}
	})
}
