package smartnic

import (
	"strings"
	"testing"
)

// Samples are the kernel's own strings (hardware-formats.md §4,
// drivers/infiniband/core/sysfs.c, drivers/pci/pci-sysfs.c).
func TestParsePortState(t *testing.T) {
	for in, want := range map[string]PortState{
		"4: ACTIVE\n":                    {4, "ACTIVE"},
		"1: DOWN\n":                      {1, "DOWN"},
		"5: ACTIVE_DEFER":                {5, "ACTIVE_DEFER"},
		"5: LinkUp\n":                    {5, "LinkUp"},
		"2: Polling\n":                   {2, "Polling"},
		"3: Disabled":                    {3, "Disabled"},
		"4: PortConfigurationTraining\n": {4, "PortConfigurationTraining"},
		"7: Phy Test\n":                  {7, "Phy Test"},
		"9: <unknown>\n":                 {9, "<unknown>"},
	} {
		got, err := ParsePortState(in)
		if err != nil || got != want {
			t.Errorf("ParsePortState(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "ACTIVE", ": ACTIVE", "x: ACTIVE", "4:", "4: ", "-1: X", "300: X"} {
		if _, err := ParsePortState(bad); err == nil {
			t.Errorf("ParsePortState(%q): want error", bad)
		}
	}
	if RDMAStateName(4) != "ACTIVE" || RDMAPhysName(5) != "LINK_UP" || RDMAPhysName(3) != "DISABLED" || RDMAStateName(9) != "UNKNOWN" || RDMAPhysName(-1) != "UNKNOWN" {
		t.Error("rdma link names do not match iproute2's tables")
	}
}

func TestParseLinkSpeed(t *testing.T) {
	for in, want := range map[string]LinkSpeed{
		"16.0 GT/s PCIe\n": {"16.0 GT/s PCIe", 16, 4},
		"32.0 GT/s PCIe":   {"32.0 GT/s PCIe", 32, 5},
		"2.5 GT/s PCIe":    {"2.5 GT/s PCIe", 2.5, 1},
		"8.0 GT/s PCIe":    {"8.0 GT/s PCIe", 8, 3},
		"16 GT/s\n":        {"16 GT/s", 16, 4}, // kernels <= 5.6
		"Unknown\n":        {"Unknown", 0, 0},
		"Unknown speed":    {"Unknown speed", 0, 0},
	} {
		got, err := ParseLinkSpeed(in)
		if err != nil || got != want {
			t.Errorf("ParseLinkSpeed(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "16.0", "16.0 Gb/s", "fast GT/s", "-1 GT/s", "16.0 GT/s PCIe x"} {
		if _, err := ParseLinkSpeed(bad); err == nil {
			t.Errorf("ParseLinkSpeed(%q): want error", bad)
		}
	}
}

func TestParseSmallAttrs(t *testing.T) {
	if v, err := ParseHexID("0x15b3\n"); err != nil || v != VendorMellanox {
		t.Errorf("vendor: %x %v", v, err)
	}
	if v, err := ParseHexID("0xa2d6"); err != nil || v != 0xa2d6 {
		t.Errorf("device: %x %v", v, err)
	}
	for _, bad := range []string{"15b3", "0x", "0x1ffff", "0xzz"} {
		if _, err := ParseHexID(bad); err == nil {
			t.Errorf("ParseHexID(%q): want error", bad)
		}
	}
	if n, err := ParseInt("-1\n"); err != nil || n != -1 {
		t.Errorf("numa_node -1: %d %v", n, err)
	}
	if _, up, err := ParseNetFlags("0x1003\n"); err != nil || !up {
		t.Errorf("flags 0x1003: up=%v %v", up, err)
	}
	if _, up, err := ParseNetFlags("0x1002"); err != nil || up {
		t.Errorf("flags 0x1002: up=%v %v", up, err)
	}
	if _, _, err := ParseNetFlags("1003"); err == nil {
		t.Error("flags without 0x: want error")
	}
	if MSTBase(0xa2d6) != "mt41686" || MSTBase(0xa2dc) != "mt41692" || MSTBase(0x1017) != "mt4119" {
		t.Error("mst names are mt + decimal device id (§2.3)")
	}
}

func TestParseEswitchShow(t *testing.T) {
	// verbatim, Documentation/networking/devlink/devlink-eswitch-attr.rst
	got, err := ParseEswitchShow("pci/0000:03:00.0: mode switchdev inline-mode none encap-mode basic\n")
	if err != nil || got != "switchdev" {
		t.Errorf("got %q, %v", got, err)
	}
	if got, err := ParseEswitchShow("pci/0000:3b:00.0: mode legacy\n"); err != nil || got != "legacy" {
		t.Errorf("legacy: %q %v", got, err)
	}
	if got, err := ParseEswitchShow("pci/0000:3b:00.0: inline-mode none\n"); err != nil || got != "" {
		t.Errorf("no mode field: %q %v", got, err)
	}
	for _, bad := range []string{"", "\n\n", "mode switchdev"} {
		if _, err := ParseEswitchShow(bad); err == nil {
			t.Errorf("ParseEswitchShow(%q): want error", bad)
		}
	}
}

func TestRole(t *testing.T) {
	bf := Function{Family: "BlueField", Kind: FunctionNIC}
	cx := Function{Family: "ConnectX", Kind: FunctionNIC}
	for _, c := range []struct {
		name, ppn, side string
		f               Function
		want            string
	}{
		{"p0", "p0", SideDPUArm, bf, RoleUplink},
		{"enp225s0f0np0", "p0", SideHost, bf, RoleHostPF},
		{"enp59s0f0np0", "p0", SideHost, cx, RoleUplink},
		{"pf0hpf", "pf0", SideDPUArm, bf, RoleHostPFRep},
		{"pf0vf3", "pf0vf3", SideDPUArm, bf, RoleVFRep},
		{"en3f0pf0sf0", "pf0sf0", SideDPUArm, bf, RoleSFRep},
		{"en3f0c1pf0sf77", "c1pf0sf77", SideDPUArm, bf, RoleSFRep},
		{"pf0hpf", "c1pf0", SideDPUArm, bf, RoleHostPFRep},
		{"pf0vf2", "c1pf0vf2", SideDPUArm, bf, RoleVFRep},
		{"x", "c1p0", SideDPUArm, bf, RoleOther},
		{"x", "cpf0", SideDPUArm, bf, RoleOther},
		{"tmfifo_net0", "", SideDPUArm, Function{}, RoleTmfifo},
		{"oob_net0", "", SideDPUArm, Function{}, RoleOOB},
		{"enp59s0f0v0", "", SideHost, Function{Kind: FunctionVF}, RoleVF},
		{"eth9", "", SideHost, cx, RoleOther},
		{"x", "pfx", SideHost, cx, RoleOther},
		{"x", "pf0vf", SideHost, cx, RoleOther},
	} {
		if got := Role(Netdev{Name: c.name, PhysPortName: c.ppn}, c.f, c.side); got != c.want {
			t.Errorf("Role(%s, %s) = %s, want %s", c.name, c.ppn, got, c.want)
		}
	}
}

func FuzzParsePortState(f *testing.F) {
	for _, s := range []string{"4: ACTIVE\n", "1: DOWN\n", "5: LinkUp\n", "2: Polling\n", "3: Disabled\n", "7: Phy Test\n", "9: <unknown>\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		st, err := ParsePortState(s)
		if err != nil {
			return
		}
		if st.Num < 0 || st.Num > 255 || st.Name == "" || strings.TrimSpace(st.Name) != st.Name {
			t.Fatalf("ParsePortState(%q) = %+v", s, st)
		}
		again, err := ParsePortState(st.String())
		if err != nil || again != st {
			t.Fatalf("round trip %q -> %+v -> %+v, %v", s, st, again, err)
		}
		_ = RDMAStateName(st.Num) + RDMAPhysName(st.Num)
	})
}

func FuzzParseLinkSpeed(f *testing.F) {
	for _, s := range []string{"16.0 GT/s PCIe\n", "8.0 GT/s PCIe\n", "2.5 GT/s PCIe\n", "16 GT/s\n", "Unknown\n", "32.0 GT/s PCIe\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ls, err := ParseLinkSpeed(s)
		if err != nil {
			return
		}
		if ls.GTs < 0 || ls.GTs > 1000 || ls.Gen < 0 || ls.Gen > 7 || ls.Text != strings.TrimSpace(s) {
			t.Fatalf("ParseLinkSpeed(%q) = %+v", s, ls)
		}
	})
}

func FuzzParseEswitchShow(f *testing.F) {
	f.Add("pci/0000:03:00.0: mode switchdev inline-mode none encap-mode basic\n")
	f.Add("pci/0000:3b:00.0: mode legacy\n")
	f.Add("pci/0000:03:00.0: mode switchdev_inactive\n")
	f.Fuzz(func(t *testing.T, s string) {
		mode, err := ParseEswitchShow(s)
		if err == nil && strings.ContainsAny(mode, " \t\n") {
			t.Fatalf("mode %q has whitespace", mode)
		}
	})
}

func FuzzParseNetFlags(f *testing.F) {
	for _, s := range []string{"0x1003\n", "0x1002\n", "0x9\n", "0x11043\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fl, up, err := ParseNetFlags(s)
		if err == nil && up != (fl&1 != 0) {
			t.Fatalf("flags %#x up=%v", fl, up)
		}
	})
}
