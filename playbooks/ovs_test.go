package playbooks

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseOVSVdevPlaybook(t *testing.T) {
	pb, err := Load("ovs-vdev")
	if err != nil {
		t.Fatal(err)
	}
	o := pb.OVS
	if o == nil || len(o.Bridges) != 1 || o.Bridges[0].Datapath() != "netdev" || len(o.Bridges[0].Ports) != 2 {
		t.Fatalf("ovs: %+v", o)
	}
	oc := o.Config.OtherConfig()
	if oc["dpdk-init"] != "try" || oc["dpdk-socket-mem"] != "128" || oc["hw-offload"] != "false" || !strings.Contains(oc["dpdk-extra"], "--no-pci") {
		t.Fatalf("other_config: %v", oc)
	}
	if p := o.Bridges[0].Ports[1]; p.PortType() != "dpdk" || p.Devargs != "net_null1" || p.NRxq != 2 || p.MTURequest != 1500 {
		t.Fatalf("port: %+v", p)
	}
}

// The check playbook asks OvS for per-port pools (OVSConfig.PerPortMemory).
func TestParseOVSCheckPerPortMemory(t *testing.T) {
	pb, err := Load("ovs-check")
	if err != nil {
		t.Fatal(err)
	}
	if oc := pb.OVS.Config.OtherConfig(); oc["per-port-memory"] != "true" {
		t.Fatalf("other_config: %v, want per-port-memory=true", oc)
	}
	pb, err = Parse("t.yaml", []byte("ovs:\n  config:\n    per-port-memory: maybe\n"))
	if err == nil || !strings.Contains(err.Error(), "per-port-memory") {
		t.Fatalf("per-port-memory: maybe: %v, want an error naming the field", err)
	}
}

func TestParseOVSScalarsAsStrings(t *testing.T) {
	// unquoted YAML `true` and `1024` still mean the OvS strings
	pb, err := Parse("t.yaml", []byte("ovs:\n  config:\n    dpdk-init: true\n    dpdk-socket-mem: 1024\n"))
	if err != nil {
		t.Fatal(err)
	}
	if oc := pb.OVS.Config.OtherConfig(); oc["dpdk-init"] != "true" || oc["dpdk-socket-mem"] != "1024" || len(oc) != 2 {
		t.Fatalf("other_config: %v", oc)
	}
}

func TestParseOVSErrors(t *testing.T) {
	src := `ovs:
  config:
    dpdk-init: maybe
    dpdk-socket-mem: "1G"
    pmd-cpu-mask: "0x0"
    dpdk-lcore-mask: zz
  bridges:
    - name: br-this-name-is-too-long
      ports:
        - name: p0
        - name: p0
          devargs: net_null0
        - name: v0
          type: dpdkvhostuserclient
        - name: x0
          type: tap
          devargs: net_null0
          n_rxq: -1
          mtu_request: 10
    - name: brs
      datapath_type: system
      ports:
        - name: s0
          devargs: "0000:03:00.0 ,x=1"
        - name: s1
          devargs: net_null0
          vhost-server-path: rel/path
`
	_, err := Parse("bad.yaml", []byte(src))
	if err == nil {
		t.Fatal("want errors")
	}
	msg := err.Error()
	for _, want := range []string{
		"bad.yaml:3: ovs.config.dpdk-init: want true, try or false",
		"bad.yaml:4: ovs.config.dpdk-socket-mem: want MB per NUMA socket",
		"bad.yaml:5: ovs.config.pmd-cpu-mask: mask \"0x0\" selects no CPU",
		"bad.yaml:6: ovs.config.dpdk-lcore-mask: want a hex CPU mask",
		"bad.yaml:8: ovs.bridges[0].name: \"br-this-name-is-too-long\" is longer than 15 bytes",
		"bad.yaml:10: ovs.bridges[0].ports[0].devargs: a dpdk port needs devargs",
		"bad.yaml:11: ovs.bridges[0].ports[1].name: port \"p0\" is already listed",
		"bad.yaml:13: ovs.bridges[0].ports[2].vhost-server-path: a dpdkvhostuserclient port needs",
		"bad.yaml:16: ovs.bridges[0].ports[3].type: want dpdk, dpdkvhostuser or dpdkvhostuserclient",
		"ovs.bridges[0].ports[3].devargs: only dpdk ports take devargs",
		"bad.yaml:18: ovs.bridges[0].ports[3].n_rxq: want 1..1024",
		"bad.yaml:19: ovs.bridges[0].ports[3].mtu_request: want 68..65535",
		"ovs.bridges[1].ports[0].type: dpdk ports need a netdev bridge",
		"ovs.bridges[1].ports[0].devargs: must not contain whitespace",
		"ovs.bridges[1].ports[1].vhost-server-path: only dpdkvhostuserclient ports",
		"ovs.bridges[1].ports[1].devargs: same devargs as bridges[0].ports[1]",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing %q in:\n%s", want, msg)
		}
	}
	if _, err := Parse("u.yaml", []byte("ovs:\n  bogus: 1\n")); err == nil || !strings.Contains(err.Error(), "u.yaml:2: ovs.bogus: unknown field") {
		t.Errorf("unknown key: %v", err)
	}
}

// Oversized and malformed values fail validation with file:line: field, what
// is wrong and the fix, instead of reaching exec (a 200,000-byte devargs used
// to fail as "argument list too long" after the bridge was created).
func TestParseOVSLimits(t *testing.T) {
	huge := "net_null0,x=" + strings.Repeat("a", 200000)
	src := "ovs:\n" +
		"  config:\n" +
		"    dpdk-extra: \"" + strings.Repeat("-", 2000) + "\"\n" + // 3
		"    pmd-cpu-mask: \"0x" + strings.Repeat("f", 300) + "\"\n" + // 4
		"  bridges:\n" +
		"    - name: br0\n" +
		"      ports:\n" +
		"        - name: p0\n" +
		"          devargs: \"" + huge + "\"\n" + // 9
		"        - name: port-name-16byte\n" + // 10
		"          devargs: net_null1,,x=1\n" + // 11
		"        - name: p2\n" +
		"          devargs: net_" + strings.Repeat("n", 70) + "\n" + // 13
		"        - name: v0\n" +
		"          type: dpdkvhostuserclient\n" +
		"          vhost-server-path: /" + strings.Repeat("s", 120) + "\n" + // 16
		"        - name: 'bad/name'\n" // 17
	_, err := Parse("big.yaml", []byte(src))
	if err == nil {
		t.Fatal("want errors")
	}
	msg := err.Error()
	for _, want := range []string{
		"big.yaml:3: ovs.config.dpdk-extra: value is 2000 bytes, more than the 1024 an other_config value may have; shorten it",
		"big.yaml:4: ovs.config.pmd-cpu-mask: cpu mask of 300 hex digits: at most 256 (CPUs 0..1023); write a mask of the CPUs to use",
		`big.yaml:9: ovs.bridges[0].ports[0].devargs: "net_null0,x=` + strings.Repeat("a", 28) + `"... (200012 bytes) is longer than 1024 bytes; devargs are <pci-address|vdev-name>[,key=value...]`,
		`big.yaml:10: ovs.bridges[0].ports[1].name: "port-name-16byte" is longer than 15 bytes (IFNAMSIZ, the kernel's interface name limit); use a shorter name`,
		`big.yaml:11: ovs.bridges[0].ports[1].devargs: malformed devargs "net_null1,,x=1": empty argument (two commas in a row or a trailing comma); write <pci-address|vdev-name>[,key=value...]`,
		"big.yaml:13: ovs.bridges[0].ports[2].devargs: device name",
		"is longer than 63 bytes (DPDK's RTE_DEV_NAME_MAX_LEN)",
		"big.yaml:16: ovs.bridges[0].ports[3].vhost-server-path:",
		"is longer than 107 bytes (a unix socket path)",
		`big.yaml:17: ovs.bridges[0].ports[4].name: want a port name of letters, digits`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing %q in:\n%s", want, msg)
		}
	}
	if len(msg) > 4000 {
		t.Errorf("error echoes the huge values (%d bytes)", len(msg))
	}
}

// Ports named by netdev: exactly one of devargs and netdev for a dpdk
// port, valid names, one netdev per port, mlx5_args only with netdev.
func TestParseOVSNetdevPorts(t *testing.T) {
	src := `ovs:
  bridges:
    - name: br0
      ports:
        - name: a
          netdev: p0
          mlx5_args: "txq_inline_max=1024,txq_mpw_en=1"
        - name: b
          netdev: p1
          devargs: "0000:03:00.1"
        - name: c
          netdev: p0
        - name: d
          type: dpdkvhostuser
          netdev: p2
        - name: e
          devargs: net_null0
          mlx5_args: "txq_mpw_en=1"
        - name: f
          netdev: "../x"
        - name: g
          netdev: "a,b"
        - name: h
          netdev: pf0hpf
          mlx5_args: "representor=[0]"
        - name: i
          netdev: pf1hpf
          mlx5_args: "txq_mpw_en"
`
	_, err := Parse("n.yaml", []byte(src))
	if err == nil {
		t.Fatal("want errors")
	}
	msg := err.Error()
	for _, want := range []string{
		"n.yaml:9: ovs.bridges[0].ports[1].netdev: give devargs or netdev, not both",
		`n.yaml:12: ovs.bridges[0].ports[2].netdev: netdev "p0" already backs bridges[0].ports[0]`,
		"n.yaml:15: ovs.bridges[0].ports[3].netdev: only dpdk ports take netdev",
		"n.yaml:18: ovs.bridges[0].ports[4].mlx5_args: mlx5_args go with netdev",
		`n.yaml:20: ovs.bridges[0].ports[5].netdev: "../x" is not a netdev name`,
		`n.yaml:22: ovs.bridges[0].ports[6].netdev: "a,b": rig cannot pass a netdev name with ','`,
		"n.yaml:25: ovs.bridges[0].ports[7].mlx5_args: \"representor=[0]\": representor is decided by the netdev",
		`n.yaml:28: ovs.bridges[0].ports[8].mlx5_args: "txq_mpw_en": argument "txq_mpw_en" is not key=value`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing %q in:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "ovs.bridges[0].ports[0].") {
		t.Errorf("port a (netdev p0 with mlx5_args) is valid:\n%s", msg)
	}
	if n := strings.Count(msg, "\n") + 1; n != 8 {
		t.Errorf("%d errors, want 8:\n%s", n, msg)
	}
}

// OVS-DOCA's layout (NVIDIA DPF DPUFlavor): with config.doca-init: true a
// dpdk port may go without devargs and netdev, OVS-DOCA resolving its
// name; without it the same port is refused at file:line, the error
// saying both fixes and what upstream OvS reports for such a port.
func TestParseOVSDOCAByName(t *testing.T) {
	const ports = `  bridges:
    - name: br-sfc
      ports:
        - name: p0
        - name: pf0hpf
          mtu_request: 9216
        - name: vnull0
          devargs: net_null0
`
	pb, err := Parse("doca.yaml", []byte("ovs:\n  config:\n    doca-init: true\n    hw-offload: true\n"+ports))
	if err != nil {
		t.Fatal(err)
	}
	o := pb.OVS
	if !o.DOCA() || o.Config.OtherConfig()["doca-init"] != "true" {
		t.Fatalf("doca-init: %+v", o.Config)
	}
	by := map[string]bool{}
	for _, p := range o.Bridges[0].Ports {
		by[p.Name] = p.ByNetdevName()
	}
	if !by["p0"] || !by["pf0hpf"] || by["vnull0"] {
		t.Fatalf("by netdev name: %v", by)
	}

	for _, head := range []string{"ovs:\n", "ovs:\n  config:\n    doca-init: false\n"} {
		_, err = Parse("up.yaml", []byte(head+ports))
		line := strings.Count(head, "\n") + 4 // "- name: p0" is the 4th line of ports
		want := fmt.Sprintf(`up.yaml:%d: ovs.bridges[0].ports[0].devargs: a dpdk port needs devargs: a PCI address (0000:03:00.0), a representor (0000:03:00.0,representor=[65535]) or a vdev (net_null0); `+
			`or give netdev: NAME (p0, pf0hpf) and rig resolves its devargs. A port named by its netdev alone works only on NVIDIA's OVS-DOCA: `+
			`if this host runs it, set ovs.config.doca-init: true (upstream Open vSwitch rejects the port: "'p0' is missing 'options:dpdk-devargs'")`, line)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "ports[1].devargs") {
			t.Errorf("%q: got %v\nwant %s", head, err, want)
		}
	}

	// one netdev backs one port, whether named by netdev: or by name
	_, err = Parse("dup.yaml", []byte("ovs:\n  config:\n    doca-init: true\n  bridges:\n    - name: b\n      ports:\n        - name: x\n          netdev: p0\n        - name: p0\n          mlx5_args: txq_mpw_en=1\n"))
	if err == nil || !strings.Contains(err.Error(), `dup.yaml:9: ovs.bridges[0].ports[1].name: netdev "p0" already backs bridges[0].ports[0]`) ||
		!strings.Contains(err.Error(), "dup.yaml:10: ovs.bridges[0].ports[1].mlx5_args: mlx5_args go with netdev") {
		t.Errorf("dup: %v", err)
	}
}

// The embedded OVS-DOCA playbook: doca-init, p0 and pf0hpf by netdev name
// with DPF's MTU, and a header saying what it mirrors and how to run it.
func TestBF3DOCAPlaybook(t *testing.T) {
	pb, err := Load("bf3-doca")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := Embedded("bf3-doca")
	head := string(raw[:strings.Index(string(raw), "\nname:")])
	if !pb.OVS.DOCA() || len(pb.OVS.Bridges) != 1 || !strings.Contains(head, "rig up -p bf3-doca") || !strings.Contains(head, "DPUFlavor") {
		t.Fatalf("bf3-doca: %+v\n%s", pb.OVS, head)
	}
	for _, p := range pb.OVS.Bridges[0].Ports {
		if !p.ByNetdevName() || p.MTURequest != 9216 {
			t.Errorf("port %+v", p)
		}
	}
	if pb.OVS.Config.DPDKInit != "" {
		t.Errorf("dpdk-init %q: OVS-DOCA starts DPDK with doca-init", pb.OVS.Config.DPDKInit)
	}
}

// A representor list with a comma inside its brackets survives the
// playbook whole: parsed, validated and kept as written.
func TestRepresentorListSurvivesPlaybook(t *testing.T) {
	const d = "0000:03:00.0,representor=[0,65535]"
	pb, err := Parse("r.yaml", []byte("ovs:\n  bridges:\n    - name: br0\n      datapath_type: netdev\n      ports:\n        - name: p0\n          devargs: \""+d+"\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := pb.OVS.Bridges[0].Ports[0].Devargs; got != d {
		t.Errorf("devargs = %q, want %q", got, d)
	}
	if msg := CheckMLX5Args("dv_xmeta_en=1,txq_inline_max=[0,1]"); msg != "" {
		t.Errorf("mlx5_args with a bracketed list: %s", msg)
	}
	if msg := CheckMLX5Args("x=[1,2],representor=[0,65535]"); !strings.Contains(msg, "representor is decided by the netdev") {
		t.Errorf("mlx5_args naming a representor after a bracketed list: %q", msg)
	}
}

// pmd-maxsleep is OvS's microseconds, 0 to 10000; anything else is refused
// naming the field before any write.
func TestParseOVSPMDMaxSleep(t *testing.T) {
	pb, err := Parse("t.yaml", []byte("ovs:\n  config:\n    pmd-maxsleep: \"500\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if oc := pb.OVS.Config.OtherConfig(); oc["pmd-maxsleep"] != "500" {
		t.Fatalf("other_config: %v, want pmd-maxsleep=500", oc)
	}
	for _, bad := range []string{"10001", "-1", "0x10", "1ms", "1e3"} {
		_, err := Parse("t.yaml", []byte("ovs:\n  config:\n    pmd-maxsleep: \""+bad+"\"\n"))
		if err == nil || !strings.Contains(err.Error(), "config.pmd-maxsleep") || !strings.Contains(err.Error(), "10000") {
			t.Errorf("pmd-maxsleep %q: %v, want an error naming config.pmd-maxsleep and its range", bad, err)
		}
	}
}
