package ovsstep

import (
	"context"
	"testing"

	"rig/internal/host"
	"rig/internal/testutil"
	"rig/internal/testutil/fakeexec"
	"rig/playbooks"
	"rig/provision"
	"rig/provision/steptest"
)

// TestOVSDownRefusesRecords: bridges, ports and other_config keys the
// playbook's ovs section does not manage are refused before OvS is even
// read (the instance here does not exist); a record of the playbook's own
// passes the vet.
func TestOVSDownRefusesRecords(t *testing.T) {
	spec := &playbooks.OVSSpec{Config: playbooks.OVSConfig{DPDKInit: "try"},
		Bridges: []playbooks.OVSBridge{{Name: "br0", Ports: []playbooks.OVSPort{{Name: "p0", Type: "dpdk", Devargs: "0000:03:00.0"}}}}}
	rec := &fakeexec.Recorder{}
	h := &host.Host{Root: t.TempDir(), Exec: rec.Exec}
	st, err := NewOVSStep(&provision.Env{Host: h, OVSRunDir: t.TempDir()}, spec)
	if err != nil {
		t.Fatal(err)
	}
	s := st.(*ovsStep)
	target := s.target()
	testutil.PlantState(t, s.state.Path, `{"version": 1, "ovs": [{"target": "`+target+`", "config": {"dpdk-init": null, "vlan-limit": "0", "dpdk-extra": "x\ny"},
		"bridges": ["br-ex", "-x"], "ports": [{"bridge": "br-ex", "name": "eth0"}, {"bridge": "br-int", "name": "p0"}]}]}`)
	steptest.WantRefused(t, steptest.RunStep(t, s.Down(provision.DownOptions{})), s.state.Path,
		`ovs[0].bridges[0]: "br-ex" is not a bridge this playbook's ovs section makes (br0)`, `ovs[0].bridges[1]: ovs: bridge name "-x"`,
		`ovs[0].ports[0].name: "eth0" is not a port this playbook's ovs section adds`, `ovs[0].ports[1].bridge: "br-int": the playbook adds port p0 to br0`,
		`ovs[0].config["dpdk-extra"]: not an other_config key this playbook's ovs section sets (dpdk-init)`, `ovs[0].config["vlan-limit"]: not an other_config key`)
	if len(rec.Lines()) != 0 {
		t.Fatalf("ran %q", rec.Lines())
	}
	testutil.PlantState(t, s.state.Path, `{"version": 1, "ovs": [{"target": "`+target+`", "config": {"dpdk-init": null}, "bridges": ["br0"], "ports": [{"bridge": "br0", "name": "p0"}]}]}`)
	if err := s.Down(provision.DownOptions{}).(*ovsDown).VetRecords(context.Background()); err != nil {
		t.Fatalf("the playbook's own record: %v", err)
	}
}
