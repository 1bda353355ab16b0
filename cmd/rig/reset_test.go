package main

import (
	"strings"
	"testing"

	"rig/provision"
)

// Exit 3's line names the reset the pending steps need: a kernel step's
// is a reboot (never "power cycle"), a firmware step's a power cycle.
func TestPendingResetLine(t *testing.T) {
	kernel := &provision.Report{Summary: provision.Summary{PendingReboot: 1, Resets: []provision.Reset{provision.ResetHostReboot}}}
	if got := pendingResetLine(kernel); got != "rig: the pending changes take effect after a reset: reboot this host; then `rig up` again" {
		t.Errorf("kernel: %q", got)
	}
	both := &provision.Report{Summary: provision.Summary{PendingReboot: 2, Resets: []provision.Reset{provision.ResetHostPowerCycle, provision.ResetHostReboot}}}
	if got := pendingResetLine(both); !strings.Contains(got, "power-cycle the server (cold") || !strings.Contains(got, ", then reboot this host") {
		t.Errorf("firmware and kernel: %q", got)
	}
}
