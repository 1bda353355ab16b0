package main

import (
	"os"
	"path/filepath"
	"testing"

	"rig/internal/testutil/sysfstree"
)

// severalCardsRoot is a host root no fixture has, built from data in the
// kernel's formats (testdata/golden/README.md): two ConnectX-6 Dx cards
// (mt4125_pciconf0, mt4125_pciconf1), a ConnectX-6 in InfiniBand mode
// (mt4123_pciconf0; mlx5_4 up with LID 0x2a, SM LID 0x1, mlx5_5 without
// link: LID 0xffff, SM LID 0) and a BlueField-2 seen from its host
// (mt41686_pciconf0), with MFT's mst_pciconf module loaded and mst_pci
// unloaded again, as `mst start` leaves a host (hardware-formats.md §2.1).
func severalCardsRoot(t *testing.T) string {
	root := t.TempDir()
	tr := sysfstree.New(t, root)
	tr.File("/proc/modules", "mst_pciconf 49152 0 - Live 0x0000000000000000 (OE)\nmlx5_ib 557056 0 - Live 0x0000000000000000\nmlx5_core 2420736 1 mlx5_ib, Live 0x0000000000000000\n")
	eth := func(netdev, state, phys string) map[string]string {
		return map[string]string{"state": state, "phys_state": phys, "link_layer": "Ethernet", "rate": "100 Gb/sec (4X EDR)",
			"gid_attrs/ndevs/0": netdev, "gid_attrs/ndevs/1": netdev}
	}
	ib := func(state, phys, lid, smlid, gid string) map[string]string {
		return map[string]string{"state": state, "phys_state": phys, "link_layer": "InfiniBand", "rate": "200 Gb/sec (4X HDR)",
			"lid": lid, "sm_lid": smlid, "lid_mask_count": "0", "gids/0": gid}
	}
	cards := []struct {
		fn          sysfstree.Fn
		netdev, ppn string
		rdma        string
		port        map[string]string
	}{
		{fn: sysfstree.Fn{Path: "pci0000:3a/0000:3a:00.0/0000:3b:00.0", Device: "0x101d", Rev: "0x00", NUMA: "0"}, netdev: "enp59s0f0np0", ppn: "p0", rdma: "mlx5_0", port: eth("enp59s0f0np0", "4: ACTIVE", "5: LinkUp")},
		{fn: sysfstree.Fn{Path: "pci0000:3a/0000:3a:00.0/0000:3b:00.1", Device: "0x101d", Rev: "0x00", NUMA: "0"}, netdev: "enp59s0f1np1", ppn: "p1", rdma: "mlx5_1", port: eth("enp59s0f1np1", "4: ACTIVE", "5: LinkUp")},
		{fn: sysfstree.Fn{Path: "pci0000:85/0000:85:00.0/0000:86:00.0", Device: "0x101d", Rev: "0x00", NUMA: "1"}, netdev: "enp134s0f0np0", ppn: "p0", rdma: "mlx5_2", port: eth("enp134s0f0np0", "4: ACTIVE", "5: LinkUp")},
		{fn: sysfstree.Fn{Path: "pci0000:85/0000:85:00.0/0000:86:00.1", Device: "0x101d", Rev: "0x00", NUMA: "1"}, netdev: "enp134s0f1np1", ppn: "p1", rdma: "mlx5_3", port: eth("enp134s0f1np1", "1: DOWN", "3: Disabled")},
		{fn: sysfstree.Fn{Path: "pci0000:c0/0000:c0:01.1/0000:c1:00.0", Device: "0x101b", Rev: "0x00", NUMA: "1"}, netdev: "ibp193s0f0", rdma: "mlx5_4", port: ib("4: ACTIVE", "5: LinkUp", "0x2a", "0x1", "fe80:0000:0000:0000:0c42:a103:0017:2f4e")},
		{fn: sysfstree.Fn{Path: "pci0000:c0/0000:c0:01.1/0000:c1:00.1", Device: "0x101b", Rev: "0x00", NUMA: "1"}, netdev: "ibp193s0f1", rdma: "mlx5_5", port: ib("1: DOWN", "3: Disabled", "0xffff", "0x0", "fe80:0000:0000:0000:0c42:a103:0017:2f4f")},
		{fn: sysfstree.Fn{Path: "pci0000:e0/0000:e0:03.1/0000:e1:00.0", Device: "0xa2d6", Rev: "0x01", NUMA: "1"}, netdev: "enp225s0f0np0", ppn: "p0", rdma: "mlx5_6", port: eth("enp225s0f0np0", "4: ACTIVE", "5: LinkUp")},
		{fn: sysfstree.Fn{Path: "pci0000:e0/0000:e0:03.1/0000:e1:00.1", Device: "0xa2d6", Rev: "0x01", NUMA: "1"}, netdev: "enp225s0f1np1", ppn: "p1", rdma: "mlx5_7", port: eth("enp225s0f1np1", "1: DOWN", "2: Polling")},
	}
	for i, c := range cards {
		tr.PCIFn(c.fn)
		tr.Netdev(c.fn, c.netdev, 4+i, c.ppn)
		tr.RDMAPort(c.fn, c.rdma, c.port)
	}
	return root
}

// TestSeveralCardsGolden: `rig mst status` and `rig rdma links` (text and
// -o json) on severalCardsRoot against testdata/golden/several-cards/: the
// MST modules block, cards in the real table's order (newest /dev/mst node
// first), and InfiniBand ports with subnet_prefix, lid, sm_lid, lmc.
// Regenerate: go test ./cmd/rig -run Golden -update
func TestSeveralCardsGolden(t *testing.T) {
	root := severalCardsRoot(t)
	for _, c := range []struct {
		file string
		args []string
	}{
		{"mst-status.txt", []string{"mst", "status"}},
		{"mst-status.json", []string{"-o", "json", "mst", "status"}},
		{"rdma-links.txt", []string{"rdma", "links"}},
		{"rdma-links.json", []string{"-o", "json", "rdma", "links"}},
	} {
		args := append(append([]string{}, c.args...), "--root", root)
		code, out, errOut := rig(t, args...)
		if code != exitOK || errOut != "" {
			t.Fatalf("rig %v: code %d, stderr %q", args, code, errOut)
		}
		golden := filepath.Join("testdata", "golden", "several-cards", c.file)
		if *updateGolden {
			if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run with -update to create)", err)
		}
		if out != string(want) {
			t.Errorf("rig %v differs from %s:\n--- got\n%s--- want\n%s", c.args, golden, out, want)
		}
	}
}
