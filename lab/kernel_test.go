package lab

import (
	"bytes"
	"log"
	"strings"
	"testing"

	"rig/lab/card"
)

// What the lab kernel refuses leaves the count and mode as they were and
// logs why (the writes it carries out need the lab: TestPrivilegedLabSRIOV).
func TestKernelRefusals(t *testing.T) {
	c, _ := card.Lookup("cx6dx-host")
	var buf bytes.Buffer
	k := &kernel{c: c, log: log.New(&buf, "", 0)}
	p := &kpf{fn: c.Fns[0], total: 8, numvfs: 2, mode: "legacy"}
	for _, tc := range []struct{ v, log string }{
		{"4", "mlx5_core 0000:3b:00.0: 2 VFs already enabled. Disable before enabling 4 VFs (EBUSY"},
		{"9", "sriov_numvfs: 9 refused (ERANGE: sriov_totalvfs 8); 2 VFs stay"},
		{"two", `sriov_numvfs: "two" refused (EINVAL); 2 VFs stay`},
		{"2", ""},
	} {
		buf.Reset()
		if n := k.setNumVFs(p, tc.v); n != 2 || !strings.Contains(buf.String(), tc.log) || (tc.log == "") != (buf.Len() == 0) {
			t.Errorf("write %q: count %d, log %q, want 2 and %q", tc.v, n, buf.String(), tc.log)
		}
	}
	for _, tc := range []struct{ v, want, log string }{
		{"switchdev", "legacy", "compat/devlink/mode: switchdev refused (EBUSY: 2 VFs enabled"},
		{"offload", "legacy", `"offload" refused (EINVAL`},
	} {
		buf.Reset()
		if m := k.setMode(p, tc.v); m != tc.want || !strings.Contains(buf.String(), tc.log) {
			t.Errorf("mode %q: %s, log %q, want %s and %q", tc.v, m, buf.String(), tc.want, tc.log)
		}
	}
	p.numvfs = 0
	if m := k.setMode(p, "switchdev"); m != "switchdev" || !strings.Contains(buf.String(), "eSwitch mode legacy -> switchdev") {
		t.Errorf("mode with 0 VFs: %s, log %q", m, buf.String())
	}
}
