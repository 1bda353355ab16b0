package diagnose

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"rig/internal/host"
	"rig/ovs"
	"rig/ovs/ovstest"
)

// `rig ovs status` says for each DPDK port how it is resolved: devargs
// given, or by netdev name (and to what), or not at all on upstream OvS,
// where the diagnosis says why and how to fix it.
func TestStatusResolution(t *testing.T) {
	for _, c := range []struct {
		fixture string
		ok      bool
		text    []string
	}{
		{"state-doca-byname.json", true, []string{
			"doca_initialized:  true (DOCA 3.2.0): NVIDIA OVS-DOCA\n",
			"DEVARGS    RESOLUTION",
			"br-sfc  p0      dpdk      1",
			"by netdev name: uplink (phys_port_name p0) of 0000:03:00.0",
			"by netdev name: host-PF representor (phys_port_name c1pf0) on 0000:03:00.0",
			"net_null0  devargs given",
			"\nok: DPDK initialised (DPDK 22.11.11), ovs-vswitchd running, 4 interface(s) on 1 bridge(s), all attached\n"}},
		{"state-upstream-byname.json", false, []string{
			"none (no devargs, and this OvS resolves no names)",
			"NOT OK: 2 problem(s):\n- ovs: port p0: 'p0' is missing 'options:dpdk-devargs'. The old 'dpdk<port_id>' names are not supported\n",
			"cause: other_config:doca-init=true is set, but this Open vSwitch is upstream's, not NVIDIA's OVS-DOCA (its database has no doca_initialized column)",
			"|netdev_dpdk|WARN|'p0' is missing 'options:dpdk-devargs'. The old 'dpdk<port_id>' names are not supported\n"}},
	} {
		t.Run(c.fixture, func(t *testing.T) {
			h := ovstest.BF3Root(t, readSample(t, c.fixture))
			log, err := os.ReadFile(filepath.Join("testdata", "log-upstream-byname.log"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Dir(h.Path(ovs.SystemLogFile)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(h.Path(ovs.SystemLogFile), log, 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := ReadStatus(context.Background(), ovs.NewClient(h, ovs.TargetFor(host.New("/"), "", "")))
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := s.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			if s.OK != c.ok {
				t.Errorf("ok=%v, problems %+v", s.OK, s.Problems)
			}
			for _, w := range c.text {
				if !strings.Contains(b.String(), w) {
					t.Errorf("missing %q in:\n%s", w, b.String())
				}
			}
		})
	}
}

// The missing-devargs error of upstream OvS, diagnosed by which OvS it is
// and what other_config says; and an OVS-DOCA port whose name does not
// resolve, from lib/netdev-doca.c's texts and the fixture's sysfs.
func TestDiagnoseByNamePorts(t *testing.T) {
	h := ovstest.BF3Root(t, nil)
	log := ovs.LogTail{
		"2026-12-02T01:06:15.318Z|00089|netdev_dpdk|WARN|'p0' is missing 'options:dpdk-devargs'. The old 'dpdk<port_id>' names are not supported",
		"2026-12-02T01:06:15.318Z|00090|netdev|WARN|p0: could not set configuration (Invalid argument)",
	}
	p0 := ovs.Interface{Name: "p0", Type: "dpdk", OFPort: -1, Error: "'p0' is missing 'options:dpdk-devargs'. The old 'dpdk<port_id>' names are not supported"}
	for _, c := range []struct {
		name       string
		st         *ovs.State
		cause, fix string
	}{
		{"upstream, plain", &ovs.State{DPDKInitialized: true, OtherConfig: map[string]string{"dpdk-init": "try"}},
			"a type=dpdk port needs options:dpdk-devargs in upstream Open vSwitch; resolving a port by its netdev name alone is NVIDIA OVS-DOCA's extension",
			"on OVS-DOCA set ovs.config.doca-init: true instead"},
		{"upstream with doca-init", &ovs.State{DPDKInitialized: true, OtherConfig: map[string]string{"dpdk-init": "try", "doca-init": "true"}},
			"it ignores doca-init and needs options:dpdk-devargs for every type=dpdk port", "or run NVIDIA's OVS-DOCA"},
		{"OVS-DOCA without doca-init", &ovs.State{DPDKInitialized: true, DOCA: true, OtherConfig: map[string]string{"dpdk-init": "try"}},
			"this is NVIDIA's OVS-DOCA, but doca_initialized is false", "set ovs.config.doca-init: true"},
	} {
		d := Diagnose(h, c.st, p0, log)
		if d.Kind != ProblemNoDevargs || !strings.Contains(d.Cause, c.cause) || !strings.Contains(d.Fix, c.fix) || len(d.Evidence) != 1 {
			t.Errorf("%s: %+v", c.name, d)
		}
	}
	// OVS-DOCA: "%s: Could not generate DPDK devargs" (VLOG_WARN in
	// netdev_doca_set_config), then lib/netdev.c's "could not set
	// configuration (No such device)" (ENODEV) in Interface.error
	doca := &ovs.State{DPDKInitialized: true, DOCA: true, DOCAInitialized: true, OtherConfig: map[string]string{"doca-init": "true"}}
	tm := ovs.Interface{Name: "tmfifo_net0", Type: "dpdk", OFPort: -1, Error: "tmfifo_net0: could not set configuration (No such device)"}
	d := Diagnose(h, doca, tm, ovs.LogTail{
		"2026-12-02T02:00:00.000Z|00070|netdev_doca|WARN|tmfifo_net0: Could not generate DPDK devargs",
		"2026-12-02T02:00:00.000Z|00071|netdev|WARN|tmfifo_net0: could not set configuration (No such device)",
	})
	if d.Kind != ProblemDOCAName || !strings.Contains(d.Cause, "netdev tmfifo_net0 does not resolve: OVS-DOCA cannot resolve it: it has no PCI function") ||
		!strings.Contains(d.Cause, "(sysfs shows: no device link") || !strings.Contains(d.Fix, "give the port devargs") || len(d.Evidence) != 2 {
		t.Fatalf("doca name: %+v", d)
	}
}

// doca-init=true on upstream OvS does not start DPDK: said so instead of
// "started before dpdk-init was set".
func TestDiagnoseDPDKDOCAInitOnUpstream(t *testing.T) {
	d := DiagnoseDPDK(&ovs.State{OtherConfig: map[string]string{"doca-init": "true"}}, nil)
	if d.Kind != ProblemDPDKNotRequested || d.Error != "doca-init=true but dpdk_initialized=false" || !strings.Contains(d.Cause, "it ignores doca-init and never initialises DPDK") {
		t.Fatalf("%+v", d)
	}
	d = DiagnoseDPDK(&ovs.State{DOCA: true, OtherConfig: map[string]string{"doca-init": "true"}}, nil)
	if d.Kind != ProblemDPDKNotInit || !strings.Contains(d.Cause, "started before") {
		t.Fatalf("OVS-DOCA: %+v", d)
	}
}
