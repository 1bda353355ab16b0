package lab

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestValidateName(t *testing.T) {
	for _, ok := range []string{"a", "bf2-dpu", "lab-1", "x1234567890123456789"} {
		if err := ValidateName(ok); err != nil {
			t.Errorf("ValidateName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-a", "A", "a_b", "../x", "a/b", "x12345678901234567890", "a b"} {
		if err := ValidateName(bad); err == nil {
			t.Errorf("ValidateName(%q) = nil", bad)
		}
	}
}

// TestLayout: the names and paths other parts (and the report) rely on.
func TestLayout(t *testing.T) {
	l, err := ForName("n1")
	if err != nil {
		t.Fatal(err)
	}
	got := []string{l.NetNS(), l.WireNetNS(), l.NetNSPath(), l.MntPath(), l.CardRoot(), l.FirmwareState(), l.BinDir()}
	want := []string{"rig-lab-n1", "rig-lab-n1-wire", "/run/netns/rig-lab-n1", "/run/rig-lab/n1/mnt", "/run/rig-lab/n1/card", "/run/rig-lab/n1/fwsim.json", "/run/rig-lab/n1/bin"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("layout %v, want %v", got, want)
	}
	in := l.info("bf2-dpu", record{})
	if in.Name != "n1" || in.WireNetNS != "rig-lab-n1-wire" || in.Substitutions["mlx5"] != "net_af_packet" || in.FirmwareState != l.FirmwareState() || in.Machine != "" {
		t.Errorf("lab.json %+v", in)
	}
}

func TestLabEnvAndLookPath(t *testing.T) {
	l, _ := ForName("n1")
	env := l.labEnv([]string{"HOME=/root", "PATH=/usr/bin:/bin", "RIG_STATE_FILE=/var/lib/rig/state.json"})
	if want := []string{"HOME=/root", "PATH=/run/rig-lab/n1/bin:/usr/bin:/bin", "RIG_STATE_FILE=/run/rig/state.json"}; !reflect.DeepEqual(env, want) {
		t.Errorf("labEnv: %v", env)
	}
	if env := l.labEnv(nil); !strings.HasPrefix(env[0], "PATH=/run/rig-lab/n1/bin:/usr/local/sbin") {
		t.Errorf("labEnv without PATH: %v", env)
	}
	dir := t.TempDir()
	exe := filepath.Join(dir, "tool")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "plain"), nil, 0o644)
	path := []string{"PATH=/nonexistent:" + dir}
	if p, err := l.lookPath("tool", path); err != nil || p != exe {
		t.Errorf("lookPath(tool) = %q, %v", p, err)
	}
	if _, err := l.lookPath("plain", path); err == nil {
		t.Error("lookPath found a non-executable file")
	}
	if p, _ := l.lookPath("/x/y", path); p != "/x/y" {
		t.Errorf("lookPath(/x/y) = %q", p)
	}
}

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{`/a\040b`: "/a b", `/plain`: "/plain", `/t\011x\134y`: "/t\tx\\y", `/end\04`: `/end\04`} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzUnescapeMount: mountinfo paths (kernel output) never panic, and a
// path without a backslash comes back unchanged.
func FuzzUnescapeMount(f *testing.F) {
	for _, s := range []string{`/a\040b`, `\`, `\0`, `\777`, `/x\12`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := unescapeMount(s)
		if !strings.Contains(s, `\`) && got != s {
			t.Fatalf("unescapeMount(%q) = %q", s, got)
		}
		if len(got) > len(s) {
			t.Fatalf("unescapeMount(%q) grew: %q", s, got)
		}
	})
}

func TestNamesWithoutStateRoot(t *testing.T) {
	if _, err := os.Stat(StateRoot); err == nil {
		t.Skip(StateRoot + " exists here (labs are up)")
	}
	names, err := Names()
	if err != nil || len(names) != 0 {
		t.Errorf("Names() = %v, %v", names, err)
	}
}

// An RDMA port follows its netdev: DOWN/Disabled when admin-down (as the
// cx6dx-host fixture's admin-down port), DOWN/Polling without a partner
// (as `rig lab link N p0 down` always made it), ACTIVE/LinkUp with one.
func TestPortState(t *testing.T) {
	for _, c := range []struct {
		admin, carrier bool
		state, phys    string
	}{
		{false, false, "1: DOWN", "3: Disabled"},
		{false, true, "1: DOWN", "3: Disabled"},
		{true, false, "1: DOWN", "2: Polling"},
		{true, true, "4: ACTIVE", "5: LinkUp"},
	} {
		if s, p := PortState(c.admin, c.carrier); s != c.state || p != c.phys {
			t.Errorf("PortState(admin %v, carrier %v) = %q, %q; want %q, %q", c.admin, c.carrier, s, p, c.state, c.phys)
		}
	}
}

// TestParseSysctlConf: sysctl.d(5) lines; only net.* keys are the lab's.
func TestParseSysctlConf(t *testing.T) {
	sets, notes := parseSysctlConf("/etc/sysctl.d/90-rig.conf", "# c\n; c\nnet.core.somaxconn = 1024\n-net.ipv4.ip_forward=1\nvm.swappiness = 10\nnet.ipv4.conf.*.rp_filter = 0\nbad line\n")
	want := []sysctlSetting{{"/etc/sysctl.d/90-rig.conf", "net.core.somaxconn", "1024", false}, {"/etc/sysctl.d/90-rig.conf", "net.ipv4.ip_forward", "1", true}}
	if !reflect.DeepEqual(sets, want) {
		t.Errorf("sets %+v", sets)
	}
	j := strings.Join(notes, "\n")
	if len(notes) != 3 || !strings.Contains(j, ":5: vm.swappiness is the host kernel's setting") || !strings.Contains(j, ":6: net.ipv4.conf.*.rp_filter") || !strings.Contains(j, `:7: "bad line"`) {
		t.Errorf("notes %q", notes)
	}
}
