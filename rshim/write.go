package rshim

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"rig/internal/host"
)

// Setting is one "KEY value" write to /dev/rshim<N>/misc (hardware-formats.md
// §19.3; src/rshim_fuse.c rshim_fuse_misc_write). rshim takes one key per
// write, at offset 0, and answers EINVAL to an unknown key or a value it
// cannot parse.
//
// Only the keys rig writes are offered, each with the values it may take:
//   - DISPLAY_LEVEL 0..2: 2 shows the log (shared by every reader until
//     rshim restarts);
//   - CLEAR_ON_READ 0/1: what bfb-install sets while it waits, and unsets;
//   - BOOT_TIMEOUT n > 0: seconds a boot-stream write may stall;
//   - SW_RESET 1: reset the Arm (Arm OS changes, §20.3); console and
//     tmfifo drop;
//   - FORCE_CMD 1: ask the owning backend to release the chip; only in
//     drop mode (EINVAL otherwise), and only when the playbook says force.
//
// BOOT_MODE, DROP_MODE, BOOT_RESET_SKIP, PEER_MAC, PXE_ID, VLAN_ID,
// OPN_STR, DEBUG_CODE, USB_TIMEOUT and DEV_NAME change boot records,
// registers or ownership that rig has no step for, so they cannot be
// built here.
type Setting struct {
	Key   string
	Value int
}

// The keys of Setting.
const (
	KeyDisplayLevel = "DISPLAY_LEVEL"
	KeyClearOnRead  = "CLEAR_ON_READ"
	KeyBootTimeout  = "BOOT_TIMEOUT"
	KeySWReset      = "SW_RESET"
	KeyForceCmd     = "FORCE_CMD"
)

// Validate says whether rig may write s, and why not.
func (s Setting) Validate() error {
	ok := false
	want := ""
	switch s.Key {
	case KeyDisplayLevel:
		ok, want = s.Value >= 0 && s.Value <= 2, "0 (basic), 1 (advanced) or 2 (log)"
	case KeyClearOnRead:
		ok, want = s.Value == 0 || s.Value == 1, "0 or 1"
	case KeyBootTimeout:
		ok, want = s.Value > 0, "seconds, over 0"
	case KeySWReset, KeyForceCmd:
		ok, want = s.Value == 1, "1 (writing 0 does nothing)"
	default:
		return fmt.Errorf("rshim misc key %q: rig writes only DISPLAY_LEVEL, CLEAR_ON_READ, BOOT_TIMEOUT, SW_RESET and FORCE_CMD (hardware-formats.md §19.3)", s.Key)
	}
	if !ok {
		return fmt.Errorf("rshim misc %s %d: want %s", s.Key, s.Value, want)
	}
	return nil
}

// Bytes is what is written: "KEY value\n", as `echo "KEY value" > misc`
// writes it (rshim reads the key with sscanf("%s") and the value after
// it; no leading space, since the value is found at strlen(key)).
func (s Setting) Bytes() ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return []byte(s.Key + " " + strconv.Itoa(s.Value) + "\n"), nil
}

// WriteMisc writes s to /dev/rshim<n>/misc under the host root with one
// write() at offset 0, never through a shell. On the live system misc
// must be the character device rshim made; under a fixture root it is a
// regular file in the tree and is replaced by the bytes.
func WriteMisc(h *host.Host, n int, s Setting) error {
	b, err := s.Bytes()
	if err != nil {
		return err
	}
	p := MiscPath(n)
	if !h.IsRealRoot() {
		if err := h.WriteFile(p, b); err != nil {
			return fmt.Errorf("rshim: write %q to %s: %w", string(b[:len(b)-1]), h.Path(p), err)
		}
		return nil
	}
	err = writeCharDevice(p, b)
	if err == nil {
		return nil
	}
	return fmt.Errorf("rshim: write %q to %s: %w%s", string(b[:len(b)-1]), p, err, writeFix(s, err))
}

// writeCharDevice writes b to the character device p in one write.
func writeCharDevice(p string, b []byte) error {
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR {
		return fmt.Errorf("a %s, not the character device rshim makes", host.StatKind(st.Mode))
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		return err
	}
	n, err := unix.Write(fd, b)
	if err != nil {
		return err
	}
	if n != len(b) {
		return fmt.Errorf("short write (%d of %d bytes)", n, len(b))
	}
	return f.Close()
}

// writeFix is the fix for a refused write (src/rshim_fuse.c).
func writeFix(s Setting, err error) string {
	switch {
	case s.Key == KeyForceCmd && errors.Is(err, unix.EINVAL):
		return "; rshim accepts FORCE_CMD only in drop mode (DROP_MODE 1, rshim started with --force or FORCE_MODE 1 in /etc/rshim.conf)"
	case errors.Is(err, unix.EINVAL):
		return "; this rshim does not know the key or value (rshim-user-space older than the key): update the rshim package"
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return "; run rig as root"
	case errors.Is(err, unix.ENODEV), errors.Is(err, unix.ENOENT):
		return "; the device went away (rshim restarted or the Arm reset): read /dev/rshim* again"
	}
	return ""
}
