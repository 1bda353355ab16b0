package rshim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestSettingBytes(t *testing.T) {
	for _, tc := range []struct {
		s    Setting
		want string
	}{
		{Setting{KeyDisplayLevel, 2}, "DISPLAY_LEVEL 2\n"},
		{Setting{KeyDisplayLevel, 0}, "DISPLAY_LEVEL 0\n"},
		{Setting{KeyClearOnRead, 1}, "CLEAR_ON_READ 1\n"},
		{Setting{KeyBootTimeout, 600}, "BOOT_TIMEOUT 600\n"},
		{Setting{KeySWReset, 1}, "SW_RESET 1\n"},
		{Setting{KeyForceCmd, 1}, "FORCE_CMD 1\n"},
	} {
		b, err := tc.s.Bytes()
		if err != nil || string(b) != tc.want {
			t.Errorf("%+v: %q %v, want %q", tc.s, b, err, tc.want)
		}
	}
	for _, tc := range []struct {
		s    Setting
		want string
	}{
		{Setting{KeyDisplayLevel, 3}, "want 0 (basic), 1 (advanced) or 2 (log)"},
		{Setting{KeyClearOnRead, -1}, "want 0 or 1"},
		{Setting{KeyBootTimeout, 0}, "over 0"},
		{Setting{KeySWReset, 0}, "writing 0 does nothing"},
		{Setting{"BOOT_MODE", 0}, "rig writes only"},
		{Setting{"DISPLAY_LEVEL 2\nSW_RESET", 1}, "rig writes only"},
		{Setting{"", 1}, "rig writes only"},
	} {
		if _, err := tc.s.Bytes(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error saying %q", tc.s, err, tc.want)
		}
	}
}

// Under a fixture root the write lands in the tree's misc file, the
// bytes and nothing else; a refused setting writes nothing.
func TestWriteMiscFixture(t *testing.T) {
	h := bf2Host(t, map[string]string{"dev/rshim0/misc": sample(t, "misc-bf2-level2-boot.txt")})
	if err := WriteMisc(h, 0, Setting{KeyDisplayLevel, 2}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(h.Root, "dev/rshim0/misc"))
	if err != nil || string(b) != "DISPLAY_LEVEL 2\n" {
		t.Errorf("misc holds %q %v", b, err)
	}
	if err := WriteMisc(h, 0, Setting{"BOOT_MODE", 0}); err == nil {
		t.Error("BOOT_MODE written")
	}
	if b, _ := os.ReadFile(filepath.Join(h.Root, "dev/rshim0/misc")); string(b) != "DISPLAY_LEVEL 2\n" {
		t.Errorf("a refused setting changed misc to %q", b)
	}
	if err := WriteMisc(h, 3, Setting{KeySWReset, 1}); err == nil || !strings.Contains(err.Error(), "SW_RESET 1") {
		t.Errorf("missing device: %v", err)
	}
}

func TestWriteFix(t *testing.T) {
	for _, tc := range []struct {
		s    Setting
		err  error
		want string
	}{
		{Setting{KeyForceCmd, 1}, unix.EINVAL, "only in drop mode"},
		{Setting{KeyBootTimeout, 9}, unix.EINVAL, "update the rshim package"},
		{Setting{KeySWReset, 1}, unix.EACCES, "as root"},
		{Setting{KeySWReset, 1}, unix.ENODEV, "read /dev/rshim* again"},
	} {
		if got := writeFix(tc.s, tc.err); !strings.Contains(got, tc.want) {
			t.Errorf("%+v %v: %q, want %q", tc.s, tc.err, got, tc.want)
		}
	}
}
