package mlxconfig

import (
	"os"
	"path/filepath"
	"testing"

	"rig/internal/host"
)

// ReadHostFacts reads under the host root: the PCI function of a BDF (in
// any spelling) and its driver link, mlx5_core's own entry, a /dev/mst
// node, and the bracketed lockdown mode.
func TestReadHostFacts(t *testing.T) {
	root := t.TempDir()
	mk := func(p string) {
		if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, p string) {
		if err := os.Symlink(target, filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
	mk("sys/bus/pci/drivers/mlx5_core")
	mk("sys/bus/pci/drivers/vfio-pci")
	mk("sys/bus/pci/devices/0000:03:00.0")
	link("../../../bus/pci/drivers/vfio-pci", "sys/bus/pci/devices/0000:03:00.0/driver")
	mk("sys/bus/pci/devices/0000:03:00.1") // no driver link
	mk("sys/bus/pci/devices/0000:03:00.2") // no link, but mlx5_core lists it
	link("../../../../devices/pci0000:00/0000:03:00.2", "sys/bus/pci/drivers/mlx5_core/0000:03:00.2")
	mk("dev/mst")
	if err := os.WriteFile(filepath.Join(root, "dev/mst/mt41686_pciconf0"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	mk("sys/kernel/security")
	if err := os.WriteFile(filepath.Join(root, "sys/kernel/security/lockdown"), []byte("none [integrity] confidentiality\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := &host.Host{Root: root}

	f := ReadHostFacts(h, "03:00.0", 1000)
	if f.PCIPath != "/sys/bus/pci/devices/0000:03:00.0" || f.PCI != Present || !f.DriverRead || f.Driver != "vfio-pci" ||
		!f.EUIDKnown || f.EUID != 1000 || f.Lockdown != "integrity" || f.LockdownText != "none [integrity] confidentiality" || !f.LockedDown() {
		t.Errorf("03:00.0: %+v", f)
	}
	if f := ReadHostFacts(h, "0000:03:00.1", 0); f.PCI != Present || !f.DriverRead || f.Driver != "" {
		t.Errorf("unbound: %+v", f)
	}
	if f := ReadHostFacts(h, "0000:03:00.2", 0); f.Driver != "mlx5_core" {
		t.Errorf("mlx5_core entry: %+v", f)
	}
	if f := ReadHostFacts(h, "0000:04:00.0", -1); f.PCI != Absent || f.DriverRead || f.EUIDKnown {
		t.Errorf("absent: %+v", f)
	}
	if f := ReadHostFacts(h, "/dev/mst/mt41686_pciconf0", 0); f.MST != Present || f.PCIPath != "" {
		t.Errorf("mst node: %+v", f)
	}
	if f := ReadHostFacts(h, "/dev/mst/mt41692_pciconf0", 0); f.MST != Absent || f.MSTNode != "/dev/mst/mt41692_pciconf0" {
		t.Errorf("mst node absent: %+v", f)
	}
	if f := ReadHostFacts(h, "mlx5_0", 0); f.PCI != PresenceUnknown || f.MST != PresenceUnknown {
		t.Errorf("rdma name: %+v", f)
	}
	if f := ReadHostFacts(&host.Host{Root: t.TempDir()}, "0000:03:00.0", 0); f.Lockdown != "" || f.LockedDown() {
		t.Errorf("no lockdown file: %+v", f)
	}
	for in, want := range map[string]string{"[none] integrity confidentiality": "none", "none integrity [confidentiality]": "confidentiality", "none": "", "[x": ""} {
		if got := ParseLockdown(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}
