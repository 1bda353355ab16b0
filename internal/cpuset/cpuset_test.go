package cpuset

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"rig/internal/host"
)

func TestParseMaskAndList(t *testing.T) {
	for mask, want := range map[string][]int{"0x6": {1, 2}, "1": {0}, "0XF0": {4, 5, 6, 7}, "0x100000001": {0, 32}} {
		got, err := ParseMask(mask)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ParseMask(%q) = %v, %v; want %v", mask, got, err, want)
		}
		if m := Mask(want); !strings.EqualFold(strings.TrimLeft(strings.TrimPrefix(m, "0x"), "0"), strings.TrimLeft(strings.TrimPrefix(strings.TrimPrefix(mask, "0x"), "0X"), "0")) {
			t.Errorf("Mask(%v) = %s, want %s", want, m, mask)
		}
	}
	for _, bad := range []string{"", "0x", "0xg", strings.Repeat("f", MaxMaskDigits+1)} {
		if _, err := ParseMask(bad); err == nil {
			t.Errorf("ParseMask(%q): want an error", bad)
		}
	}
	got, err := ParseList("0-3,8,10-11\n")
	if want := []int{0, 1, 2, 3, 8, 10, 11}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ParseList = %v, %v", got, err)
	}
	if s := FormatList(got); s != "0-3,8,10-11" {
		t.Errorf("FormatList = %q", s)
	}
	for _, bad := range []string{"a", "3-1", "1,,2"} {
		if _, err := ParseList(bad); err == nil {
			t.Errorf("ParseList(%q): want an error", bad)
		}
	}
}

func TestCheckMaskOnline(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, OnlineFile)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("0-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := host.New(root)
	if why, err := CheckMaskOnline(h, "pmd-cpu-mask", "0x3"); why != "" || err != nil {
		t.Errorf("0x3 on 0-1: %q %v", why, err)
	}
	why, err := CheckMaskOnline(h, "pmd-cpu-mask", "0x1c")
	if err != nil || why != "pmd-cpu-mask 0x1c selects CPU(s) 2-4, which this host does not have online (online CPUs: 0-1, from /sys/devices/system/cpu/online)" {
		t.Errorf("0x1c on 0-1: %q %v", why, err)
	}
	if _, err := CheckMaskOnline(host.New(t.TempDir()), "pmd-cpu-mask", "0x1"); err == nil {
		t.Error("no online file: want an error")
	}
}
