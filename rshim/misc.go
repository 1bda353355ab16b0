// Package rshim reads and writes a BlueField's RShim from the x86 host:
// which PCI function is a card's RShim and which /dev/rshim<N> serves it
// (find.go), the /dev/rshim<N>/misc file rshim-user-space renders (this
// file) and the keys rig writes to it (write.go), and the BFB installer's
// lines in the rshim log (bfblog.go). Formats: hardware-formats.md §19
// (Mellanox/rshim-user-space at b8a331b, rshim 2.8.2).
package rshim

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"rig/internal/pci"
)

// MiscBufferSize is the buffer rshim renders misc into (src/rshim_fuse.c
// struct rshim_misc, char buffer[4069]): the text is cut there, and a read
// must ask for all of it at once (ReadMisc).
const MiscBufferSize = 4069

// Misc is one read of /dev/rshim<N>/misc (hardware-formats.md §19.2;
// src/rshim_fuse.c rshim_fuse_misc_read). Lines are printf("%-16s…"): the
// key, then the value, then an optional legend in parentheses. Keys come
// and go with the chip and the rshim version (§19.8 trap 8), so the text is
// parsed by key, never by line number; Fields keeps every key's value as
// printed (legend cut), the typed fields are those rig reads.
type Misc struct {
	DisplayLevel int    `json:"displayLevel"`
	BFMode       string `json:"bfMode,omitempty"` // BlueField-3 only: "DPU mode", "NIC mode", "Unknown", "Reserved"
	BootMode     int    `json:"bootMode"`         // 0 rshim (external), 1 eMMC, 2 eMMC boot-swap
	BootTimeout  int    `json:"bootTimeout"`      // seconds a boot-stream write may make no progress (§19.3)
	DropMode     bool   `json:"dropMode"`         // another backend owns the chip (force mode) or a hand-off
	DevName      string `json:"devName"`          // pcie-0000:e1:00.2, pcie-lf-…, usb-1.1 (ParseDevName)
	Generation   int    `json:"generation"`       // DEV_INFO BlueField-<n>
	Revision     int    `json:"revision"`         // DEV_INFO (Rev <n>): the PCI revision byte
	OPN          string `json:"opn,omitempty"`    // OPN_STR; "" when N/A or absent (BlueField-1)
	// UpTime is BlueField-3's UP_TIME in seconds, -1 when not printed.
	UpTime        int64 `json:"upTime"`
	SecureNICMode bool  `json:"secureNicMode,omitempty"` // BlueField-3 SECURE_NIC_MODE 1: most rshim functions disabled (§19.8 trap 4)
	ClearOnRead   bool  `json:"clearOnRead,omitempty"`   // DISPLAY_LEVEL 1 only
	// Fields is every "KEY value" line before the log, the legend cut
	// ("BOOT_MODE" -> "1"), for keys the typed fields do not hold.
	Fields map[string]string `json:"fields"`
	// HasLog: the text carries the log section (DISPLAY_LEVEL 2). rshim
	// prints none when it cannot take the log semaphore within 3 s
	// (src/rshim_log.c rshim_log_show), so level 2 without a log is
	// possible; Log is then empty.
	HasLog bool      `json:"hasLog"`
	Log    []LogLine `json:"log,omitempty"`
}

// requiredKeys are printed by every rshim build since the misc code moved
// to src/rshim_fuse.c (b42d9a0, 2020-03). §19.2 marks DROP_MODE and
// DEV_INFO "always" too, but they came later (3d2ff5b 2020-05, 2a9ea38
// 2020-07) and the man page's level-1 sample has neither: without them
// DropMode reads false and Generation 0.
var requiredKeys = []string{"DISPLAY_LEVEL", "BOOT_MODE", "BOOT_TIMEOUT", "DEV_NAME"}

var (
	devInfoRe = regexp.MustCompile(`^BlueField-(\d+)\(Rev (\d+)\)$`)
	keyRe     = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
)

// ParseMisc parses the text of a misc read; name is the file it came from
// (/dev/rshim0/misc), for errors. The log section (DISPLAY_LEVEL 2) starts
// at a line of dashes (src/rshim_log.c prints 39 dashes, "Log Messages",
// 39 dashes; NVIDIA's docs show the title tab-indented, so only the dashes
// are matched).
func ParseMisc(name, text string) (*Misc, error) {
	m := &Misc{UpTime: -1, Fields: map[string]string{}}
	lines := strings.Split(text, "\n")
	i := 0
	for ; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if strings.HasPrefix(line, "-----") {
			m.HasLog = true
			m.Log = ParseLog(strings.Join(lines[i+1:], "\n"))
			break
		}
		if line == "" {
			continue
		}
		key, val, _ := strings.Cut(line, " ")
		if !keyRe.MatchString(key) {
			return m, fmt.Errorf("%s line %d: %q is not a KEY value line of rshim's misc (src/rshim_fuse.c); is this an rshim misc file? read /dev/rshim<N>/misc itself", name, i+1, line)
		}
		if _, dup := m.Fields[key]; dup {
			return m, fmt.Errorf("%s line %d: %s printed twice; rshim prints each key once: read the file again (one read of %d bytes)", name, i+1, key, MiscBufferSize)
		}
		m.Fields[key] = cutLegend(strings.TrimSpace(val))
	}
	for _, k := range requiredKeys {
		if _, ok := m.Fields[k]; !ok {
			return m, fmt.Errorf("%s: no %s line; every rshim build prints it (hardware-formats.md §19.2): is the read cut short or is this not rshim's misc? read the whole file in one read", name, k)
		}
	}
	if err := m.typed(); err != nil {
		return m, fmt.Errorf("%s: %w", name, err)
	}
	return m, nil
}

// cutLegend drops the "(…)" legend: "1 (0:rshim, 1:emmc, …)" -> "1",
// "00:1a:ca:ff:ff:01 (rw)" -> "00:1a:ca:ff:ff:01". DEV_INFO's
// "BlueField-2(Rev 1)" and UP_TIME's "12(s)" have no space before the
// parenthesis and keep it.
func cutLegend(v string) string {
	if i := strings.Index(v, " ("); i >= 0 && strings.HasSuffix(v, ")") {
		return strings.TrimSpace(v[:i])
	}
	return v
}

// typed fills the typed fields from Fields.
func (m *Misc) typed() error {
	var err error
	ints := []struct {
		key string
		dst *int
	}{{"DISPLAY_LEVEL", &m.DisplayLevel}, {"BOOT_MODE", &m.BootMode}, {"BOOT_TIMEOUT", &m.BootTimeout}}
	for _, f := range ints {
		if *f.dst, err = miscInt(f.key, m.Fields[f.key]); err != nil {
			return err
		}
	}
	flags := []struct {
		key string
		dst *bool
	}{{"DROP_MODE", &m.DropMode}, {"SECURE_NIC_MODE", &m.SecureNICMode}, {"CLEAR_ON_READ", &m.ClearOnRead}}
	for _, f := range flags {
		v, ok := m.Fields[f.key]
		if !ok {
			continue
		}
		n, err := miscInt(f.key, v)
		if err != nil {
			return err
		}
		*f.dst = n != 0
	}
	m.BFMode = m.Fields["BF_MODE"]
	m.DevName = m.Fields["DEV_NAME"]
	if m.DevName == "" {
		return fmt.Errorf("DEV_NAME is empty; rshim names every backend device (pcie-…, usb-…)")
	}
	if info, ok := m.Fields["DEV_INFO"]; ok {
		d := devInfoRe.FindStringSubmatch(info)
		if d == nil {
			return fmt.Errorf("DEV_INFO %q: want BlueField-<n>(Rev <n>) (src/rshim_fuse.c)", info)
		}
		m.Generation, _ = strconv.Atoi(d[1])
		m.Revision, _ = strconv.Atoi(d[2])
	}
	if o := m.Fields["OPN_STR"]; o != "N/A" {
		m.OPN = o
	}
	if v, ok := m.Fields["UP_TIME"]; ok {
		n, err := strconv.ParseInt(strings.TrimSuffix(v, "(s)"), 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("UP_TIME %q: want <seconds>(s) (src/rshim_fuse.c %%lld(s))", v)
		}
		m.UpTime = n
	}
	return nil
}

// miscInt reads a decimal value of key ("%d" / "%lld" in rshim_fuse.c).
func miscInt(key, v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s %q: want a decimal number (src/rshim_fuse.c prints %%d)", key, v)
	}
	return n, nil
}

// Backend names the rshim backend of a DEV_NAME.
const (
	BackendPCIe     = "pcie"    // the RShim PCI function, normal firmware
	BackendPCIeLive = "pcie-lf" // the livefish (firmware recovery) function
	BackendUSB      = "usb"     // the USB RShim (a BMC, or a host over USB)
)

// DevName is a DEV_NAME parsed (hardware-formats.md §19.1):
// "pcie-%04x:%02x:%02x.%x" (domain printed since rshim 2020-05, 25b7ed9;
// the older "pcie-04:00.2" has none and reads as domain 0000),
// "pcie-lf-%04x:%02x:%02x.%d", "usb-<bus>[-<port>…][.<port>]".
type DevName struct {
	Backend string `json:"backend"`
	BDF     string `json:"bdf,omitempty"`     // the RShim function, canonical (0000:e1:00.2); PCIe backends
	USBPath string `json:"usbPath,omitempty"` // "1.1", "2-1.7": USB backend
}

// ParseDevName reads a DEV_NAME value.
func ParseDevName(s string) (DevName, error) {
	switch {
	case strings.HasPrefix(s, "pcie-lf-"):
		return pcieDevName(BackendPCIeLive, s, strings.TrimPrefix(s, "pcie-lf-"))
	case strings.HasPrefix(s, "pcie-"):
		return pcieDevName(BackendPCIe, s, strings.TrimPrefix(s, "pcie-"))
	case strings.HasPrefix(s, "usb-") && len(s) > len("usb-"):
		return DevName{Backend: BackendUSB, USBPath: strings.TrimPrefix(s, "usb-")}, nil
	}
	return DevName{}, fmt.Errorf("DEV_NAME %q: want pcie-<domain:bus:dev.fn>, pcie-lf-<…> or usb-<path> (src/rshim_pcie.c, rshim_pcie_lf.c, rshim_usb.c)", s)
}

func pcieDevName(backend, s, addr string) (DevName, error) {
	bdf, ok := pci.Canonical(addr)
	if !ok {
		return DevName{}, fmt.Errorf("DEV_NAME %q: %q is not a PCI address (want 0000:e1:00.2)", s, addr)
	}
	return DevName{Backend: backend, BDF: bdf}, nil
}

// PFs are the card's physical functions as bfb-install derives them from
// the RShim function (check_pcie_bdf: the same domain:bus:dev with
// function 0 and 1); nil for USB. Whether each exists is the sysfs scan's
// to say (FindFunctions): a single-port SKU has one PF (§20.1).
func (d DevName) PFs() []string {
	if d.BDF == "" {
		return nil
	}
	base := d.BDF[:strings.LastIndex(d.BDF, ".")]
	return []string{base + ".0", base + ".1"}
}
