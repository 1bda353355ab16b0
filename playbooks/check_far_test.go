package playbooks

import (
	"strings"
	"testing"
)

// far_ends in a playbook, and --far-end over it: each far end a netns or
// a serve with a far port; bad values name their field and the fix.
func TestCheckFarEnds(t *testing.T) {
	pb, err := Parse("c.yaml", []byte(checkOVS+`check:
  topology: through-ports
  ports: [p0, pf0hpf]
  direction: both
  rate: 100kpps
  far_ends:
    p0: {serve: "10.0.0.2:7400", netdev: ens1f0np0, token_file: /etc/rig/peer.token}
    pf0hpf: {netns: wire}
`))
	if err != nil {
		t.Fatal(err)
	}
	c := pb.Check
	if e := c.FarEnds["p0"]; !e.Remote() || e.Netdev != "ens1f0np0" || c.FarEnds["pf0hpf"].NetNS != "wire" || c.DirectionOrDefault() != DirectionBoth {
		t.Fatalf("far ends %+v", c.FarEnds)
	}
	if err := c.SetFarEnds([]string{"pf0hpf:serve=192.168.100.1:7400,netdev=ens1f0np0"}); err != nil || c.FarEnds["pf0hpf"].Serve != "192.168.100.1:7400" || c.FarEnds["pf0hpf"].TokenFileOrDefault() != DefaultTokenFile {
		t.Fatalf("--far-end over the playbook: %v %+v", err, c.FarEnds)
	}
	for _, c := range []struct{ body, want string }{
		{"  far_ends: {p9: {netns: wire}}\n", `far_ends.p9: "p9" is not one of the check's ports`},
		{"  far_ends: {p0: {netns: wire, serve: \"h:1\"}}\n", "far_ends.p0.netns: give netns"},
		{"  far_ends: {p0: {netdev: x}}\n", "far_ends.p0.serve: want serve: HOST:PORT"},
		{"  far_ends: {p0: {serve: nope}}\n", "far_ends.p0.serve: want HOST:PORT"},
		{"  far_ends: {p0: {serve: \"h:1\", netdev: a, pci: \"0000:03:00.0\"}}\n", "by netdev or by pci, not both"},
		{"  far_ends: {p0: {serve: \"h:1\", token_file: rel}}\n", "token_file: want an absolute path"},
		{"  direction: sideways\n", "direction: want one"},
		{"  direction: both\n  search: ndr\n", "the zero-loss search (no rate, or search: ndr) runs one way"},
		{"  direction: both\n", "the zero-loss search (no rate, or search: ndr) runs one way"},
	} {
		_, err := Parse("c.yaml", []byte(checkOVS+"check:\n  topology: through-ports\n  ports: [p0, pf0hpf]\n"+c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.body, err, c.want)
		}
	}
	if _, err := Parse("c.yaml", []byte(checkOVS+"check:\n  far_ends: {p0: {netns: wire}}\n")); err == nil || !strings.Contains(err.Error(), "only through-ports takes far_ends") {
		t.Errorf("through-bridge with far_ends: %v", err)
	}
	for _, c := range []struct{ v, want string }{
		{"p0", "want PORT:key=value"},
		{"p0:serve=h:1,serve=h:2", "serve given twice"},
		{"p0:colour=red", "unknown key"},
		{"p0:serve=h:1,netdev=a b", "netdev: want a netdev name"},
		{"bad port:netns=x", "not a bridge port name"},
	} {
		if _, _, err := ParseFarEndFlag(c.v); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--far-end %s: %v, want %q", c.v, err, c.want)
		}
	}
	if port, e, err := ParseFarEndFlag("p0:serve=[fd00::2]:7400,pci=0000:03:00.0,token-file=/t"); err != nil || port != "p0" || e.PCI != "0000:03:00.0" || e.TokenFile != "/t" || e.Serve != "[fd00::2]:7400" {
		t.Errorf("--far-end with IPv6 and a PCI port: %q %+v %v", port, e, err)
	}
	if n, ok := HostPFRepresentor("pf1hpf"); !ok || n != 1 {
		t.Errorf("pf1hpf: %d %v", n, ok)
	}
	if _, ok := HostPFRepresentor("p0"); ok {
		t.Error("p0 is no host-PF representor")
	}
}
