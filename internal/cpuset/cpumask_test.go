package cpuset

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseCPUMaskAndList(t *testing.T) {
	for mask, want := range map[string][]int{"0x6": {1, 2}, "1": {0}, "0XF0": {4, 5, 6, 7}, "0x100000001": {0, 32}} {
		got, err := ParseCPUMask(mask)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ParseCPUMask(%q) = %v, %v; want %v", mask, got, err, want)
		}
		if m := MaskFor(want); !strings.EqualFold(strings.TrimLeft(strings.TrimPrefix(m, "0x"), "0"), strings.TrimLeft(strings.TrimPrefix(strings.TrimPrefix(mask, "0x"), "0X"), "0")) {
			t.Errorf("MaskFor(%v) = %s, want %s", want, m, mask)
		}
	}
	for _, bad := range []string{"", "0x", "0xg", strings.Repeat("f", MaxCPUMaskDigits+1)} {
		if _, err := ParseCPUMask(bad); err == nil {
			t.Errorf("ParseCPUMask(%q): want an error", bad)
		}
	}
	got, err := ParseCPUList("0-3,8,10-11\n")
	if want := []int{0, 1, 2, 3, 8, 10, 11}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ParseCPUList = %v, %v", got, err)
	}
	if s := FormatCPUList(got); s != "0-3,8,10-11" {
		t.Errorf("FormatCPUList = %q", s)
	}
	for _, bad := range []string{"a", "3-1", "1,,2"} {
		if _, err := ParseCPUList(bad); err == nil {
			t.Errorf("ParseCPUList(%q): want an error", bad)
		}
	}
}
