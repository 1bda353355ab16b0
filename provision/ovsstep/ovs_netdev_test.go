package ovsstep

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"rig/internal/host"
	"rig/internal/labinfo"
	"rig/internal/testutil"
	"rig/internal/testutil/fakeexec"
	"rig/internal/testutil/sysfstree"
	"rig/ovs/ovstest"
	"rig/playbooks"
	"rig/provision"
	"rig/provision/steptest"
	"rig/smartnic"
)

// netdevSpec is vdevSpec's config with its two ports named by netdev
// (p0, and pf0hpf with n_rxq 2 and mtu_request 1500 as vnull1 has).
func netdevSpec() *playbooks.OVSSpec {
	s := vdevSpec()
	s.Bridges[0].Ports = []playbooks.OVSPort{
		{Name: "p0", Netdev: "p0"},
		{Name: "pf0hpf", Netdev: "pf0hpf", NRxq: 2, MTURequest: 1500},
	}
	return s
}

// netdevRoot is a fake root whose system ovs-vswitchd is alive (as
// systemHost) and whose sysfs is the BF2 DPU fixture's; lab adds
// run/rig/lab.json (written by labinfo.Write) substituting af_packet.
func netdevRoot(t *testing.T, f *fakeexec.Recorder, lab bool) *host.Host {
	t.Helper()
	h := systemHost(t, f)
	sysfstree.Copy(t, "../../testdata/hosts/bf2-dpu-arm/sys", filepath.Join(h.Root, "sys"))
	if lab {
		dir := filepath.Join(h.Root, "run/rig")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := labinfo.Write(dir, &labinfo.Info{Name: "a", Kind: "bf2-dpu", NetNS: "rig-a", WireNetNS: "rig-a-wire",
			Substitutions: map[string]string{"mlx5": smartnic.AFPacketDriver}}); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// attachedAs is state-attached.json with vnull0/vnull1 renamed p0/pf0hpf
// and their devargs replaced: what OvS holds after the first apply.
func attachedAs(t *testing.T, dev0, dev1 string) []byte {
	return []byte(strings.NewReplacer(`"vnull0"`, `"p0"`, `"vnull1"`, `"pf0hpf"`,
		`"net_null0"`, `"`+dev0+`"`, `"net_null1"`, `"`+dev1+`"`).Replace(string(steptest.Sample(t, "state-attached.json"))))
}

// Apply twice with ports named by netdev: on hardware (the fixture's
// sysfs) they get the mlx5 devargs; in a lab the af_packet vdevs, said in
// the notes and the report's substitutions. The second apply compares the
// resolved devargs with what OvS holds: no change, no write.
func TestOVSStepNetdevPortsApplyTwice(t *testing.T) {
	for _, c := range []struct {
		name       string
		lab        bool
		dev0, dev1 string
		subs       []provision.Substitution
	}{
		{"hardware", false, "0000:03:00.0", "0000:03:00.0,representor=[65535]", nil},
		{"lab", true, "net_af_packet_p0,iface=p0,framecnt=8192", "net_af_packet_pf0hpf,iface=pf0hpf,framecnt=8192", []provision.Substitution{
			{Object: "ovs port p0", Netdev: "p0", Hardware: "0000:03:00.0", Substitute: "net_af_packet_p0,iface=p0,framecnt=8192",
				Reason: "virtual lab a: no mlx5 hardware here; net_af_packet carries the frames over the same netdev",
				Text:   "p0: mlx5 devargs 0000:03:00.0 substituted by net_af_packet_p0,iface=p0,framecnt=8192 (virtual lab a: no mlx5 hardware here; net_af_packet carries the frames over the same netdev)"},
			{Object: "ovs port pf0hpf", Netdev: "pf0hpf", Hardware: "0000:03:00.0,representor=[65535]", Substitute: "net_af_packet_pf0hpf,iface=pf0hpf,framecnt=8192",
				Reason: "virtual lab a: no mlx5 hardware here; net_af_packet carries the frames over the same netdev; n_rxq 2 served by one af_packet queue pair (its fanout reorders a flow when a ring fills)",
				Text:   "pf0hpf: mlx5 devargs 0000:03:00.0,representor=[65535] substituted by net_af_packet_pf0hpf,iface=pf0hpf,framecnt=8192 (virtual lab a: no mlx5 hardware here; net_af_packet carries the frames over the same netdev; n_rxq 2 served by one af_packet queue pair (its fanout reorders a flow when a ring fills))"},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := fakeOVS(steptest.Sample(t, "state-empty.json"), attachedAs(t, c.dev0, c.dev1))
			h := netdevRoot(t, f, c.lab)
			step, err := NewOVSStep(&provision.Env{Host: h}, netdevSpec())
			if err != nil {
				t.Fatal(err)
			}
			plan, err := step.Check(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(ovsWrites(f)) != 0 || !reflect.DeepEqual(plan.Substitutions, c.subs) {
				t.Fatalf("check wrote %q or substitutions %+v", ovsWrites(f), plan.Substitutions)
			}
			rep, err := (&provision.Runner{Steps: []provision.Step{step}}).Execute(context.Background(), provision.RunApply, provision.Selection{})
			if err != nil {
				t.Fatal(err)
			}
			st := rep.Steps[0]
			if st.Status != provision.StatusChanged || !reflect.DeepEqual(st.Substitutions, c.subs) {
				t.Fatalf("first apply: %+v", st)
			}
			w := ovsWrites(f)
			want := [][]string{
				{"ovs-vsctl", "--timeout=15", "add-port", "br-vdev", "p0", "--", "set", "Interface", "p0", `type="dpdk"`, `options:dpdk-devargs="` + c.dev0 + `"`},
				{"ovs-vsctl", "--timeout=15", "add-port", "br-vdev", "pf0hpf", "--", "set", "Interface", "pf0hpf", `type="dpdk"`, `options:dpdk-devargs="` + c.dev1 + `"`,
					`options:n_rxq="2"`, "mtu_request=1500"},
			}
			if len(w) != 5 || !reflect.DeepEqual(w[3:], want) {
				t.Fatalf("writes:\n got %q\nwant ... %q", w, want)
			}
			for _, s := range c.subs { // the notes carry the same line for the text report
				if !strings.Contains(strings.Join(st.Notes, "\n"), s.Text) {
					t.Errorf("notes lack %q: %q", s.Text, st.Notes)
				}
			}
			var out bytes.Buffer
			rep.WriteText(&out)
			js, _ := json.Marshal(rep)
			if c.lab && (!strings.Contains(out.String(), "  · "+c.subs[0].Text) || !strings.Contains(string(js), `"substitutions":[{"object":"ovs port p0","netdev":"p0","hardware":"0000:03:00.0","substitute":"net_af_packet_p0,iface=p0,framecnt=8192"`)) {
				t.Errorf("report:\n%s\n%s", out.String(), js)
			}
			f.Reset()
			rep, _ = (&provision.Runner{Steps: []provision.Step{step}}).Execute(context.Background(), provision.RunApply, provision.Selection{})
			if st := rep.Steps[0]; st.Status != provision.StatusOK || len(st.Changes) != 0 || len(ovsWrites(f)) != 0 || !reflect.DeepEqual(st.Substitutions, c.subs) {
				t.Fatalf("second apply: %+v, writes %q", st, ovsWrites(f))
			}
		})
	}
}

// A netdev that is not an mlx5 port fails the check, before OvS is read,
// naming the port, the netdev and what sysfs shows.
func TestOVSStepNetdevRefused(t *testing.T) {
	f := fakeOVS(steptest.Sample(t, "state-empty.json"), nil)
	h := netdevRoot(t, f, false)
	spec := vdevSpec()
	spec.Bridges[0].Ports = []playbooks.OVSPort{{Name: "tm", Netdev: "tmfifo_net0"}}
	step, _ := NewOVSStep(&provision.Env{Host: h}, spec)
	rep, _ := (&provision.Runner{Steps: []provision.Step{step}}).Execute(context.Background(), provision.RunPlan, provision.Selection{})
	mustFail(t, rep, "ovs port tm: netdev tmfifo_net0: not an mlx5 port: it has no PCI function", "sysfs shows no device link", "raw devargs")
	if len(f.Calls()) != 0 {
		t.Fatalf("ran %q", f.Calls())
	}
	// two ports resolving to one device
	spec.Bridges[0].Ports = []playbooks.OVSPort{{Name: "a", Netdev: "p0"}, {Name: "b", Devargs: "0000:03:00.0"}}
	step, _ = NewOVSStep(&provision.Env{Host: h}, spec)
	rep, _ = (&provision.Runner{Steps: []provision.Step{step}}).Execute(context.Background(), provision.RunPlan, provision.Selection{})
	mustFailNoCause(t, rep, "ovs port b: devargs 0000:03:00.0 name the device of port a too")
	// in a lab, a raw vdev with the name the substitute takes
	hl := netdevRoot(t, f, true)
	spec.Bridges[0].Ports = []playbooks.OVSPort{{Name: "a", Devargs: "net_af_packet_p0,iface=x"}, {Name: "b", Netdev: "p0"}}
	step, _ = NewOVSStep(&provision.Env{Host: hl}, spec)
	rep, _ = (&provision.Runner{Steps: []provision.Step{step}}).Execute(context.Background(), provision.RunPlan, provision.Selection{})
	mustFailNoCause(t, rep, "ovs port b: devargs net_af_packet_p0,iface=p0,framecnt=8192 name the device of port a too")
}

func mustFailNoCause(t *testing.T, rep *provision.Report, text string) {
	t.Helper()
	if st := rep.Steps[0]; st.Status != provision.StatusFailed || !strings.Contains(st.Error, text) || st.Fix == "" {
		t.Fatalf("want failed with %q: %+v", text, st)
	}
}

// Under a fixture root (--root) with no instance given, the step reads no
// OvS (the system one is this machine's), plans against an empty database
// and the apply refuses before its first write.
func TestOVSStepFixtureRootRefusesWrites(t *testing.T) {
	f := fakeOVS(steptest.Sample(t, "state-empty.json"), nil)
	h := netdevRoot(t, f, false)
	spec := netdevSpec()
	spec.Config.PMDCPUMask = "0x2"
	step, _ := NewOVSStep(&provision.Env{Host: h, FixtureRoot: h.Root}, spec)
	rep, _ := (&provision.Runner{Steps: []provision.Step{step}}).Execute(context.Background(), provision.RunPlan, provision.Selection{})
	st := rep.Steps[0]
	notes := strings.Join(st.Notes, "\n")
	if st.Status != provision.StatusWouldChange || len(st.Changes) != 10 || !strings.Contains(notes, "planned against an empty database; apply refuses") ||
		!strings.Contains(notes, "p0: mlx5 devargs 0000:03:00.0 (PCI function 0000:03:00.0, driver mlx5_core, phys_port_name p0)") ||
		!strings.Contains(notes, "pmd-cpu-mask 0x2 not checked against the online CPUs") {
		t.Fatalf("plan: %+v", st)
	}
	rep, _ = (&provision.Runner{Steps: []provision.Step{step}}).Execute(context.Background(), provision.RunApply, provision.Selection{})
	mustFail(t, rep, "refused: --root "+h.Root+" reads a fixture, and this write (set pmd-cpu-mask) would reach this machine's Open vSwitch", "--rundir")
	if len(f.Calls()) != 0 {
		t.Fatalf("ran %q", f.Calls())
	}
}

// For real: a private OvS-DPDK in a fake lab root (lab.json substituting
// af_packet, the host's sysfs) attaches a port named by a veth's name
// through net_af_packet, and the second apply changes nothing.
func TestPrivilegedOVSStepNetdevLabAFPacket(t *testing.T) {
	testutil.RequirePrivileged(t)
	rec := &ovstest.Recorder{}
	live := &host.Host{Root: "/", Exec: rec.Exec}
	d := ovstest.Start(t, live, vmOVS())
	veth := testNetns(t)
	root := t.TempDir()
	// the live kernel's sysfs and procfs (the veth, the daemons' pids),
	// bind-mounted: a symlink to /sys would resolve inside the root
	for _, d := range []string{"sys", "proc"} {
		mp := filepath.Join(root, d)
		if err := os.Mkdir(mp, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mount("/"+d, mp, "", unix.MS_BIND, ""); err != nil {
			t.Fatalf("bind-mount /%s on %s: %v", d, mp, err)
		}
		t.Cleanup(func() { _ = unix.Unmount(mp, unix.MNT_DETACH) })
	}
	if err := os.MkdirAll(filepath.Join(root, "run/rig"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := labinfo.Write(filepath.Join(root, "run/rig"), &labinfo.Info{Name: "t", Substitutions: map[string]string{"mlx5": smartnic.AFPacketDriver}}); err != nil {
		t.Fatal(err)
	}
	h := &host.Host{Root: root, Exec: rec.Exec}
	spec := &playbooks.OVSSpec{Config: vmConfig(), Bridges: []playbooks.OVSBridge{{Name: "br-lab", Ports: []playbooks.OVSPort{
		{Name: "up0", Netdev: veth, MLX5Args: "txq_inline_max=1024"}}}}}
	rep, c := ovsRun(t, h, d, spec)
	st := rep.Steps[0]
	if st.Status != provision.StatusChanged || len(st.Substitutions) != 1 || st.Substitutions[0].Substitute != "net_af_packet_"+veth+",iface="+veth+",framecnt=8192" {
		t.Fatalf("first apply: %+v", st)
	}
	t.Logf("substitution: %s", st.Substitutions[0].Text)
	state, err := c.ReadState(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if ifc, ok := state.Interface("up0"); !ok || !ifc.Attached() || ifc.Devargs() != "net_af_packet_"+veth+",iface="+veth+",framecnt=8192" {
		t.Fatalf("up0: %+v", ifc)
	}
	rec.Reset()
	rep, _ = ovsRun(t, h, d, spec)
	if st := rep.Steps[0]; st.Status != provision.StatusOK || len(st.Changes) != 0 || len(rec.Writes()) != 0 || len(st.Substitutions) != 1 {
		t.Fatalf("second apply: %+v, writes %q", st, rec.Writes())
	}
}
