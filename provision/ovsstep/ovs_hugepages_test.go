package ovsstep

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"rig/internal/testutil/fakeexec"
	"rig/ovs/ovstest"
	"rig/provision"
	"rig/provision/steptest"
)

// shortLog is ovs-vswitchd's log of a start where DPDK found too few free
// hugepages (dpdk-init=try: vswitchd runs on, without DPDK).
const shortLog = `2026-12-07T10:00:00.000Z|00001|vlog|INFO|opened log file /var/log/openvswitch/ovs-vswitchd.log
2026-12-07T10:00:00.100Z|00010|dpdk|INFO|DPDK Enabled - initializing...
2026-12-07T10:00:00.200Z|00020|dpdk|INFO|EAL: Not enough memory available on socket 0! Requested: 128MB, available: 0MB
2026-12-07T10:00:00.200Z|00021|dpdk|ERR|EAL: FATAL: Cannot init memory
2026-12-07T10:00:00.300Z|00022|dpdk|EMER|Unable to initialize DPDK: Cannot allocate memory
2026-12-07T10:00:00.300Z|00023|dpdk|ERR|DPDK Initialization Failed.
`

// hugeShortHost: OvS's settings are the playbook's, DPDK did not
// initialise for want of hugepages at the last start, and free 2M pages
// are now there.
func hugeShortHost(t *testing.T, free int) (*fakeexec.Recorder, *provision.Env) {
	t.Helper()
	st := strings.Replace(string(steptest.Sample(t, "state-attached.json")), `{"data":[[true,`, `{"data":[[false,`, 1)
	f := fakeOVS([]byte(st), []byte(st))
	h := systemHost(t, f)
	for p, c := range map[string]string{
		"/var/log/openvswitch/ovs-vswitchd.log":                                       shortLog,
		"/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages":                      "64",
		"/sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages":                    strconv.Itoa(free),
		"/sys/kernel/mm/hugepages/hugepages-2048kB/resv_hugepages":                    "0",
		"/sys/kernel/mm/hugepages/hugepages-2048kB/surplus_hugepages":                 "0",
		"/sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages":      "64",
		"/sys/devices/system/node/node0/hugepages/hugepages-2048kB/free_hugepages":    strconv.Itoa(free),
		"/sys/devices/system/node/node0/hugepages/hugepages-2048kB/surplus_hugepages": "0",
	} {
		full := h.Path(p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return f, &provision.Env{Host: h, StateFile: filepath.Join(t.TempDir(), "state.json")}
}

// After a transient shortage the pages are back: rig up plans the restart
// that initialises DPDK (it used to stop at the old diagnosis for ever).
func TestOVSStepUnitHugepagesBackRestarts(t *testing.T) {
	_, env := hugeShortHost(t, 64)
	step, err := NewOVSStep(env, vdevSpec())
	if err != nil {
		t.Fatal(err)
	}
	plan, err := step.Check(context.Background())
	if err != nil {
		t.Fatalf("pages are free again, want a planned restart: %v", err)
	}
	ch := plan.Changes()
	if len(ch) != 1 || ch[0].Object != "ovs-vswitchd" || !strings.Contains(ch[0].To, "too few free hugepages") || !strings.Contains(ch[0].To, "128 MB free on socket 0") {
		t.Fatalf("plan: %+v", ch)
	}
}

// Still short: the diagnosis, whose fix says what is free, what is asked
// and that rig up restarts ovs-vswitchd once the pages are there.
func TestOVSStepUnitHugepagesStillShort(t *testing.T) {
	f, env := hugeShortHost(t, 10)
	step, _ := NewOVSStep(env, vdevSpec())
	_, err := step.Check(context.Background())
	p, ok := provision.AsProblem(err)
	if !ok || !strings.Contains(p.Fix(), "20 MB free on socket 0") || !strings.Contains(p.Fix(), "asks 128 MB") ||
		!strings.Contains(p.Fix(), "`rig up` restarts ovs-vswitchd") {
		t.Fatalf("got %v", err)
	}
	if w := ovsWrites(f); len(w) != 0 {
		t.Fatalf("check wrote: %q", w)
	}
	_ = ovstest.IsRead
}
