package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rig/internal/labinfo"
	"rig/internal/testutil/sysfstree"
)

type planReport struct {
	Steps []struct {
		Name, Status, Error, Fix string
		Changes                  []struct{ Object, Action, To string }
		Notes                    []string
		Substitutions            []struct{ Object, Netdev, Hardware, Substitute, Reason, Text string }
	}
}

func planJSON(t *testing.T, args ...string) (int, planReport) {
	t.Helper()
	code, out, errOut := rig(t, append(args, "-o", "json")...)
	var rep planReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("rig %v: %v\n%s%s", args, err, out, errOut)
	}
	return code, rep
}

// rig plan on the fixture roots: the ports named by netdev resolve to the
// mlx5 devargs the fixture's sysfs gives.
func TestPlanSeedPlaybooksOnFixtures(t *testing.T) {
	sim := filepath.Join(t.TempDir(), "fw.json")
	if code, _, e := rig(t, "fwsim", "init", "--fw-sim", sim, "--device", "0000:03:00.0=a2d6:separated"); code != exitOK {
		t.Fatalf("fwsim init: %s", e)
	}
	for _, c := range []struct {
		pb, root string
		args     []string
		ports    map[string]string // port -> devargs
	}{
		{"bf2-dpu", "bf2-dpu-arm", []string{"--only", "mst,mode,rdma,ovs", "--fw-sim", sim}, map[string]string{
			"p0": "0000:03:00.0", "pf0hpf": "0000:03:00.0,representor=[65535]"}},
		{"bf3-dpu", "bf3-dpu-arm", []string{"--only", "ovs"}, map[string]string{
			"p0": "0000:03:00.0", "pf0hpf": "0000:03:00.0,representor=[65535]"}},
		{"connectx-host", "cx6dx-host", []string{"--only", "ovs"}, map[string]string{
			"p0": "0000:3b:00.0,mprq_en=1,", "p1": "0000:3b:00.1,mprq_en=1,"}},
	} {
		code, rep := planJSON(t, append([]string{"plan", "-p", c.pb, "--root", "../../testdata/hosts/" + c.root}, c.args...)...)
		if code != exitOK {
			t.Fatalf("%s: code %d %+v", c.pb, code, rep)
		}
		ovsStep := rep.Steps[len(rep.Steps)-1]
		found := 0
		for _, ch := range ovsStep.Changes {
			for port, devargs := range c.ports {
				if ch.Object == "ovs port "+port && strings.Contains(ch.To, "devargs="+devargs) {
					found++
				}
			}
		}
		if ovsStep.Name != "ovs" || ovsStep.Status != "would-change" || found != len(c.ports) || len(ovsStep.Substitutions) != 0 {
			t.Errorf("%s: %+v", c.pb, ovsStep)
		}
	}
}

// rig up under --root refuses the ovs writes before the first one (the
// system OvS is this machine's), and says how to apply instead.
func TestUpFixtureRootRefusesOVS(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "lock")
	code, rep := planJSON(t, "up", "-p", "bf2-dpu", "--only", "ovs", "--root", "../../testdata/hosts/bf2-dpu-arm", "--lock-file", lock)
	st := rep.Steps[0]
	if code != exitFailure || st.Status != "failed" || !strings.Contains(st.Error, "refused: --root ../../testdata/hosts/bf2-dpu-arm reads a fixture") ||
		!strings.Contains(st.Fix, "--rundir") {
		t.Fatalf("up: %d %+v", code, st)
	}
}

// In a virtual lab (lab.json substituting af_packet) the plan says, in
// text and JSON, what stands in for each mlx5 port.
func TestPlanLabSubstitution(t *testing.T) {
	root := t.TempDir()
	sysfstree.Copy(t, "../../testdata/hosts/bf2-dpu-arm/sys", filepath.Join(root, "sys"))
	if err := os.MkdirAll(filepath.Join(root, "run/rig"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := labinfo.Write(filepath.Join(root, "run/rig"), &labinfo.Info{Name: "a", Kind: "bf2-dpu", Substitutions: map[string]string{"mlx5": "net_af_packet"}}); err != nil {
		t.Fatal(err)
	}
	line := "p0: mlx5 devargs 0000:03:00.0 substituted by net_af_packet_p0,iface=p0,framecnt=8192 (virtual lab a: no mlx5 hardware here; net_af_packet carries the frames over the same netdev)"
	code, out, errOut := rig(t, "plan", "-p", "bf2-dpu", "--only", "ovs", "--root", root)
	if code != exitOK || !strings.Contains(out, "  · "+line+"\n") {
		t.Fatalf("text: %d\n%s%s", code, out, errOut)
	}
	_, rep := planJSON(t, "plan", "-p", "bf2-dpu", "--only", "ovs", "--root", root)
	subs := rep.Steps[0].Substitutions
	if len(subs) != 2 || subs[0].Object != "ovs port p0" || subs[0].Hardware != "0000:03:00.0" || subs[0].Substitute != "net_af_packet_p0,iface=p0,framecnt=8192" ||
		subs[0].Text != line || subs[1].Substitute != "net_af_packet_pf0hpf,iface=pf0hpf,framecnt=8192" {
		t.Fatalf("json substitutions: %+v", subs)
	}
}
