package pcidev

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"rig/internal/host"
	"rig/internal/testutil"
	"rig/playbooks"
	"rig/provision"
	"rig/provision/steptest"
)

const route4Header = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n"

// defaultRoute4 is /proc/net/route's default route via 10.0.0.1 on dev.
func defaultRoute4(dev string) string {
	return dev + "\t00000000\t0100000A\t0003\t0\t0\t100\t00000000\t0\t0\t0\n"
}

// The guard applies however the function is named: by its PCI address
// (seed 003's form), by its netdev, by a VF's address; it sees a bond
// stacked on the netdev, an ssh session's local address (IPv6 from
// if_inet6, IPv4 by the netdev's prefix route under a fixture root), and
// refuses at check, before any write, naming why. Link-local IPv6 routes,
// which every up netdev has, are no reason.
func TestBindGuardFixtures(t *testing.T) {
	for _, tc := range []struct {
		name string
		prep func(t *testing.T, root string)
		dev  string
		want []string // "" = binds
	}{
		{"default route, by PCI address", func(t *testing.T, root string) {
			put(t, root, "proc/net/route", route4Header+defaultRoute4("ens5"))
		}, "0000:00:04.0", []string{"pci 0000:00:04.0: binding it to vfio-pci would take it from the kernel, and this host may lose its network: ens5 carries the default route (0.0.0.0/0)", "nothing was written"}},
		{"IPv6 default route, by netdev", func(t *testing.T, root string) {
			put(t, root, "proc/net/ipv6_route", "00000000000000000000000000000000 00 00000000000000000000000000000000 00 fe800000000000000000000000000001 00000400 00000001 00000000 00000003     ens5\n")
		}, "ens5", []string{"ens5 carries the default route (::/0)"}},
		{"ssh over IPv6, by PCI address", func(t *testing.T, root string) {
			put(t, root, "proc/net/if_inet6", "20010db8000000000000000000000005 02 40 00 80     ens5\nfe800000000000005054fffe123456 02 40 20 80     ens5\n")
			// 2001:db8::5 port 22 <- 2001:db8::9 port 51000, in tcp6's
			// little-endian words; a listening socket (st 0A) is no session
			put(t, root, "proc/net/tcp6", "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"+
				"   0: 00000000000000000000000000000000:0016 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0\n"+
				"   1: B80D0120000000000000000005000000:0016 B80D0120000000000000000009000000:C738 01 00000000:00000000 02:00000E41 00000000     0        0 2 4 0000000000000000 20 4 31 10 -1\n")
		}, "0000:00:04.0", []string{"ens5 holds the local address of 1 established TCP session(s) ([2001:db8::5]:22 <- [2001:db8::9]:51000; /proc/net/tcp)"}},
		{"ssh over IPv4, matched by prefix route", func(t *testing.T, root string) {
			put(t, root, "proc/net/route", route4Header+"ens5\t0000000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n")
			put(t, root, "proc/net/tcp", "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"+
				"   0: 0500000A:0016 0900000A:C738 01 00000000:00000000 02:000AFC1B 00000000     0        0 3 4 0000000000000000 20 4 29 10 -1\n")
		}, "ens5", []string{"ens5 carries routes (10.0.0.0/24)", "ens5 holds the local address of 1 established TCP session(s) (10.0.0.5:22 <- 10.0.0.9:51000"}},
		{"bond over the netdev", func(t *testing.T, root string) {
			ln(t, root, "../bond0", "sys/devices/pci0000:00/0000:00:04.0/virtio0/net/ens5/upper_bond0")
			mkdirs(t, root, "sys/devices/virtual/net/bond0")
			ln(t, root, "../../devices/virtual/net/bond0", "sys/class/net/bond0")
			put(t, root, "proc/net/route", route4Header+defaultRoute4("bond0"))
		}, "0000:00:04.0", []string{"bond0 (stacked on ens5) carries the default route (0.0.0.0/0)"}},
		{"a VF by its PCI address", func(t *testing.T, root string) {
			dev := "sys/devices/pci0000:00/0000:00:04.2"
			put(t, root, dev+"/vendor", "0x1af4\n")
			ln(t, root, "../../../devices/pci0000:00/0000:00:04.2", "sys/bus/pci/devices/0000:00:04.2")
			ln(t, root, "../0000:00:04.0", dev+"/physfn")
			ln(t, root, "../../../kernel/iommu_groups/4", dev+"/iommu_group")
			mkdirs(t, root, dev+"/net/ens5v0")
			ln(t, root, "../../../0000:00:04.2", dev+"/net/ens5v0/device")
			ln(t, root, "../../devices/pci0000:00/0000:00:04.2/net/ens5v0", "sys/class/net/ens5v0")
			put(t, root, "proc/net/route", route4Header+defaultRoute4("ens5v0"))
		}, "0000:00:04.2", []string{"pci 0000:00:04.2: binding it", "ens5v0 carries the default route"}},
		{"link-local IPv6 only", func(t *testing.T, root string) {
			put(t, root, "proc/net/ipv6_route", "fe800000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     ens5\n"+
				"ff000000000000000000000000000000 08 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000003 00000000 00000001     ens5\n")
		}, "0000:00:04.0", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := bindRoot(t)
			tc.prep(t, root)
			s, k, rec := bindStepFor(t, root, &playbooks.BindSpec{Devices: []string{tc.dev}}, "")
			plan, err := s.Check(t.Context())
			if tc.want == nil {
				if err != nil || len(plan.Ops) == 0 {
					t.Fatalf("want a bind planned: %v %+v", err, plan)
				}
				return
			}
			if err == nil {
				t.Fatalf("planned %v, want a refusal", plan.Changes())
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("refusal lacks %q:\n%v", w, err)
				}
			}
			res := steptest.RunStep(t, s)
			if res.Status != provision.StatusFailed || len(k.writes) != 0 || len(rec.Lines()) != 0 {
				t.Fatalf("apply: %s, wrote %q ran %q", res.Status, k.writes, rec.Lines())
			}
		})
	}
}

func put(t *testing.T, root, p, content string) {
	t.Helper()
	mkdirs(t, root, filepath.Dir(p))
	if err := os.WriteFile(filepath.Join(root, p), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mkdirs(t *testing.T, root, p string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
		t.Fatal(err)
	}
}

func ln(t *testing.T, root, target, p string) {
	t.Helper()
	mkdirs(t, root, filepath.Dir(p))
	if err := os.Symlink(target, filepath.Join(root, p)); err != nil {
		t.Fatal(err)
	}
}

// On a live host (a test netns: veths, their addresses, a default route,
// a TCP session) the guard reads the kernel's own tables: va, holding the
// session's local address, its prefix route and the default route, is
// refused for all three; vc, up with only its link-local IPv6 address, is
// not. A child process runs the guard inside the netns (/proc/net is the
// namespace of the process that reads it).
func TestPrivilegedBindGuardNetns(t *testing.T) {
	if os.Getenv("RIG_BIND_GUARD_CHILD") != "" {
		bindGuardChild(t)
		return
	}
	testutil.RequirePrivileged(t)
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2's ip (Makefile DEB_PKGS)")
	}
	ns := fmt.Sprintf("rigbind%d", os.Getpid())
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	ip("netns", "add", ns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	ip("-n", ns, "link", "add", "va", "type", "veth", "peer", "name", "vb")
	ip("-n", ns, "link", "add", "vc", "type", "veth", "peer", "name", "vd")
	ip("-n", ns, "addr", "add", "10.99.0.1/24", "dev", "va")
	ip("-n", ns, "addr", "add", "10.99.0.2/24", "dev", "vb")
	for _, d := range []string{"lo", "va", "vb", "vc", "vd"} {
		ip("-n", ns, "link", "set", d, "up")
	}
	ip("-n", ns, "route", "add", "default", "via", "10.99.0.2", "dev", "va")
	cmd := exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run=^TestPrivilegedBindGuardNetns$", "-test.v")
	cmd.Env = append(os.Environ(), "RIG_BIND_GUARD_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	for _, want := range []string{
		"va: va carries the default route (0.0.0.0/0)",
		"va: va carries routes (10.99.0.0/24)",
		"va: va holds the local address of 1 established TCP session(s) (10.99.0.1:",
		"vc: none\n",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}

// bindGuardChild runs in the netns: a TCP session to 10.99.0.1 from
// 10.99.0.2, then the guard's reasons for va and vc.
func bindGuardChild(t *testing.T) {
	l, err := net.Listen("tcp", "10.99.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("10.99.0.2")}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	a, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	s := &bindStep{h: host.New("/"), driver: "vfio-pci"}
	for _, dev := range []string{"va", "vc"} {
		reasons, err := s.cutReasons(pciFn{netdev: dev})
		if err != nil {
			t.Fatal(err)
		}
		if len(reasons) == 0 {
			fmt.Printf("%s: none\n", dev)
		}
		for _, r := range reasons {
			fmt.Printf("%s: %s\n", dev, r)
		}
	}
}

// The /proc/net parsers take any text: no panic, and what they return is
// well formed (a prefix length within the family, a port within 16 bits).
func FuzzParseProcNet(f *testing.F) {
	f.Add(route4Header + defaultRoute4("ens5"))
	f.Add("   1: B80D0120000000000000000005000000:0016 B80D0120000000000000000009000000:C738 01 00000000:00000000\n")
	f.Add("   0: 0500000A:0016 0900000A:C738 01 00000000:00000000\n")
	f.Add("00000000000000000000000000000000 00 00000000000000000000000000000000 00 fe800000000000000000000000000001 00000400 00000001 00000000 00000003     ens5\n")
	f.Add("20010db8000000000000000000000005 02 40 00 80     ens5\n")
	f.Fuzz(func(t *testing.T, text string) {
		for _, r := range append(parseRoute4(text), parseRoute6(text)...) {
			ones, bits := r.dst.Mask.Size()
			if bits != 8*len(r.dst.IP) && !(bits == 32 && len(r.dst.IP) == 4) || ones > bits {
				t.Fatalf("route %+v: mask %d/%d", r, ones, bits)
			}
		}
		for _, v6 := range []bool{false, true} {
			for _, c := range parseTCP(text, v6) {
				if c.local.Port < 0 || c.local.Port > 65535 || c.local.IP == nil || c.remote.IP == nil {
					t.Fatalf("session %+v", c)
				}
			}
		}
		for _, a := range parseIfInet6(text) {
			if len(a.ip) != 16 || a.iface == "" {
				t.Fatalf("if_inet6 %+v", a)
			}
		}
	})
}
