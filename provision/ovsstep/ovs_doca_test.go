package ovsstep

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"rig/internal/host"
	"rig/internal/testutil"
	"rig/internal/testutil/fakeexec"
	"rig/internal/testutil/hugetest"
	"rig/internal/testutil/sysfstree"
	"rig/ovs"
	"rig/ovs/diagnose"
	"rig/ovs/ovstest"
	"rig/playbooks"
	"rig/provision"
	"rig/provision/steptest"
)

// docaSpec is the OVS-DOCA layout of NVIDIA's DPF DPUFlavor on the BF3
// fixture: doca-init and hw-offload, a netdev bridge, p0 and pf0hpf by
// netdev name (pf0hpf with mtu_request 9216), and a vdev with devargs.
// ../ovs/testdata/state-doca-byname.json is that state in OVS-DOCA.
func docaSpec() *playbooks.OVSSpec {
	t := true
	return &playbooks.OVSSpec{
		Config: playbooks.OVSConfig{DOCAInit: &t, HWOffload: &t, DPDKSocketMem: "128"},
		Bridges: []playbooks.OVSBridge{{Name: "br-sfc", DatapathType: "netdev", Ports: []playbooks.OVSPort{
			{Name: "p0"}, {Name: "pf0hpf", MTURequest: 9216}, {Name: "vnull0", Devargs: "net_null0"},
		}}},
	}
}

func ovsSample(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "ovs", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// docaEmpty is a fresh OVS-DOCA database: the recorded empty state with
// the doca_initialized column OVS-DOCA's schema adds (false: doca-init is
// not set yet).
func docaEmpty(t *testing.T) []byte {
	return []byte(strings.NewReplacer(`{"data":[[`, `{"data":[[false,`, `"headings":["dpdk_initialized"`, `"headings":["doca_initialized","dpdk_initialized"`).
		Replace(string(steptest.Sample(t, "state-empty.json"))))
}

// bf3Host is systemHost with the BlueField-3 Arm fixture's sysfs.
func bf3Host(t *testing.T, f *fakeexec.Recorder) *host.Host {
	t.Helper()
	h := systemHost(t, f)
	sysfstree.Copy(t, "../../testdata/hosts/bf3-dpu-arm/sys", filepath.Join(h.Root, "sys"))
	return h
}

// Apply twice on OVS-DOCA: ports by netdev name get type dpdk and no
// devargs, the plan notes what each name resolves to, and the second
// apply writes nothing.
func TestOVSStepDOCAByNameApplyTwice(t *testing.T) {
	f := fakeOVS(docaEmpty(t), ovsSample(t, "state-doca-byname.json"))
	h := bf3Host(t, f)
	step, _ := NewOVSStep(&provision.Env{Host: h}, docaSpec())
	rep, err := (&provision.Runner{Steps: []provision.Step{step}}).Execute(context.Background(), provision.RunApply, provision.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	st := rep.Steps[0]
	notes := strings.Join(st.Notes, "\n")
	if st.Status != provision.StatusChanged || !strings.Contains(notes, "p0: no devargs, OVS-DOCA resolves it by its netdev name: uplink (phys_port_name p0) of 0000:03:00.0") ||
		!strings.Contains(notes, "pf0hpf: no devargs, OVS-DOCA resolves it by its netdev name: host-PF representor (phys_port_name c1pf0) on 0000:03:00.0") {
		t.Fatalf("first apply: %+v", st)
	}
	want := [][]string{
		{"ovs-vsctl", "--timeout=15", "--no-wait", "set", "Open_vSwitch", ".", `other_config:doca-init="true"`, `other_config:dpdk-socket-mem="128"`, `other_config:hw-offload="true"`},
		{"systemctl", "restart", "openvswitch-switch"},
		{"ovs-vsctl", "--timeout=15", "--may-exist", "add-br", "br-sfc", "--", "set", "Bridge", "br-sfc", `datapath_type="netdev"`},
		{"ovs-vsctl", "--timeout=15", "add-port", "br-sfc", "p0", "--", "set", "Interface", "p0", `type="dpdk"`},
		{"ovs-vsctl", "--timeout=15", "add-port", "br-sfc", "pf0hpf", "--", "set", "Interface", "pf0hpf", `type="dpdk"`, "mtu_request=9216"},
		{"ovs-vsctl", "--timeout=15", "add-port", "br-sfc", "vnull0", "--", "set", "Interface", "vnull0", `type="dpdk"`, `options:dpdk-devargs="net_null0"`},
	}
	if got := ovsWrites(f); !reflect.DeepEqual(got, want) {
		t.Fatalf("writes:\n got %q\nwant %q", got, want)
	}
	f.Reset()
	rep, _ = (&provision.Runner{Steps: []provision.Step{step}}).Execute(context.Background(), provision.RunApply, provision.Selection{})
	if st := rep.Steps[0]; st.Status != provision.StatusOK || len(st.Changes) != 0 || len(ovsWrites(f)) != 0 {
		t.Fatalf("second apply: %+v, writes %q", st, ovsWrites(f))
	}
}

// A port the playbook names by netdev that holds devargs in OvS gets them
// removed (OVS-DOCA would use them instead of the name), in one write.
func TestOVSStepDOCAByNameRemovesDevargs(t *testing.T) {
	held := strings.Replace(string(ovsSample(t, "state-doca-byname.json")), `["map",[]],["set",[]],["set",[]],["map",[]]`, `["map",[["dpdk-devargs","0000:03:00.0"]]],["set",[]],["set",[]],["map",[]]`, 1)
	f := fakeOVS([]byte(held), ovsSample(t, "state-doca-byname.json"))
	h := bf3Host(t, f)
	st, err := ovs.ParseState([]byte(held))
	if err != nil {
		t.Fatal(err)
	}
	if ifc, _ := st.Interface("p0"); ifc.Devargs() != "0000:03:00.0" {
		t.Fatalf("fixture edit did not give p0 devargs: %+v", ifc)
	}
	step, _ := NewOVSStep(&provision.Env{Host: h}, docaSpec())
	rep, _ := (&provision.Runner{Steps: []provision.Step{step}}).Execute(context.Background(), provision.RunApply, provision.Selection{})
	if s := rep.Steps[0]; s.Status != provision.StatusChanged || len(s.Changes) != 1 || s.Changes[0].Action != "remove options:dpdk-devargs" || s.Changes[0].From != "0000:03:00.0" {
		t.Fatalf("apply: %+v", s)
	}
	want := [][]string{{"ovs-vsctl", "--timeout=15", "remove", "Interface", "p0", "options", "dpdk-devargs"}}
	if got := ovsWrites(f); !reflect.DeepEqual(got, want) {
		t.Fatalf("writes:\n got %q\nwant %q", got, want)
	}
}

// A doca-init playbook on an Open vSwitch that is not OVS-DOCA is refused
// after one read, before any write, naming the ports upstream OvS would
// fail; a name OVS-DOCA cannot resolve is refused the same way.
func TestOVSStepDOCARefused(t *testing.T) {
	f := fakeOVS(steptest.Sample(t, "state-empty.json"), nil)
	step, _ := NewOVSStep(&provision.Env{Host: bf3Host(t, f)}, docaSpec())
	rep, _ := (&provision.Runner{Steps: []provision.Step{step}}).Execute(context.Background(), provision.RunApply, provision.Selection{})
	mustFail(t, rep, "this Open vSwitch is not NVIDIA's OVS-DOCA: its database has no doca_initialized column",
		`ports [p0 pf0hpf] have no devargs, which only OVS-DOCA resolves (upstream OvS fails each with "'p0' is missing 'options:dpdk-devargs'")`,
		"for upstream Open vSwitch drop doca-init, set dpdk-init: try and give each dpdk port devargs or netdev: NAME")
	if len(ovsWrites(f)) != 0 || len(f.Calls()) != 1 {
		t.Fatalf("ran %q", f.Calls())
	}

	f = fakeOVS(docaEmpty(t), nil)
	spec := docaSpec()
	spec.Bridges[0].Ports = append(spec.Bridges[0].Ports, playbooks.OVSPort{Name: "tmfifo_net0"})
	step, _ = NewOVSStep(&provision.Env{Host: bf3Host(t, f)}, spec)
	rep, _ = (&provision.Runner{Steps: []provision.Step{step}}).Execute(context.Background(), provision.RunApply, provision.Selection{})
	mustFail(t, rep, "ovs port tmfifo_net0: netdev tmfifo_net0: OVS-DOCA cannot resolve it: it has no PCI function", "sysfs shows no device link", "give the port devargs")
	if len(ovsWrites(f)) != 0 {
		t.Fatalf("wrote %q", ovsWrites(f))
	}
}

// For real: a doca-init playbook against the upstream OvS 3.1 here is
// refused before any write; the same ports written by hand fail as
// upstream OvS fails them, and `rig ovs status`'s diagnosis says why.
func TestPrivilegedOVSStepDOCAOnUpstream(t *testing.T) {
	testutil.RequirePrivileged(t)
	rec := &ovstest.Recorder{}
	h := &host.Host{Root: "/", Exec: rec.Exec}
	d := ovstest.Start(t, h, hugetest.OVS(128, 0))
	rec.Reset()
	spec := docaSpec()
	spec.Config.DPDKInit, spec.Config.DPDKExtra = "try", "--no-pci --no-telemetry"
	rep, c := ovsRun(t, h, d, spec)
	mustFail(t, rep, "this Open vSwitch is not NVIDIA's OVS-DOCA")
	if w := rec.Writes(); len(w) != 0 {
		t.Fatalf("wrote %q", w)
	}
	// what a user doing it by hand gets: doca-init set, DPDK up, p0 by name
	spec.Config.DOCAInit = nil
	spec.Bridges[0].Ports = spec.Bridges[0].Ports[2:]
	if rep, _ := ovsRun(t, h, d, spec); rep.Steps[0].Status != provision.StatusChanged {
		t.Fatalf("upstream playbook: %+v", rep.Steps[0])
	}
	ctx := context.Background()
	if _, err := c.Vsctl(ctx, "--no-wait", "set", "Open_vSwitch", ".", "other_config:doca-init=true"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Vsctl(ctx, "add-port", "br-sfc", "p0", "--", "set", "Interface", "p0", "type=dpdk"); err != nil {
		t.Fatal(err)
	}
	st, err := diagnose.ReadStatus(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	ifc, _ := (&ovs.State{Bridges: st.Bridges}).Interface("p0")
	if st.OK || st.DOCA || len(st.Problems) != 1 || ifc.Resolution != ovs.ResolutionNone {
		t.Fatalf("status: ok %v doca %v p0 %+v problems %+v", st.OK, st.DOCA, ifc, st.Problems)
	}
	p := st.Problems[0]
	if p.Kind != diagnose.ProblemNoDevargs || p.Error != "'p0' is missing 'options:dpdk-devargs'. The old 'dpdk<port_id>' names are not supported" ||
		!strings.Contains(p.Cause, "other_config:doca-init=true is set, but this Open vSwitch is upstream's") || len(p.Evidence) != 1 {
		t.Fatalf("diagnosis: %+v", p)
	}
}
