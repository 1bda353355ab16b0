package rshim

import (
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"rig/internal/host"
	"rig/internal/pci"
	"rig/smartnic"
)

// rshimIDs are the device IDs rshim-user-space probes (hardware-formats.md
// §19.1: src/rshim_pcie.c, src/rshim_pcie_lf.c), with the BlueField
// generation each belongs to.
var rshimIDs = []struct {
	id       uint16
	gen      int
	livefish bool
}{
	{0xc2d2, 1, false}, {0xc2d3, 2, false}, {0xc2d4, 3, false}, {0xc2d5, 3, false},
	{0x0211, 1, true}, {0x0214, 2, true}, {0x021c, 3, true},
}

// classDMA is PCI class 0x0801 "DMA controller", the RShim function's
// (sysfs `class` prints 0x080100: class, subclass, prog-if).
const classDMA = 0x0801

// Function is a card's RShim PCI function on the host (§19.1). Its
// function number is not fixed (.2 in NVIDIA's docs, .1 on a BlueField-3
// sample), so it is found by vendor 15b3 and device ID, or class 0801.
type Function struct {
	BDF        string `json:"bdf"`        // 0000:e1:00.2
	DeviceID   string `json:"deviceId"`   // c2d3
	Generation int    `json:"generation"` // BlueField-<n>; 0 when only the class matched
	Livefish   bool   `json:"livefish"`   // the firmware-recovery function (DEV_NAME pcie-lf-…)
	// Driver is the kernel driver bound ("vfio-pci", "uio_pci_generic"),
	// "" when none: rshim binds vfio-pci, falls back to uio_pci_generic,
	// then to direct sysfs mmap with driver_override "rshim" (§19.1);
	// rig neither flags nor rebinds it.
	Driver         string `json:"driver,omitempty"`
	DriverOverride string `json:"driverOverride,omitempty"`
	// PFs are the other Mellanox functions of the same domain:bus:dev that
	// are neither RShim functions nor VFs (no physfn link): the card's PFs
	// (bfb-install check_nic_mode counts the non-RShim functions the same
	// way), in order.
	PFs []string `json:"pfs"`
}

// FindFunctions lists the RShim functions under the host root's
// /sys/bus/pci/devices, in BDF order; none is not an error (a ConnectX
// host, or a zero-trust card whose host RShim was disabled, §1.5).
func FindFunctions(h *host.Host) ([]Function, error) {
	ents, err := h.ReadDir("/sys/bus/pci/devices")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("rshim: %s: %w (is sysfs mounted, or is --root a host root?)", h.Path("/sys/bus/pci/devices"), err)
		}
		return nil, fmt.Errorf("rshim: %w", err)
	}
	var fns []Function
	nonRShim := map[string][]string{} // domain:bus:dev -> other Mellanox functions
	for _, e := range ents {
		f, mellanox, err := readFunction(h, e.Name())
		if err != nil {
			return nil, err
		}
		switch {
		case f != nil:
			fns = append(fns, *f)
		case mellanox && !h.Exists("/sys/bus/pci/devices/"+e.Name()+"/physfn"):
			slot := e.Name()[:strings.LastIndex(e.Name(), ".")]
			nonRShim[slot] = append(nonRShim[slot], e.Name())
		}
	}
	for i := range fns {
		slot := fns[i].BDF[:strings.LastIndex(fns[i].BDF, ".")]
		fns[i].PFs = append([]string{}, nonRShim[slot]...)
		sort.Strings(fns[i].PFs)
	}
	sort.Slice(fns, func(i, j int) bool { return fns[i].BDF < fns[j].BDF })
	return fns, nil
}

// readFunction reads one PCI function: an RShim function, or nil with
// whether it is another Mellanox function.
func readFunction(h *host.Host, bdf string) (*Function, bool, error) {
	dir := "/sys/bus/pci/devices/" + bdf
	if _, err := pci.Parse(bdf); err != nil {
		return nil, false, nil // not a function entry
	}
	v, err := h.ReadString(dir + "/vendor")
	if err != nil {
		return nil, false, nil // vanished while scanning (hot unplug)
	}
	if id, err := smartnic.ParseHexID(v); err != nil || id != smartnic.VendorMellanox {
		return nil, false, nil
	}
	ds, err := h.ReadString(dir + "/device")
	if err != nil {
		return nil, true, fmt.Errorf("rshim: %s: read the device id: %w", h.Path(dir+"/device"), err)
	}
	id, err := smartnic.ParseHexID(ds)
	if err != nil {
		return nil, true, fmt.Errorf("rshim: %s: %w", h.Path(dir+"/device"), err)
	}
	f := &Function{BDF: bdf, DeviceID: fmt.Sprintf("%04x", id)}
	known := false
	for _, r := range rshimIDs {
		if r.id == id {
			f.Generation, f.Livefish, known = r.gen, r.livefish, true
		}
	}
	if !known && !isDMAClass(h, dir) {
		return nil, true, nil
	}
	if l, err := h.Readlink(dir + "/driver"); err == nil {
		f.Driver = l[strings.LastIndex(l, "/")+1:]
	}
	if o, err := h.ReadString(dir + "/driver_override"); err == nil && o != "(null)" {
		f.DriverOverride = o
	}
	return f, true, nil
}

// isDMAClass reports a `class` of 0x0801xx.
func isDMAClass(h *host.Host, dir string) bool {
	s, err := h.ReadString(dir + "/class")
	if err != nil {
		return false
	}
	c, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 32)
	return err == nil && c>>8 == classDMA
}

// Device is one /dev/rshim<N> with its misc read.
type Device struct {
	Index   int     `json:"index"` // N
	Path    string  `json:"path"`  // /dev/rshim0
	Misc    *Misc   `json:"misc"`
	DevName DevName `json:"devName"`
}

var rshimDirRe = regexp.MustCompile(`^rshim([0-9]|[1-5][0-9]|6[0-3])$`)

// DeviceIndexes lists the N of every /dev/rshim<N> directory under the
// root, in order (rshim makes at most 64, src/rshim.c rshim_find_index).
// None is not an error: the rshim service is not running, or another
// backend (a BMC) owns the chip and rshim made no device (§19.1).
func DeviceIndexes(h *host.Host) ([]int, error) {
	ents, err := h.ReadDir("/dev")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("rshim: list %s: %w", h.Path("/dev"), err)
	}
	var out []int
	for _, e := range ents {
		if m := rshimDirRe.FindStringSubmatch(e.Name()); m != nil && e.IsDir() {
			n, _ := strconv.Atoi(m[1])
			out = append(out, n)
		}
	}
	sort.Ints(out)
	return out, nil
}
