package provision

import (
	"os"
	"time"

	"rig/internal/host"
)

// Env is what steps need beyond the playbook: the host seam and the
// command line's targets.
type Env struct {
	Host *host.Host
	// OVSRunDir is a private OvS instance's directory (`rig ovs daemon
	// start --rundir`); OVSDB an ovsdb remote. Both empty: the system OvS.
	OVSRunDir string
	OVSDB     string
	// NetNS is the network namespace (a name under /run/netns) whose
	// netdevs the rdma step reads and sets up; "" = rig's own.
	NetNS string
	// FixtureRoot is --root when it is not "/": the steps read a fixture
	// tree, so a write that would land on this machine (a mount, netlink,
	// ovs-vsctl, mst start, a firmware tool) is planned, shown and refused
	// at apply. Writes under the root itself (sysfs files of a fake kernel
	// tree) stay allowed. Tests that model a live host leave it empty.
	FixtureRoot string
	// FirmwareSim: the firmware tools are the simulator (--fw-sim), so a
	// firmware write under a fixture root changes only its state file.
	FirmwareSim bool
	// StateFile is rig's state file (what down restores), a path on this
	// machine whatever Host.Root is: StateFileFor's answer. "" resolves
	// it from Host.Root and the environment (StateFileFor with no flag).
	StateFile string
	// Playbook is the name of the playbook the steps run for: rig's state
	// file keeps each playbook's records apart (StateStore.Playbook), so
	// `rig down -p X` undoes exactly what X changed.
	Playbook string
	// Now and Sleep are the clock (nil = the real one); tests pass fakes.
	Now   func() time.Time
	Sleep func(time.Duration)
	// Geteuid is rig's effective uid (nil = os.Geteuid), which a failing
	// firmware tool ran with too; tests play a non-root user.
	Geteuid func() int
}

// NowFunc is the clock: Env.Now, or time.Now.
func (e *Env) NowFunc() func() time.Time {
	if e.Now != nil {
		return e.Now
	}
	return time.Now
}

// EUID is rig's effective uid: Env.Geteuid's, or os.Geteuid's.
func (e *Env) EUID() int {
	if e.Geteuid != nil {
		return e.Geteuid()
	}
	return os.Geteuid()
}

// SleepFunc is how a step waits: Env.Sleep, or time.Sleep.
func (e *Env) SleepFunc() func(time.Duration) {
	if e.Sleep != nil {
		return e.Sleep
	}
	return time.Sleep
}
