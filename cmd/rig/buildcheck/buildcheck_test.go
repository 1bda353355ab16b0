package buildcheck

import (
	"os/exec"
	"strings"
	"testing"
)

// make build stamps the commit it builds (rig version said "commit
// unknown": this environment's GOFLAGS has -buildvcs=false).
func TestMakeBuildStampsCommit(t *testing.T) {
	for _, tool := range []string{"make", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s: %v", tool, err)
		}
	}
	head, err := exec.Command("git", "-C", "../../..", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	cmd := exec.Command("make", "-n", "build")
	cmd.Dir = "../../.."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n build: %v\n%s", err, out)
	}
	if want := "-X rig/internal/buildinfo.commit=" + strings.TrimSpace(string(head)); !strings.Contains(string(out), want) {
		t.Errorf("make build does not stamp the commit (%s):\n%s", want, out)
	}
}
