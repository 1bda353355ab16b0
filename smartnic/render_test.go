package smartnic

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"rig/internal/host"
	"rig/internal/testutil/sysfstree"
)

// ibHost is a ConnectX-6 in InfiniBand mode, built from data in the
// kernel's formats (drivers/infiniband/core/sysfs.c): port 1 of mlx5_0 is
// up with LID 0x2a from the SM at LID 1, port 1 of mlx5_1 has no link yet
// (LID 0xffff, SM LID 0: the values a real down IB port shows). IB GIDs
// name no netdev (gid_attrs/ndevs/N fails to read), so no netdev file.
func ibHost(t *testing.T, mutate func(map[string]map[string]string)) string {
	root := t.TempDir()
	tr := sysfstree.New(t, root)
	fns := []sysfstree.Fn{
		{Path: "pci0000:c0/0000:c0:01.1/0000:c1:00.0", Device: "0x101b", Rev: "0x00", NUMA: "1"},
		{Path: "pci0000:c0/0000:c0:01.1/0000:c1:00.1", Device: "0x101b", Rev: "0x00", NUMA: "1"},
	}
	ports := map[string]map[string]string{
		"mlx5_0": {"state": "4: ACTIVE", "phys_state": "5: LinkUp", "link_layer": "InfiniBand", "rate": "200 Gb/sec (4X HDR)",
			"lid": "0x2a", "sm_lid": "0x1", "lid_mask_count": "0", "gids/0": "fe80:0000:0000:0000:0c42:a103:0017:2f4e"},
		"mlx5_1": {"state": "1: DOWN", "phys_state": "3: Disabled", "link_layer": "InfiniBand", "rate": "10 Gb/sec (4X SDR)",
			"lid": "0xffff", "sm_lid": "0x0", "lid_mask_count": "0", "gids/0": "fe80:0000:0000:0000:0c42:a103:0017:2f4f"},
	}
	if mutate != nil {
		mutate(ports)
	}
	for i, f := range fns {
		tr.PCIFn(f)
		dev := []string{"mlx5_0", "mlx5_1"}[i]
		tr.RDMAPort(f, dev, ports[dev])
		tr.Netdev(f, []string{"ibp193s0f0", "ibp193s0f1"}[i], 4+i, "")
	}
	return root
}

// The golden lines: iproute2's format (rdma/link.c: every field "name
// value " in this order, lid/sm_lid/lmc "%u", subnet_prefix "%04x:…"),
// the second one as a real down IB port prints it (3rd-party sample:
// "link mlx5_1/1 subnet_prefix fe80:0000:0000:0000 lid 65535 sm_lid 0 lmc
// 0 state DOWN physical_state DISABLED").
func TestRDMALinkInfiniBand(t *testing.T) {
	inv, err := Scan(&host.Host{Root: ibHost(t, nil), Exec: noExec(t)})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	links := RDMALinks(inv)
	if err := WriteRDMALinks(&b, links); err != nil {
		t.Fatal(err)
	}
	const golden = "link mlx5_0/1 subnet_prefix fe80:0000:0000:0000 lid 42 sm_lid 1 lmc 0 state ACTIVE physical_state LINK_UP \n" +
		"link mlx5_1/1 subnet_prefix fe80:0000:0000:0000 lid 65535 sm_lid 0 lmc 0 state DOWN physical_state DISABLED \n"
	if b.String() != golden {
		t.Errorf("rdma links:\n%q\nwant\n%q", b.String(), golden)
	}
	// rdma -j link keys, IB ones present (lmc 0 and sm_lid 0 too)
	js, _ := json.Marshal(links[1])
	for _, k := range []string{`"subnet_prefix":"fe80:0000:0000:0000"`, `"lid":65535`, `"sm_lid":0`, `"lmc":0`, `"state":"DOWN"`} {
		if !strings.Contains(string(js), k) {
			t.Errorf("json %s lacks %s", js, k)
		}
	}
	if p := inv.Functions[0].RDMA[0].Ports[0]; p.IB == nil || *p.IB != (IBAddr{"fe80:0000:0000:0000", 42, 1, 0}) || p.Netdev != "" {
		t.Errorf("port %+v ib %+v", p, p.IB)
	}
}

// RoCE ports carry none of the IB fields even where the files exist
// (the kernel has them for every port; netlink sends them only for IB).
func TestRDMALinkEthernetHasNoIBFields(t *testing.T) {
	root := ibHost(t, func(p map[string]map[string]string) {
		p["mlx5_0"]["link_layer"] = "Ethernet"
		p["mlx5_0"]["gid_attrs/ndevs/0"] = "ibp193s0f0"
	})
	inv, err := Scan(&host.Host{Root: root, Exec: noExec(t)})
	if err != nil {
		t.Fatal(err)
	}
	links := RDMALinks(inv)
	var b strings.Builder
	if err := WriteRDMALinks(&b, links[:1]); err != nil {
		t.Fatal(err)
	}
	if want := "link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev ibp193s0f0 \n"; b.String() != want {
		t.Errorf("got %q want %q", b.String(), want)
	}
	if js, _ := json.Marshal(links[0]); strings.Contains(string(js), "lid") || strings.Contains(string(js), "subnet_prefix") {
		t.Errorf("Ethernet link JSON has IB keys: %s", js)
	}
}

// A malformed or missing IB attribute fails the scan naming port and file.
func TestRDMALinkInfiniBandBadAttrs(t *testing.T) {
	for _, c := range []struct{ file, value, want string }{
		{"lid", "42", `rdma mlx5_0/1: InfiniBand port: lid: "42": want 0x`},
		{"sm_lid", "0xzz", `sm_lid: "0xzz": not a 32-bit hex number`},
		{"lid_mask_count", "-1", `lid_mask_count: "-1": want a decimal LMC`},
		{"gids/0", "fe80::1", `gids/0: GID "fe80::1": want 8`},
		{"gids/0", "", "read gids/0"},
	} {
		root := ibHost(t, func(p map[string]map[string]string) {
			if c.value == "" {
				delete(p["mlx5_0"], c.file)
			} else {
				p["mlx5_0"][c.file] = c.value
			}
		})
		_, err := Scan(&host.Host{Root: root, Exec: noExec(t)})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s=%q: err %v, want %q", c.file, c.value, err, c.want)
		}
	}
}

func TestParseGIDPrefix(t *testing.T) {
	for in, want := range map[string]string{
		"fe80:0000:0000:0000:0c42:a103:0017:2f4e\n": "fe80:0000:0000:0000",
		"fec0:0000:0000:0001:0002:c903:00a1:b2c3":   "fec0:0000:0000:0001",
		"0000:0000:0000:0000:0000:0000:0000:0000":   "0000:0000:0000:0000", // an empty GID entry reads as zeros
	} {
		if got, err := ParseGIDPrefix(in); err != nil || got != want {
			t.Errorf("ParseGIDPrefix(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "fe80::1", "fe80:0:0:0:0:0:0:1", "fe80:0000:0000:0000:0c42:a103:0017:2f4e:0000", "ge80:0000:0000:0000:0c42:a103:0017:2f4e", "+e80:0000:0000:0000:0c42:a103:0017:2f4e"} {
		if got, err := ParseGIDPrefix(bad); err == nil {
			t.Errorf("ParseGIDPrefix(%q) = %q, want error", bad, got)
		}
	}
}

func TestParseSysfsHex32(t *testing.T) {
	for in, want := range map[string]uint32{"0x2a\n": 42, "0x0": 0, "0xffff": 65535, "0xffffffff": 1<<32 - 1} {
		if got, err := ParseSysfsHex32(in); err != nil || got != want {
			t.Errorf("ParseSysfsHex32(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "0x", "42", "0x1ffffffff", "0x-1", "0xg"} {
		if _, err := ParseSysfsHex32(bad); err == nil {
			t.Errorf("ParseSysfsHex32(%q): want error", bad)
		}
	}
}

// The modules block reflects /proc/modules under the host root, in the
// wording of MFT's print_status; `mst status -v` follows it with "PCI
// devices:" directly.
func TestMSTStatusModulesBlock(t *testing.T) {
	root := ibHost(t, nil)
	for _, c := range []struct {
		modules string
		want    MSTModules
		lines   string
	}{
		{"", MSTModules{}, "    MST PCI module is not loaded\n    MST PCI configuration module is not loaded\n"},
		{"mst_pciconf 49152 0 - Live 0x0000000000000000 (OE)\nmlx5_ib 557056 0 - Live 0x0000000000000000\n", MSTModules{PCIConf: true},
			"    MST PCI module is not loaded\n    MST PCI configuration module loaded\n"},
		{"mst_pci 28672 0 - Live 0x0000000000000000 (OE)\nmst_pciconf 49152 0 - Live 0x0000000000000000 (OE)\n", MSTModules{PCI: true, PCIConf: true},
			"    MST PCI module loaded\n    MST PCI configuration module loaded\n"},
		// a name that only starts like one is another module (grep -w)
		{"mst_pci_x 1 0 - Live 0x0\n", MSTModules{}, "    MST PCI module is not loaded\n    MST PCI configuration module is not loaded\n"},
	} {
		tr := sysfstree.New(t, root)
		tr.File("/proc/modules", c.modules)
		h := &host.Host{Root: root, Exec: noExec(t)}
		got := ReadMSTModules(h)
		if got != c.want {
			t.Errorf("/proc/modules %q: %+v, want %+v", c.modules, got, c.want)
		}
		inv, err := Scan(h)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := WriteMSTStatus(&b, got, MSTRows(inv)); err != nil {
			t.Fatal(err)
		}
		want := "MST modules:\n------------\n" + c.lines + "PCI devices:\n------------\n" +
			"DEVICE_TYPE             MST                           PCI       RDMA            NET                                     NUMA\n" +
			"ConnectX6(rev:0)        /dev/mst/mt4123_pciconf0.1    c1:00.1   mlx5_1          net-ibp193s0f1                          1\n\n" +
			"ConnectX6(rev:0)        /dev/mst/mt4123_pciconf0      c1:00.0   mlx5_0          net-ibp193s0f0                          1\n\n"
		if b.String() != want {
			t.Errorf("mst status:\n%s\nwant:\n%s", b.String(), want)
		}
	}
}

// Several cards: newest /dev/mst node first (higher device ID, then
// higher card index, then .1 before .0), as the real table lists them.
func TestMSTRowsOrderSeveralCards(t *testing.T) {
	inv := &Inventory{}
	for _, f := range []struct{ bdf, dev string }{
		{"0000:3b:00.0", "101d"}, {"0000:3b:00.1", "101d"}, {"0000:5e:00.0", "1017"}, {"0000:86:00.0", "101d"},
		{"0000:86:00.1", "101d"}, {"0000:af:00.0", "1017"}, {"0000:e1:00.0", "a2d6"}, {"0000:e1:00.1", "a2d6"},
		{"0000:e1:00.2", "c2d3"}, {"0000:3b:00.2", "101e"},
	} {
		m, _ := LookupModel(parseID(f.dev))
		inv.Functions = append(inv.Functions, Function{BDF: f.bdf, DeviceID: f.dev, Model: m.Name, MSTType: m.MSTType, Kind: m.Kind, NUMANode: -1})
	}
	assignMSTNames(inv)
	var got []string
	for _, r := range MSTRows(inv) {
		got = append(got, r.MST+" "+r.PCI)
	}
	want := []string{
		"/dev/mst/mt41686_pciconf0.1 e1:00.1", "/dev/mst/mt41686_pciconf0 e1:00.0",
		"/dev/mst/mt4125_pciconf1.1 86:00.1", "/dev/mst/mt4125_pciconf1 86:00.0",
		"/dev/mst/mt4125_pciconf0.1 3b:00.1", "/dev/mst/mt4125_pciconf0 3b:00.0",
		"/dev/mst/mt4119_pciconf1 af:00.0", "/dev/mst/mt4119_pciconf0 5e:00.0",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("order:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A card in a non-zero PCI domain: every row shows its domain and the PCI
// column is 16 wide (3rd-party samples: "0004:01:00.1    mlx5_1", and
// "0000:01:00.0" printed in full next to "0002:01:00.0").
func TestMSTStatusPCIDomains(t *testing.T) {
	inv := &Inventory{Functions: []Function{
		{BDF: "0000:01:00.0", DeviceID: "1021", MSTType: "ConnectX7", Kind: FunctionNIC, NUMANode: -1},
		{BDF: "0002:01:00.0", DeviceID: "1021", MSTType: "ConnectX7", Kind: FunctionNIC, NUMANode: -1},
		{BDF: "0002:01:00.1", DeviceID: "1021", MSTType: "ConnectX7", Kind: FunctionNIC, NUMANode: -1},
	}}
	assignMSTNames(inv)
	var b strings.Builder
	if err := WriteMSTStatus(&b, MSTModules{PCI: true, PCIConf: true}, MSTRows(inv)); err != nil {
		t.Fatal(err)
	}
	want := "MST modules:\n------------\n    MST PCI module loaded\n    MST PCI configuration module loaded\nPCI devices:\n------------\n" +
		"DEVICE_TYPE             MST                           PCI             RDMA            NET                                     NUMA\n" +
		"ConnectX7(rev:0)        /dev/mst/mt4129_pciconf1.1    0002:01:00.1                                                            -1\n\n" +
		"ConnectX7(rev:0)        /dev/mst/mt4129_pciconf1      0002:01:00.0                                                            -1\n\n" +
		"ConnectX7(rev:0)        /dev/mst/mt4129_pciconf0      0000:01:00.0                                                            -1\n\n"
	if b.String() != want {
		t.Errorf("mst status:\n%s\nwant:\n%s", b.String(), want)
	}
}

func FuzzParseGIDPrefix(f *testing.F) {
	for _, s := range []string{"fe80:0000:0000:0000:0c42:a103:0017:2f4e\n", "fe80::1", "", "0000:0000:0000:0000:0000:0000:0000:0000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseGIDPrefix(s)
		if err != nil {
			return
		}
		// iproute2's form: 4 groups of 4 lower-case hex digits, the GID's own
		if len(p) != 19 || strings.Count(p, ":") != 3 || !strings.HasPrefix(strings.ToLower(strings.TrimSpace(s)), p) {
			t.Errorf("ParseGIDPrefix(%q) = %q", s, p)
		}
	})
}

func FuzzParseSysfsHex32(f *testing.F) {
	for _, s := range []string{"0x2a\n", "0xffff", "0x", "42"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseSysfsHex32(s)
		if err == nil && !strings.HasPrefix(strings.TrimSpace(s), "0x") {
			t.Errorf("ParseSysfsHex32(%q) = %d without 0x", s, v)
		}
	})
}

func FuzzParseProcModules(f *testing.F) {
	for _, s := range []string{"mst_pciconf 49152 0 - Live 0x0000000000000000 (OE)\n", "", "\n\n  \t\n", "a b\nc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for name := range ParseProcModules(s) {
			if name == "" || strings.ContainsAny(name, " \t\n") {
				t.Errorf("ParseProcModules(%q): name %q", s, name)
			}
		}
	})
}
