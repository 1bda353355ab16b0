package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A 200,000-byte devargs is refused at playbook validation (exit 2) with
// file:line: field, before any ovs-vsctl could run.
func TestPlanRefusesHugeDevargs(t *testing.T) {
	pb := filepath.Join(t.TempDir(), "big.yaml")
	src := "name: big\novs:\n  bridges:\n    - name: br0\n      ports:\n        - name: p0\n          devargs: \"net_null0,x=" + strings.Repeat("a", 200000) + "\"\n"
	if err := os.WriteFile(pb, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := rig(t, "plan", "-p", pb, "--db", "unix:/nonexistent/db.sock")
	if code != exitUsage || !strings.Contains(errOut, pb+":7: ovs.bridges[0].ports[0].devargs: ") ||
		!strings.Contains(errOut, "(200012 bytes) is longer than 1024 bytes") || len(errOut) > 2000 {
		t.Fatalf("exit %d, stdout %q, stderr %.3000q", code, out, errOut)
	}
}
