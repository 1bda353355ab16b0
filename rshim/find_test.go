package rshim

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"rig/internal/host"
	"rig/internal/testutil/sysfstree"
)

// bf2Host copies the bf2-host fixture (RShim function 0000:e1:00.2, PFs
// .0/.1) into a new root and adds files (path -> content) to it.
func bf2Host(t *testing.T, files map[string]string) *host.Host {
	t.Helper()
	root := t.TempDir()
	sysfstree.Copy(t, "../testdata/hosts/bf2-host", root)
	tr := sysfstree.New(t, root)
	for p, c := range files {
		tr.File(p, c)
	}
	return &host.Host{Root: root}
}

func TestFindFunctionsBF2Host(t *testing.T) {
	fns, err := FindFunctions(&host.Host{Root: "../testdata/hosts/bf2-host"})
	if err != nil {
		t.Fatal(err)
	}
	want := []Function{{BDF: "0000:e1:00.2", DeviceID: "c2d3", Generation: 2, PFs: []string{"0000:e1:00.0", "0000:e1:00.1"}}}
	if !reflect.DeepEqual(fns, want) {
		t.Errorf("got %+v, want %+v", fns, want)
	}
}

// The function number is not fixed (§19.1): a BlueField-3 RShim at .1 of
// a single-PF card, bound to vfio-pci; a function matched by class 0801
// alone (an ID not in rshim's table); a livefish function; other vendors'
// DMA controllers and the Arm side's functions are not RShims.
func TestFindFunctionsShapes(t *testing.T) {
	root := t.TempDir()
	tr := sysfstree.New(t, root)
	tr.PCIFn(sysfstree.Fn{Path: "pci0000:64/0000:64:01.0/0000:65:00.0", Device: "0xa2dc", Rev: "0x01", NUMA: "0"})
	tr.PCIFn(sysfstree.Fn{Path: "pci0000:64/0000:64:01.0/0000:65:00.1", Device: "0xc2d4", Rev: "0x01", NUMA: "0"})
	tr.Put("sys/devices/pci0000:64/0000:64:01.0/0000:65:00.1/class", "0x080100")
	tr.Put("sys/devices/pci0000:64/0000:64:01.0/0000:65:00.1/driver_override", "vfio-pci")
	tr.Link("../../../../bus/pci/drivers/vfio-pci", "sys/devices/pci0000:64/0000:64:01.0/0000:65:00.1/driver")
	tr.PCIFn(sysfstree.Fn{Path: "pci0000:80/0000:80:01.0/0000:81:00.2", Device: "0xc2d9", Rev: "0x00", NUMA: "1"})
	tr.Put("sys/devices/pci0000:80/0000:80:01.0/0000:81:00.2/class", "0x080100")
	tr.Put("sys/devices/pci0000:80/0000:80:01.0/0000:81:00.2/driver_override", "(null)")
	tr.PCIFn(sysfstree.Fn{Path: "pci0000:80/0000:80:02.0/0000:84:00.0", Device: "0x021c", Rev: "0x00", NUMA: "1"})
	// A VF of 65:00.0 at 65:00.3 is not one of the card's PFs.
	tr.PCIFn(sysfstree.Fn{Path: "pci0000:64/0000:64:01.0/0000:65:00.3", Device: "0x101e", Rev: "0x00", NUMA: "0"})
	tr.Link("../0000:65:00.0", "sys/devices/pci0000:64/0000:64:01.0/0000:65:00.3/physfn")
	tr.Put("sys/devices/pci0000:00/0000:00:04.0/vendor", "0x8086")
	tr.Put("sys/devices/pci0000:00/0000:00:04.0/class", "0x088000")
	tr.Link("../../../devices/pci0000:00/0000:00:04.0", "sys/bus/pci/devices/0000:00:04.0")
	fns, err := FindFunctions(&host.Host{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	want := []Function{
		{BDF: "0000:65:00.1", DeviceID: "c2d4", Generation: 3, Driver: "vfio-pci", DriverOverride: "vfio-pci", PFs: []string{"0000:65:00.0"}},
		{BDF: "0000:81:00.2", DeviceID: "c2d9", PFs: []string{}},
		{BDF: "0000:84:00.0", DeviceID: "021c", Generation: 3, Livefish: true, PFs: []string{}},
	}
	if !reflect.DeepEqual(fns, want) {
		t.Errorf("got %+v\nwant %+v", fns, want)
	}
	fns, err = FindFunctions(&host.Host{Root: "../testdata/hosts/bf2-dpu-arm"})
	if err != nil || len(fns) != 0 {
		t.Errorf("the Arm side has no RShim function: %+v, %v", fns, err)
	}
}

func TestFindFunctionsNoSysfs(t *testing.T) {
	_, err := FindFunctions(&host.Host{Root: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "is sysfs mounted") {
		t.Errorf("error %v, want one asking whether sysfs is mounted", err)
	}
}

// The bf2-host with rshim running: /dev/rshim0 names the card's RShim
// function, /dev/rshim1 a USB backend of no PCI function here.
func TestReadDevicesMatch(t *testing.T) {
	h := bf2Host(t, map[string]string{
		"dev/rshim0/misc":  sample(t, "misc-bf2-level2-boot.txt"),
		"dev/rshim1/misc":  sample(t, "misc-man-bf2-usb-level0.txt"),
		"dev/rshim1/boot":  "",
		"dev/rshimx/misc":  "not an rshim dir",
		"dev/rshim64/misc": "rshim makes at most 64",
	})
	fns, err := FindFunctions(h)
	if err != nil {
		t.Fatal(err)
	}
	devs, err := ReadDevices(h)
	if err != nil {
		t.Fatal(err)
	}
	cards, other := Match(fns, devs)
	if len(cards) != 1 || cards[0].Device == nil || cards[0].Device.Path != "/dev/rshim0" || cards[0].Why != "" {
		t.Fatalf("cards %+v", cards)
	}
	if got := cards[0].Device.DevName.PFs(); !reflect.DeepEqual(got, cards[0].Function.PFs) {
		t.Errorf("DEV_NAME's PFs %v, sysfs's %v", got, cards[0].Function.PFs)
	}
	if len(other) != 1 || other[0].Index != 1 || other[0].DevName.Backend != BackendUSB {
		t.Errorf("other %+v", other)
	}
}

// No device: rshim not running or the BMC owns the chip; drop mode: the
// BMC owns it and rshim runs in force mode. Each says what to do.
func TestMatchWhy(t *testing.T) {
	fn := Function{BDF: "0000:65:00.1", Generation: 3}
	cards, _ := Match([]Function{fn}, nil)
	if !strings.Contains(cards[0].Why, "another backend already attached") || !strings.Contains(cards[0].Why, "systemctl enable --now rshim") {
		t.Errorf("no device: %q", cards[0].Why)
	}
	m, err := ParseMisc("misc", sample(t, "misc-bf3-drop.txt"))
	if err != nil {
		t.Fatal(err)
	}
	cards, _ = Match([]Function{fn}, []Device{{Index: 0, Path: "/dev/rshim0", Misc: m, DevName: DevName{Backend: BackendPCIe, BDF: "0000:65:00.1"}}})
	if !strings.Contains(cards[0].Why, "drop mode") || !strings.Contains(cards[0].Why, "FORCE_CMD 1") {
		t.Errorf("drop mode: %q", cards[0].Why)
	}
	m.SecureNICMode = true
	cards, _ = Match([]Function{fn}, []Device{{Index: 0, Path: "/dev/rshim0", Misc: m, DevName: DevName{Backend: BackendPCIe, BDF: "0000:65:00.1"}}})
	if !strings.Contains(cards[0].Why, "secure NIC (locked) mode") {
		t.Errorf("locked: %q", cards[0].Why)
	}
}

func TestReadMiscErrors(t *testing.T) {
	h := bf2Host(t, map[string]string{"dev/rshim0/misc": "DISPLAY_LEVEL   0 (0:basic, 1:advanced, 2:log)\n"})
	if _, err := ReadMisc(h, 1); err == nil || !strings.Contains(err.Error(), "systemctl status rshim") || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing device: %v", err)
	}
	if _, err := ReadDevices(h); err == nil || !strings.Contains(err.Error(), filepath.Join(h.Root, "/dev/rshim0/misc")) {
		t.Errorf("broken misc: %v", err)
	}
	if idx, err := DeviceIndexes(&host.Host{Root: t.TempDir()}); err != nil || idx != nil {
		t.Errorf("no /dev: %v %v", idx, err)
	}
}

// On the live system misc must be a character device read in one read():
// /dev/null is one (and reads empty, which is no misc); a regular file in
// its place is refused before any read.
func TestReadCharDevice(t *testing.T) {
	if b, err := readCharDevice("/dev/null"); err != nil || len(b) != 0 {
		t.Errorf("/dev/null: %q %v", b, err)
	}
	p := filepath.Join(t.TempDir(), "misc")
	if err := os.WriteFile(p, []byte(sample(t, "misc-bf3-drop.txt")), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readCharDevice(p); err == nil || !strings.Contains(err.Error(), "not the character device") {
		t.Errorf("regular file: %v", err)
	}
	if err := writeCharDevice(p, []byte("SW_RESET 1\n")); err == nil || !strings.Contains(err.Error(), "not the character device") {
		t.Errorf("write to a regular file: %v", err)
	}
	if b, _ := os.ReadFile(p); strings.Contains(string(b), "SW_RESET 1") {
		t.Error("wrote to a regular file in misc's place")
	}
}
