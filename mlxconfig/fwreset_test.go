package mlxconfig

import (
	"strings"
	"testing"
)

// Each refusal of §20.2/§20.3 is recognized on its own, with a cause and
// a fix; the level-3 refusal names its level.
func TestClassifyFWReset(t *testing.T) {
	want := []struct {
		level int
		fix   string
	}{
		{3, "system-level reset"},
		{-1, "cold power-cycle"},
		{-1, "-t 4"},
		{-1, "INFO[BL31]: System Off"},
		{-1, "--sync 1"},
		{-1, "system-level reset"},
		{-1, "without limit no_reset"},
		{-1, "delete the SFs"},
		{-1, "remove the bond"},
	}
	lines := strings.Split(strings.TrimSpace(sample(t, "fwreset-refused.txt")), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines, %d wanted", len(lines), len(want))
	}
	for i, l := range lines {
		r, ok := ClassifyFWReset("Please be aware that resetting the Bluefield may take several minutes.\n" + l + "\n")
		if !ok || r.Level != want[i].level || r.Cause == "" || !strings.Contains(r.Fix, want[i].fix) || !strings.Contains(l, r.Line[:20]) {
			t.Errorf("%q: %+v %v, want level %d and a fix with %q", l, r, ok, want[i].level, want[i].fix)
		}
	}
	if _, ok := ClassifyFWReset("-I- Reset done.\n"); ok {
		t.Error("a clean reset classified as refused")
	}
}

func FuzzClassifyFWReset(f *testing.F) {
	f.Add(sample(f, "fwreset-refused.txt"))
	f.Add("-E- Reset-level '9' is not supported in the current state of this device.")
	f.Fuzz(func(t *testing.T, s string) {
		r, ok := ClassifyFWReset(s)
		if ok && (r.Cause == "" || r.Fix == "" || r.Level < -1 || r.Level > 9) {
			t.Fatalf("%+v", r)
		}
	})
}
