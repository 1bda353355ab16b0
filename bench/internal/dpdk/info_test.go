//go:build cgo

package dpdk

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The drivers rig drives are in this (test) binary, linked exactly as rig
// is: their records are found where Linked says (the executable when
// static, EAL's driver directory when shared), with mlx5's PCI IDs.
func TestPMDsOfThisBinary(t *testing.T) {
	d, err := PMDs()
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	switch Linked {
	case "static":
		if len(d.From) != 1 || d.From[0] != exe {
			t.Errorf("static: read from %v, want [%s]", d.From, exe)
		}
	case "shared":
		if len(d.From) < 10 || filepath.Base(filepath.Dir(d.From[0])) != "pmds-23.0" {
			t.Errorf("shared: read from %v, want EAL's driver directory", d.From)
		}
	default:
		t.Fatalf("Linked %q", Linked)
	}
	byName := map[string]PMD{}
	for _, p := range d.PMDs {
		byName[p.Name] = p
	}
	for _, n := range []string{"net_null", "net_ring", "net_memif", "net_af_packet", "net_tap", "net_virtio_user", "net_vhost", "net_pcap", "mlx5_eth"} {
		if _, ok := byName[n]; !ok {
			t.Errorf("no PMD %s among %d: %v", n, len(d.PMDs), d.PMDs)
		}
	}
	if m := byName["mlx5_eth"]; m.PCIIDs < 10 || !strings.Contains(m.Kmod, "mlx5_core") {
		t.Errorf("mlx5_eth: %+v, want its ConnectX/BlueField PCI IDs and mlx5_core", m)
	}
	if v := Version(); !strings.HasPrefix(v, "DPDK 22.11") {
		t.Errorf("Version() = %q, want DPDK 22.11.x (Debian 12's)", v)
	}
}
