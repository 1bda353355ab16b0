package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"rig/bench/dataplane"
	"rig/internal/buildinfo"
)

// rig version -o json: the schema, this build's Go and platform, the DPDK
// linked in (this test binary is linked as rig is: static with -tags
// dpdkstatic) and the PMDs rig drives, mlx5 among them.
func TestVersionJSON(t *testing.T) {
	code, out, errOut := rig(t, "version", "-o", "json")
	if code != exitOK {
		t.Fatalf("code %d\n%s%s", code, out, errOut)
	}
	var rep versionReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if rep.SchemaVersion != "rig.version/v1" || rep.GoVersion == "" || rep.Platform == "" || rep.Version == "" || rep.Commit == "" {
		t.Errorf("report %+v", rep)
	}
	if !rep.Cgo || !strings.HasPrefix(rep.DPDK.Version, "DPDK 22.11") || rep.DPDK.PMDError != "" {
		t.Errorf("dpdk %+v (cgo %v)", rep.DPDK, rep.Cgo)
	}
	wantLink := "shared"
	if strings.Contains(rep.Tags, "dpdkstatic") {
		wantLink = "static"
	}
	if rep.DPDK.Linked != wantLink {
		t.Errorf("linked %q with tags %q, want %q", rep.DPDK.Linked, rep.Tags, wantLink)
	}
	names := map[string]bool{}
	for _, p := range rep.DPDK.PMDs {
		names[p.Name] = true
	}
	for _, n := range []string{"net_ring", "net_null", "net_memif", "net_af_packet", "net_virtio_user", "mlx5_eth"} {
		if !names[n] {
			t.Errorf("PMD %s missing: %v", n, rep.DPDK.PMDs)
		}
	}
	// the same report, as text, and from rig --version
	_, text, _ := rig(t, "version")
	code, flag, errOut := rig(t, "--version")
	if code != exitOK || flag != text {
		t.Errorf("rig --version (code %d) differs from rig version:\n%s\n%s%s", code, flag, text, errOut)
	}
	for _, want := range []string{"rig     " + rep.Version + "\n", "dpdk    " + rep.DPDK.Version + ", linked " + wantLink + "\n", " mlx5_eth ", "net_ring"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	if code, out, _ := rig(t, "--version", "-o", "json"); code != exitOK || !strings.Contains(out, `"schemaVersion": "rig.version/v1"`) {
		t.Errorf("rig --version -o json: %d\n%s", code, out)
	}
}

func TestVersionUsage(t *testing.T) {
	if code, _, errOut := rig(t, "version", "extra"); code != exitUsage || !strings.Contains(errOut, "unknown command \"extra\" for \"rig version\"") {
		t.Errorf("rig version extra: %d %q", code, errOut)
	}
	if code, _, errOut := rig(t, "nope"); code != exitUsage || !strings.Contains(errOut, `unknown command "nope" for "rig"`) {
		t.Errorf("rig nope: %d %q", code, errOut)
	}
	if code, out, _ := rig(t); code != exitOK || !strings.Contains(out, "Available Commands:") {
		t.Errorf("rig alone prints its help: %d\n%s", code, out)
	}
}

func TestWriteVersion(t *testing.T) {
	info := buildinfo.Info{Version: "v1.2.0-3-ga665e4e-dirty", Commit: "a665e4e1a2b3", CommitTime: "2025-12-02T00:59:00Z", Modified: true,
		GoVersion: "go1.26.8", Platform: "linux/arm64", Cgo: true, Tags: "dpdkstatic"}
	cases := []struct {
		name string
		info buildinfo.Info
		dpdk dataplane.DPDKInfo
		want string
	}{
		{"static", info, dataplane.DPDKInfo{Version: "DPDK 22.11.11", Linked: "static", PMDs: []dataplane.PMD{{Name: "mlx5_eth"}, {Name: "net_ring"}}, PMDsFrom: []string{"/usr/local/bin/rig"}},
			"rig     v1.2.0-3-ga665e4e-dirty\ncommit  a665e4e1a2b3 (2025-12-02T00:59:00Z, modified)\ngo      go1.26.8 linux/arm64, cgo, tags dpdkstatic\n" +
				"dpdk    DPDK 22.11.11, linked static\npmds    mlx5_eth net_ring (2, from /usr/local/bin/rig)\n"},
		{"shared", buildinfo.Info{Version: "devel", Commit: "unknown", GoVersion: "go1.26.8", Platform: "linux/amd64", Cgo: true},
			dataplane.DPDKInfo{Version: "DPDK 22.11.11", Linked: "shared", PMDs: []dataplane.PMD{{Name: "net_ring"}}, PMDsFrom: []string{"/a/librte_net_ring.so", "/a/librte_net_null.so"}},
			"rig     devel\ncommit  unknown\ngo      go1.26.8 linux/amd64, cgo\ndpdk    DPDK 22.11.11, linked shared\npmds    net_ring (1, from 2 libraries in EAL's driver directory)\n"},
		{"PMD records unreadable", info, dataplane.DPDKInfo{Version: "DPDK 22.11.11", Linked: "static", PMDError: "find this executable: no /proc"},
			"pmds    unknown: find this executable: no /proc\n"},
		{"without cgo", buildinfo.Info{Version: "devel", Commit: "unknown", GoVersion: "go1.26.8", Platform: "linux/arm64"}, dataplane.DPDKInfo{Linked: "none"},
			"go      go1.26.8 linux/arm64, without cgo\ndpdk    none (built without cgo)\npmds    none\n"},
	}
	for _, c := range cases {
		var b bytes.Buffer
		if err := writeVersion(&b, versionReport{SchemaVersion: versionSchema, Info: c.info, DPDK: c.dpdk}); err != nil || !strings.Contains(b.String(), c.want) {
			t.Errorf("%s: %v\n%s\nwant it to hold\n%s", c.name, err, b.String(), c.want)
		}
	}
}

// A rig built without cgo says it has no DPDK, in text and JSON.
func TestVersionWithoutCgo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds rig")
	}
	bin := buildRigNoCgo(t)
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), ", without cgo\ndpdk    none (built without cgo)\npmds    none\n") {
		t.Errorf("rig version: %v\n%s", err, out)
	}
	out, err = exec.Command(bin, "version", "-o", "json").Output()
	var rep versionReport
	if err != nil || json.Unmarshal(out, &rep) != nil || rep.Cgo || rep.DPDK.Linked != "none" || rep.DPDK.Version != "" || len(rep.DPDK.PMDs) != 0 {
		t.Errorf("rig version -o json: %v %+v\n%s", err, rep, out)
	}
}
