package check

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"rig/ovs"
	"rig/ovs/diagnose"
	"rig/playbooks"
)

// dpFlow is a dpctl/dump-flows -m line of OvS 3.1's format (the recorded
// ones are in ovs/testdata/dpflows) for in_port port.
func dpFlow(port, tail string) string {
	return "ufid:85861092-2c04-4531-ac9e-" + fmt.Sprintf("%012x", len(port)) + ", recirc_id(0),dp_hash(0/0),in_port(" + port +
		"),packet_type(ns=0,id=0),eth(src=02:00:00:00:0a:01,dst=02:00:00:00:00:02),eth_type(0x0800),ipv4(frag=no), " + tail + "\n"
}

// After its traffic the check reads the datapath flows: offload preferred
// (the default) reports and passes; required fails with exit 4's error,
// its cause and fix from the evidence; every flow offloaded passes it.
func TestCheckOffloadReport(t *testing.T) {
	soft := "flow-dump from pmd on cpu core: 1\n" + dpFlow("rig-chk-in", "packets:9999, bytes:599940, used:0.010s, dp:ovs, actions:rig-chk-out") +
		dpFlow("rig-chk-out", "packets:3, bytes:180, used:1.000s, dp:ovs, actions:drop")
	run := func(t *testing.T, mode string, oc map[string]string, dump string, dumpErr error) (*CheckResult, error) {
		t.Helper()
		o := newFakeCheckOVS()
		for k, v := range oc {
			o.st.OtherConfig[k] = v
		}
		o.dpflows, o.dpErr = dump, dumpErr
		o.log = ovs.LogTail{"2026-12-04T22:58:34.001Z|00001|vlog|INFO|opened log file /var/log/openvswitch/ovs-vswitchd.log",
			"2026-12-04T22:58:36.503Z|00009|netdev_offload|INFO|netdev: Flow API Enabled",
			"2026-12-04T22:58:37.111Z|00031|netdev_offload|INFO|rig-chk-in: No suitable flow API found."}
		s := newTestCheck(t, &playbooks.CheckSpec{Rate: "max", Bridge: "br0", Duration: "100ms", Warmup: "0s", Offload: mode}, o, &fakeDataplane{sent: 1000})
		out, err := s.Measure(context.Background())
		return out.(*CheckResult), err
	}
	res, err := run(t, "", nil, soft, nil)
	o := res.Offload
	if err != nil || !res.Pass || o == nil || o.Mode != playbooks.OffloadPreferred || !o.Pass || o.Flows != 1 || o.Packets != 9999 || o.NotOffloaded != 1 ||
		o.Verdict != diagnose.OffloadVerdictNone || o.Datapaths["ovs"] != 1 {
		t.Fatalf("preferred: %v, %+v", err, o)
	}
	var text strings.Builder
	if werr := res.WriteText(&text); werr != nil {
		t.Fatal(werr)
	}
	for _, w := range []string{"offload (preferred): 1 datapath flow(s) in at rig-chk-in, 9999 packet(s): 0 offloaded, 0 partially, 1 not (dp:ovs 1): not offloaded, hw-offload off",
		"why: other_config:hw-offload is not set", "why: port rig-chk-in is a dpdkvhostuserclient port, not an uplink or representor", "check: PASS"} {
		if !strings.Contains(text.String(), w) {
			t.Errorf("text lacks %q:\n%s", w, text.String())
		}
	}

	res, err = run(t, playbooks.OffloadRequired, map[string]string{"hw-offload": "true"}, soft, nil)
	var bt *BelowThresholdError
	if !errors.As(err, &bt) || res.Pass || res.Offload.Pass || !strings.Contains(err.Error(), "offload required: flows offloaded of those in at rig-chk-in 1: measured 0 (not offloaded): FAIL") ||
		!strings.Contains(bt.Cause(), "port rig-chk-in is a dpdkvhostuserclient port") || !strings.Contains(bt.Fix(), "through-ports") {
		t.Fatalf("required, not offloaded: %v (cause %q)", err, causeOf(bt))
	}
	if ev := res.Offload.Causes[0].Evidence; len(ev) != 1 || !strings.Contains(ev[0], "rig-chk-in: No suitable flow API found.") {
		t.Errorf("evidence %q", ev)
	}

	full := dpFlow("rig-chk-in", "packets:9999, bytes:599940, used:0.010s, offloaded:yes, dp:dpdk, actions:rig-chk-out")
	if res, err := run(t, playbooks.OffloadRequired, map[string]string{"hw-offload": "true"}, full, nil); err != nil || !res.Pass || !res.Offload.Pass ||
		res.Offload.Verdict != diagnose.OffloadVerdictFull || len(res.Offload.Causes) != 0 {
		t.Fatalf("required, offloaded: %v, %+v", err, res.Offload)
	}
	down := errors.New("ovs-appctl: cannot connect")
	if res, err := run(t, "", nil, "", down); err != nil || !res.Pass || res.Offload.Error == "" {
		t.Fatalf("preferred, no dump: %v, %+v", err, res.Offload)
	}
	if res, err := run(t, playbooks.OffloadRequired, nil, "", down); !errors.As(err, &bt) || res.Pass || !strings.Contains(bt.Cause(), "the datapath flows could not be read") {
		t.Fatalf("required, no dump: %v", err)
	}
	if res, err := run(t, playbooks.OffloadOff, nil, soft, nil); err != nil || res.Offload != nil {
		t.Fatalf("off: %v, %+v", err, res.Offload)
	}
}

func causeOf(e *BelowThresholdError) string {
	if e == nil {
		return ""
	}
	return e.Cause()
}
