// Package ansible holds the tests of the Ansible content that need no
// host: site.yml in check mode against local connections and a fake rig.
// It is a package of its own, not a test of cmd/rig, so that go test -p 2
// runs ansible-playbook (about 25 s of CPU on a 2-CPU machine) beside
// cmd/rig's long sequential run. The fleet test over SSH with virtual
// BlueFields is cmd/rig's TestPrivilegedAnsibleFleet.
package ansible

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"rig/internal/testutil/fleettest"
)

// fakePlanRig is a rig for site.yml in check mode: rig plan prints a
// rig.report/v1 whose ovs step would change when a file "would" lies next
// to it; inventory and mode show print a BlueField-2 in DPU mode.
const fakePlanRig = `#!/bin/sh
d=$(dirname "$0")
case " $* " in
*" plan "*) s=ok; [ -e "$d/would" ] && s=would-change
  printf '{"schemaVersion":"rig.report/v1","mode":"plan","steps":[{"name":"ovs","status":"%s"}]}\n' $s;;
*" inventory "*) printf '{"functions":[{"bdf":"0000:03:00.0","model":"BlueField-2"}]}\n';;
*" mode show "*) printf '{"schemaVersion":"rig.mode/v1","devices":[{"current":"dpu","next":"dpu","pendingPowerCycle":false}]}\n';;
*) echo "fake rig: unexpected $*" >&2; exit 2;;
esac
`

// TestAnsibleSiteCheckMode: ansible-playbook --check ansible/site.yml
// (local connections, a fake rig) plans and changes nothing: a host rig
// is not copied to yet is reported would-change and gets no rig; a host
// whose rig plan has a step to change is would-change with that step; one
// with nothing to change is no-change; the fleet report is written.
func TestAnsibleSiteCheckMode(t *testing.T) {
	if _, err := exec.LookPath("ansible-playbook"); err != nil {
		t.Skipf("needs ansible-playbook: make test installs Debian's ansible-core (make deps-fleet): %v", err)
	}
	dir := t.TempDir()
	fake := filepath.Join(dir, "rig")
	var inv strings.Builder
	inv.WriteString("[smartnics]\n")
	for _, h := range []string{"new", "would", "same"} {
		bin := filepath.Join(dir, h, "rig")
		fmt.Fprintf(&inv, "%s ansible_connection=local ansible_python_interpreter=/usr/bin/python3 rig_install_path=%s\n", h, bin)
		if h == "new" {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, []byte(fakePlanRig), 0o755); err != nil {
			t.Fatal(err)
		}
		if h == "would" {
			if err := os.WriteFile(filepath.Join(dir, h, "would"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	fmt.Fprintf(&inv, "\n[smartnics:vars]\nrig_binary=%s\n", fake)
	for p, s := range map[string]string{fake: fakePlanRig, filepath.Join(dir, "inventory.ini"): inv.String()} {
		if err := os.WriteFile(p, []byte(s), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	report := filepath.Join(dir, "report")
	vars, _ := json.Marshal(map[string]any{"rig_report_dir": report, "rig_serial": []any{3}}) // one batch
	cmd := exec.Command("ansible-playbook", "--check", "-i", filepath.Join(dir, "inventory.ini"), "site.yml", "-e", string(vars))
	cmd.Env = append(os.Environ(), "ANSIBLE_HOME="+filepath.Join(dir, "ansible"), "ANSIBLE_LOCAL_TEMP="+filepath.Join(dir, "ansible", "tmp"),
		"ANSIBLE_RETRY_FILES_ENABLED=0", "ANSIBLE_NOCOLOR=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ansible-playbook --check: %v\n%s", err, out)
	}
	_, by, md := fleettest.Read(t, report)
	want := map[string]string{"new": "would-change []", "would": "would-change [ovs]", "same": "no-change []"}
	for h, w := range want {
		e := by[h]
		if got := fmt.Sprintf("%s %v", e.Status, e.StepsChanged); got != w || (h != "new" && (e.Card != "BlueField-2 0000:03:00" || e.Mode != "dpu")) {
			t.Errorf("%s: %+v, want %s", h, e, w)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "new", "rig")); !os.IsNotExist(err) {
		t.Errorf("check mode copied rig to host new (%v)", err)
	}
	if t.Failed() {
		t.Logf("fleet-report.md:\n%s\nansible-playbook:\n%s", md, out)
	}
}
