package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rig/bench"
	"rig/internal/labinfo"
	"rig/internal/testutil"
	"rig/internal/testutil/sysfstree"
)

// dryRunPlan runs `rig bench ... --dry-run -o json` and decodes the plan.
func dryRunPlan(t *testing.T, args ...string) (int, benchPlan, string) {
	t.Helper()
	code, out, errOut := rig(t, append(args, "--dry-run", "-o", "json")...)
	var p benchPlan
	if code == exitOK {
		if err := json.Unmarshal([]byte(out), &p); err != nil || p.SchemaVersion != benchPlanSchema {
			t.Fatalf("rig %v: %v\n%s", args, err, out)
		}
	}
	return code, p, errOut
}

// Ports named by netdev on the fixture hosts: each is named by the role
// rig's inventory gives it, with the mlx5 devargs its function takes.
func TestBenchPortNetdevRolesOnFixtures(t *testing.T) {
	for _, c := range []struct {
		host, netdev, role, label, devargs string
	}{
		{"bf2-dpu-arm", "p0", "uplink", "uplink p0", "0000:03:00.0"},
		{"bf2-dpu-arm", "pf0hpf", "host-pf-rep", "host-PF representor pf0hpf", "0000:03:00.0,representor=[65535]"},
		{"bf3-dpu-arm", "pf1hpf", "host-pf-rep", "host-PF representor pf1hpf", "0000:03:00.1,representor=[65535]"},
		{"bf2-host", "enp225s0f0np0", "host-pf", "host PF enp225s0f0np0", "0000:e1:00.0"},
		{"cx6dx-host", "enp59s0f1np1", "uplink", "uplink enp59s0f1np1", "0000:3b:00.1"},
	} {
		code, p, errOut := dryRunPlan(t, "bench", "rx", "--port-netdev", c.netdev, "--root", "../../testdata/hosts/"+c.host)
		if code != exitOK || len(p.Ports) != 1 {
			t.Errorf("%s %s: exit %d %+v\n%s", c.host, c.netdev, code, p, errOut)
			continue
		}
		o := p.Ports[0]
		if o.Netdev != c.netdev || o.Role != c.role || o.Label != c.label || o.Devargs != c.devargs || o.Port != c.devargs || o.Substitution != "" ||
			!strings.Contains(strings.Join(p.EAL, " "), "-a "+c.devargs) {
			t.Errorf("%s %s: %+v, EAL %v", c.host, c.netdev, o, p.EAL)
		}
	}
	// the BlueField path of seed 000: p0 and pf0hpf in one fwd, one -a
	code, out, errOut := rig(t, "bench", "fwd", "--port-netdev", "p0", "--port-netdev", "pf0hpf", "--root", "../../testdata/hosts/bf2-dpu-arm", "--dry-run")
	for _, want := range []string{
		"port 0: uplink p0 (netdev p0, role uplink), devargs 0000:03:00.0\n",
		"port 1: host-PF representor pf0hpf (netdev pf0hpf, role host-pf-rep), devargs 0000:03:00.0,representor=[65535]\n",
		" -a 0000:03:00.0,representor=[65535] ",
	} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("fwd p0 pf0hpf: exit %d, want %q in\n%s%s", code, want, out, errOut)
		}
	}
}

// A netdev rig cannot give devargs for is a usage error that says what
// sysfs shows and what to give instead; so is one that does not exist.
func TestBenchPortNetdevRefusals(t *testing.T) {
	for _, c := range []struct{ host, netdev, want, fix string }{
		{"bf3-dpu-arm", "en3f0pf0sf0", "an SF representor", `give raw devargs: "0000:03:00.0,representor=sf0"`},
		{"cx6dx-host", "enp59s0f0v0", "no phys_port_name", `give raw devargs: "0000:3b:00.2"`},
		{"bf2-dpu-arm", "tmfifo_net0", "not an mlx5 port", "--port instead of --port-netdev"},
		{"bf2-dpu-arm", "p7", "no netdev p7", "`rig inventory`"},
	} {
		code, _, errOut := rig(t, "bench", "rx", "--port-netdev", c.netdev, "--root", "../../testdata/hosts/"+c.host, "--dry-run")
		if code != exitUsage || !strings.Contains(errOut, "--port-netdev "+c.netdev) || !strings.Contains(errOut, c.want) || !strings.Contains(errOut[strings.Index(errOut, "\n  fix: ")+1:], c.fix) {
			t.Errorf("%s %s: exit %d, want %d with %q and fix %q:\n%s", c.host, c.netdev, code, exitUsage, c.want, c.fix, errOut)
		}
	}
	if code, _, errOut := rig(t, "bench", "rx", "--port-netdev", "p0", "--port-netdev", "p0", "--root", "../../testdata/hosts/bf2-dpu-arm", "--dry-run"); code != exitUsage || !strings.Contains(errOut, "given twice") {
		t.Errorf("twice: exit %d %s", code, errOut)
	}
	// resolved in a fixture, run here: refused before anything starts
	if code, _, errOut := rig(t, "bench", "rx", "--port-netdev", "p0", "--root", "../../testdata/hosts/bf2-dpu-arm", "--count", "1"); code != exitUsage || !strings.Contains(errOut, "add --dry-run") {
		t.Errorf("fixture run: exit %d %s", code, errOut)
	}
	if code, _, errOut := rig(t, "bench", "rx", "--port", "0000:03:00.0,,x=1", "--dry-run"); code != exitUsage || !strings.Contains(errOut, "malformed devargs: empty argument") {
		t.Errorf("bad devargs: exit %d %s", code, errOut)
	}
}

// labRoot is a host root that looks like the inside of a virtual lab of
// the bf2-dpu kind: the fixture's sysfs and a lab.json substituting
// net_af_packet for mlx5.
func labRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	sysfstree.Copy(t, "../../testdata/hosts/bf2-dpu-arm/sys", filepath.Join(root, "sys"))
	if err := os.MkdirAll(filepath.Join(root, "run/rig"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := labinfo.Write(filepath.Join(root, "run/rig"), &labinfo.Info{Name: "a", Kind: "bf2-dpu", Substitutions: map[string]string{"mlx5": "net_af_packet"}}); err != nil {
		t.Fatal(err)
	}
	return root
}

// In a virtual lab a port named by netdev is net_af_packet on the same
// netdev, named by its role, and the report says what stands in for
// mlx5; a profile's mlx5 devargs are not applied there, its queues are
// (af_packet gets as many queue pairs).
func TestBenchPortNetdevInLab(t *testing.T) {
	root := labRoot(t)
	code, p, errOut := dryRunPlan(t, "bench", "loop", "--vdev", "net_ring0", "--port-netdev", "pf0hpf", "--profile", "mlx5-inline-mprq", "--root", root)
	if code != exitOK || len(p.Ports) != 2 {
		t.Fatalf("exit %d %+v\n%s", code, p, errOut)
	}
	o := p.Ports[1]
	if p.Ports[0].Port != "net_ring0" || o.Label != "host-PF representor pf0hpf" || o.Port != "net_af_packet_pf0hpf" ||
		o.Devargs != "net_af_packet_pf0hpf,iface=pf0hpf,framecnt=8192,qpairs=3" ||
		!strings.Contains(o.Substitution, "pf0hpf: mlx5 devargs 0000:03:00.0,representor=[65535] substituted by net_af_packet_pf0hpf,iface=pf0hpf,framecnt=8192 (virtual lab a: no mlx5 hardware here") ||
		!strings.Contains(o.Substitution, "mlx5_args mprq_en=1,") || !strings.Contains(o.Substitution, "qpairs=3") {
		t.Errorf("lab port: %+v", o)
	}
	c := p.Config
	if c.RxQ != 3 || c.Profile != "mlx5-inline-mprq" || !strings.Contains(strings.Join(p.EAL, " "), "--no-pci") || len(p.Notes) != 1 || !strings.Contains(p.Notes[0], "not applied to port net_ring0") {
		t.Errorf("lab config: %+v notes %v EAL %v", c, p.Notes, p.EAL)
	}
}

// `rig bench profiles` lists each profile with its devargs, settings and
// seed; --profile expands it, and explicit flags win.
func TestBenchProfilesCommandAndOverride(t *testing.T) {
	code, out, _ := rig(t, "bench", "profiles")
	for _, want := range []string{
		"mlx5-inline-mprq: data inline mode", "mlx5-no-inline: non-inline mode",
		"source:   seeds/001_c111fcc72c92cd67.txt (Ampere Altra DPDK guide, ConnectX-6), CMD-1",
		"devargs:  mprq_en=0,rxqs_min_mprq=1,rxq_cqe_comp_en=1,rxq_pkt_pad_en=1,txq_inline_max=0,txq_inline_mpw=0,txqs_min_inline=1,txq_mpw_en=1",
		"settings: --rxq 3 --txq 3 --rxd 1024 --txd 1024 --burst 128 --mbuf-cache 512",
	} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("profiles: exit %d, want %q in\n%s", code, want, out)
		}
	}
	code, out, _ = rig(t, "bench", "profiles", "-o", "json")
	var js struct {
		SchemaVersion string
		Profiles      []bench.Profile
	}
	if code != exitOK || json.Unmarshal([]byte(out), &js) != nil || js.SchemaVersion != benchProfilesSchema || len(js.Profiles) != 2 || js.Profiles[0].Settings.Burst != 128 {
		t.Errorf("profiles json: exit %d %s", code, out)
	}
	code, p, errOut := dryRunPlan(t, "bench", "fwd", "--port", "0000:01:00.0,txq_inline_max=256", "--profile", "mlx5-inline-mprq", "--rxq", "2", "--burst", "64")
	c := p.Config
	if code != exitOK || c.RxQ != 2 || c.TxQ != 3 || c.Burst != 64 || c.MbufCache != 512 || c.RxD != 1024 ||
		c.Ports[0] != "0000:01:00.0,txq_inline_max=256,mprq_en=1,rxqs_min_mprq=1,rxq_cqe_comp_en=1,rxq_pkt_pad_en=1,txq_inline_mpw=1024,txqs_min_inline=1,txq_mpw_en=1" {
		t.Errorf("override: exit %d %+v\n%s", code, c, errOut)
	}
	if code, _, errOut := rig(t, "bench", "fwd", "--vdev", "net_null0", "--profile", "mlx5-turbo", "--dry-run"); code != exitUsage || !strings.Contains(errOut, "no such profile (known: mlx5-inline-mprq, mlx5-no-inline)") {
		t.Errorf("unknown profile: exit %d %s", code, errOut)
	}
	// the expansion is checked like any flag: an explicit zero is refused
	if code, _, errOut := rig(t, "bench", "fwd", "--vdev", "net_null0", "--profile", "mlx5-no-inline", "--rxq", "0", "--dry-run"); code != exitUsage || !strings.Contains(errOut, "--rxq 0") {
		t.Errorf("--rxq 0 with a profile: exit %d %s", code, errOut)
	}
}

// A port given by devargs rather than its device name is found (the
// first port they match, as OvS finds one: rte_eth_iterator), and a port
// named by netdev keeps its role through a child's run into the result.
func TestPrivilegedBenchPortByDevargsKeepsRole(t *testing.T) {
	testutil.RequirePrivileged(t)
	ch := childOfThisTest(t, "")
	cfg := bench.Config{Role: bench.RoleLoop, VDevs: []string{"net_ring0"}, Ports: []string{"net_ring0,x=1"}, Count: 10000, RxD: 512, TxD: 512, NoHuge: true,
		PortOrigins: []bench.PortOrigin{{Port: "net_ring0,x=1", Netdev: "r0", Role: "uplink", Label: "uplink r0", Devargs: "net_ring0,x=1"}}}
	r, err := ch.Run(context.Background(), cfg)
	if err != nil || r.Received != 10000 || len(r.Ports) != 1 || r.Ports[0].Origin == nil || r.Ports[0].DisplayName() != "uplink r0" {
		t.Fatalf("ring by devargs: %+v, %v", r, err)
	}
	var b strings.Builder
	r.PrintSummary(&b)
	if !strings.Contains(b.String(), "\n  uplink r0  net_ring ") || !strings.Contains(b.String(), "port uplink r0: netdev r0 (uplink), devargs net_ring0,x=1\n") {
		t.Errorf("summary:\n%s", b.String())
	}
	cfg.Ports = []string{"net_ring1,x=1"}
	if _, err := ch.Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "port net_ring1,x=1") {
		t.Errorf("devargs of no port: %v", err)
	}
}
