package rshim

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"rig/internal/host"
)

// MiscPath is /dev/rshim<n>/misc.
func MiscPath(n int) string { return fmt.Sprintf("/dev/rshim%d/misc", n) }

// ReadMisc reads and parses /dev/rshim<n>/misc under the host root.
//
// On the live system misc is a CUSE character device that renders its
// whole text on the first read after open() and answers every later read
// with end of file (src/rshim_fuse.c rshim_fuse_misc_read: rm->ready), so
// it is read with one read() of more than MiscBufferSize bytes: a reader
// that starts small (io.ReadAll's 512) gets the first 512 bytes and
// nothing else. Under a fixture root it is a regular file in the tree.
//
// A read is not free: at DISPLAY_LEVEL 1 it blocks up to 1 s while rshim
// asks the Arm for PEER_MAC, and at level 2 with CLEAR_ON_READ 1 it
// empties the hardware log for every other reader (§19.2, §19.8 trap 6).
func ReadMisc(h *host.Host, n int) (*Misc, error) {
	p := MiscPath(n)
	var b []byte
	var err error
	if h.IsRealRoot() {
		b, err = readCharDevice(p)
	} else {
		b, err = h.ReadFile(p)
	}
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("rshim: %s: %w; is the rshim service running (systemctl status rshim)?", h.Path(p), err)
		}
		return nil, fmt.Errorf("rshim: read %s: %w", h.Path(p), err)
	}
	return ParseMisc(h.Path(p), string(b))
}

// readCharDevice opens p without blocking (a FIFO in its place cannot
// hold the open), refuses anything but a character device, and reads it
// with one read() (see ReadMisc).
func readCharDevice(p string) ([]byte, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: p, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR {
		return nil, fmt.Errorf("%s is a %s, not the character device rshim makes; remove it and restart rshim (systemctl restart rshim)", p, host.StatKind(st.Mode))
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		return nil, &fs.PathError{Op: "fcntl", Path: p, Err: err}
	}
	buf := make([]byte, 2*MiscBufferSize)
	n, err := unix.Read(fd, buf)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: p, Err: err}
	}
	return buf[:n], nil
}

// Card is one RShim function with the /dev/rshim<N> that serves it.
type Card struct {
	Function Function `json:"function"`
	// Device is the /dev/rshim<N> whose DEV_NAME names the function; nil
	// when none does (Why says what that means).
	Device *Device `json:"device,omitempty"`
	// Why: for a card without a device, or one in drop mode, the likely
	// cause and the fix (§19.1, §19.8 traps 2, 4 and 9); "" when the host
	// owns the RShim.
	Why string `json:"why,omitempty"`
}

// Match pairs RShim functions with devices by DEV_NAME (the only link:
// N follows probe order unless /etc/rshim.conf maps it, §19.1). Devices
// of no function on this host (USB backends, a function that left) are
// returned apart.
func Match(fns []Function, devs []Device) (cards []Card, other []Device) {
	used := make([]bool, len(devs))
	for _, f := range fns {
		c := Card{Function: f}
		for i := range devs {
			if !used[i] && devs[i].DevName.BDF == f.BDF {
				used[i] = true
				d := devs[i]
				c.Device = &d
				break
			}
		}
		c.Why = whyCard(c)
		cards = append(cards, c)
	}
	for i, d := range devs {
		if !used[i] {
			other = append(other, d)
		}
	}
	return cards, other
}

// whyCard explains a card the host does not own.
func whyCard(c Card) string {
	switch {
	case c.Device == nil && c.Function.Livefish:
		return fmt.Sprintf("%s is the livefish (firmware recovery) function and no /dev/rshim<N> names it: start rshim (systemctl start rshim), whose pcie_lf backend serves it, then burn the NIC firmware", c.Function.BDF)
	case c.Device == nil:
		return fmt.Sprintf("no /dev/rshim<N> names %s: the rshim service is not running (systemctl enable --now rshim), or another backend owns the chip (the BMC over USB: the journal says \"another backend already attached\"; stop and disable rshim on the BMC, then restart it here)", c.Function.BDF)
	case c.Device.Misc != nil && c.Device.Misc.SecureNICMode:
		return fmt.Sprintf("%s (%s) reports SECURE_NIC_MODE 1: the BlueField-3 is in secure NIC (locked) mode and most rshim functions are disabled on the PCIe backend; use the USB (BMC) or livefish rshim, or leave secure NIC mode", c.Device.Path, c.Function.BDF)
	case c.Device.Misc != nil && c.Device.Misc.DropMode:
		return fmt.Sprintf("%s (%s) is in drop mode: another backend (the BMC) owns the chip; stop and disable rshim on the BMC and restart it here, or, with force, write FORCE_CMD 1 (accepted only in drop mode; the owner may refuse)", c.Device.Path, c.Function.BDF)
	}
	return ""
}

// ReadDevices reads every /dev/rshim<N> under the root. A device whose
// misc cannot be read or parsed is an error naming it.
func ReadDevices(h *host.Host) ([]Device, error) {
	idx, err := DeviceIndexes(h)
	if err != nil {
		return nil, err
	}
	var out []Device
	for _, n := range idx {
		m, err := ReadMisc(h, n)
		if err != nil {
			return nil, err
		}
		dn, err := ParseDevName(m.DevName)
		if err != nil {
			return nil, fmt.Errorf("rshim: %s: %w", h.Path(MiscPath(n)), err)
		}
		out = append(out, Device{Index: n, Path: fmt.Sprintf("/dev/rshim%d", n), Misc: m, DevName: dn})
	}
	return out, nil
}
