// Package lab is the virtual BlueField: `rig lab up KIND` gives a machine
// on which the same rig binary, with no special flags, sees a card — a
// network namespace with the card's netdevs (real veths, their far ends in
// a wire namespace), a mount namespace with the card's sysfs view (package
// card's tree merged into a sysfs of that network namespace), firmware
// tools answering from the firmware simulator (lab/fwsim), the lab's own
// OvS at the default paths, and /run/rig/lab.json (internal/labinfo).
//
// Layout on the host, for lab N (root-only, under StateRoot):
//
//	/run/rig-lab/N/            a private bind of itself (so nsfs binds work)
//	/run/rig-lab/N/lab.state   the host's record (kind, namespaces, binary)
//	/run/rig-lab/N/mnt         bind of the lab's mount namespace
//	/run/rig-lab/N/card/sys    the card's sysfs tree (ib port states live here)
//	/run/rig-lab/N/fwsim.json  firmware simulator state
//	/run/rig-lab/N/kernel.log  the lab kernel's log (SR-IOV writes it carried out or refused)
//	/run/rig-lab/N/bin/        mstconfig, mlxconfig, mstprivhost, mlxprivhost, rig, update-grub → the rig binary
//	/run/rig-lab/N/os/         the lab's /proc/cmdline, /etc/default/grub{,.d}, /boot/grub, /etc/sysctl.d (boot.go)
//	/run/rig-lab/N/stash       mount point, inside the lab only, of a pristine sysfs
//	/run/rig-lab/N/host/       the x86 host's machine (a DPU kind's lab, far ends "machines"):
//	               mnt         bind of the host's mount namespace (its sysfs view of the card)
//	               card/sys    the host's sysfs tree of the card (PFs, RShim function)
//	               stash       mount point, inside the host's view only, of a pristine sysfs
//	/run/rig-lab/N/farbin/rig  → the rig binary: PATH of the host and the peer
//	/run/netns/rig-lab-N       the lab's network namespace (the Arm)
//	/run/netns/rig-lab-N-host  the x86 host: the host PFs' netdevs, joined to pf0hpf/pf1hpf, and tmfifo_net0
//	/run/netns/rig-lab-N-peer  the peer across the cable: far ends of p0/p1, mgmt0 joined to oob_net0
//	/run/netns/rig-lab-N-wire  the wire: far ends of every other card netdev (all of them with far ends "wire")
package lab

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"rig/internal/labinfo"
)

// StateRoot holds every lab's host-side state (root only).
const StateRoot = "/run/rig-lab"

// recordSchema names lab.state's shape.
const recordSchema = "rig.lab.state/v1"

// Substitution is what the lab puts in labinfo's substitutions: the mlx5
// PMD cannot run without mlx5 hardware, af_packet carries real frames
// over the same veth.
const (
	SubstitutedPMD = "mlx5"
	SubstitutePMD  = "net_af_packet"
)

// Substitutions says, for people, what every lab substitutes.
func Substitutions() []string {
	return []string{SubstitutedPMD + " → " + SubstitutePMD + ": ports named by netdev attach through af_packet on the same veth (no mlx5 hardware here); rig plan, rig up and the report name each substituted port"}
}

// Lab names one lab's paths and namespaces.
type Lab struct {
	Name string
	Dir  string // StateRoot/Name
}

// ForName returns the lab called name (validated).
func ForName(name string) (Lab, error) {
	if err := ValidateName(name); err != nil {
		return Lab{}, err
	}
	return Lab{Name: name, Dir: filepath.Join(StateRoot, name)}, nil
}

// ValidateName checks a lab name: it becomes part of namespace names.
func ValidateName(name string) error {
	ok := len(name) >= 1 && len(name) <= 20 && name[0] != '-'
	for _, c := range name {
		ok = ok && (c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-')
	}
	if !ok {
		return fmt.Errorf("lab name %q: want 1-20 of a-z, 0-9 and '-', starting with a letter or digit (it names /run/netns/rig-lab-NAME)", name)
	}
	return nil
}

// NetNS is the lab's network namespace (under /run/netns).
func (l Lab) NetNS() string { return "rig-lab-" + l.Name }

// WireNetNS is the far side's network namespace.
func (l Lab) WireNetNS() string { return "rig-lab-" + l.Name + "-wire" }

// HostNetNS is the x86 host's network namespace, PeerNetNS the peer's
// (a DPU kind's lab with far ends on the machines).
func (l Lab) HostNetNS() string { return "rig-lab-" + l.Name + "-host" }
func (l Lab) PeerNetNS() string { return "rig-lab-" + l.Name + "-peer" }

// NetNSPath and WireNetNSPath are the namespaces' files.
func (l Lab) NetNSPath() string     { return "/run/netns/" + l.NetNS() }
func (l Lab) WireNetNSPath() string { return "/run/netns/" + l.WireNetNS() }
func (l Lab) HostNetNSPath() string { return "/run/netns/" + l.HostNetNS() }
func (l Lab) PeerNetNSPath() string { return "/run/netns/" + l.PeerNetNS() }

// netnsPaths are every network namespace a lab may have.
func (l Lab) netnsPaths() []string {
	return []string{l.NetNSPath(), l.WireNetNSPath(), l.HostNetNSPath(), l.PeerNetNSPath()}
}

// HostMntPath binds the host's mount namespace; HostCardRoot holds the
// host's sysfs tree of the card.
func (l Lab) HostMntPath() string  { return l.path("host/mnt") }
func (l Lab) HostCardRoot() string { return l.path("host/card") }
func (l Lab) hostStash() string    { return l.path("host/stash") }

// FarBinDir is first on the host's and the peer's PATH: rig only.
func (l Lab) FarBinDir() string { return l.path("farbin") }

// Far ends: where the far ends of a DPU kind's netdevs are.
const (
	// FarEndsMachines: on the machines of a BlueField in DPU mode — the
	// host PFs (host netns) for pf0hpf/pf1hpf, the host's tmfifo_net0 for
	// the Arm's, the peer (peer netns) for p0/p1 and oob_net0; every
	// other netdev's in the wire netns. The default for a DPU kind.
	FarEndsMachines = "machines"
	// FarEndsWire: every far end, same-named, in the wire netns (where a
	// check's local far ends run: far_end_netns, or the lab's default).
	// The only layout of a kind that is no DPU (cx6dx-host).
	FarEndsWire = "wire"
)

// The lab's addresses (hardware-formats.md §19.7 for tmfifo_net0: the
// host configures 192.168.100.1/30 by hand, the BFB gives the Arm
// 192.168.100.2/30). The management link Arm oob_net0 ↔ peer mgmt0 is the
// lab's own choice, the next /30.
const (
	HostTmfifoAddr = "192.168.100.1/30"
	ArmTmfifoAddr  = "192.168.100.2/30"
	PeerMgmtAddr   = "192.168.101.1/30"
	ArmOOBAddr     = "192.168.101.2/30"
)

func (l Lab) path(p string) string { return filepath.Join(l.Dir, p) }

// MntPath is the bind of the lab's mount namespace.
func (l Lab) MntPath() string { return l.path("mnt") }

// CardRoot holds the card's sysfs tree (CardRoot/sys/...).
func (l Lab) CardRoot() string { return l.path("card") }

// FirmwareState is the firmware simulator's state file.
func (l Lab) FirmwareState() string { return l.path("fwsim.json") }

// BinDir is first on PATH inside the lab.
func (l Lab) BinDir() string { return l.path("bin") }

func (l Lab) stash() string      { return l.path("stash") }
func (l Lab) recordPath() string { return l.path("lab.state") }

// record is the host's note of a lab (lab.state).
type record struct {
	SchemaVersion string `json:"schemaVersion"`
	Name          string `json:"name"`
	Kind          string `json:"kind"`
	NetNS         string `json:"netns"`
	WireNetNS     string `json:"wireNetns"`
	Binary        string `json:"binary"`
	// KernelPID is the lab kernel's process (`rig lab __kernel NAME`).
	KernelPID int `json:"kernelPid,omitempty"`
	// FarEnds: FarEndsMachines (then HostNetNS and PeerNetNS), or
	// FarEndsWire ("" in a record of a rig before the machines).
	FarEnds   string `json:"farEnds,omitempty"`
	HostNetNS string `json:"hostNetns,omitempty"`
	PeerNetNS string `json:"peerNetns,omitempty"`
}

// machines: the record's lab has a host and a peer.
func (r record) machines() bool { return r.FarEnds == FarEndsMachines }

func (l Lab) writeRecord(r record) error {
	r.SchemaVersion = recordSchema
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(l.recordPath(), append(b, '\n'), 0o600)
}

func (l Lab) readRecord() (record, error) {
	var r record
	b, err := os.ReadFile(l.recordPath())
	if err != nil {
		return r, fmt.Errorf("lab %s: %w", l.Name, err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("lab %s: %s: %w", l.Name, l.recordPath(), err)
	}
	if r.SchemaVersion != recordSchema {
		return r, fmt.Errorf("lab %s: %s has schemaVersion %q, want %q: run `rig lab down %s` and up again", l.Name, l.recordPath(), r.SchemaVersion, recordSchema, l.Name)
	}
	return r, nil
}

// info is the lab's /run/rig/lab.json (the Arm's).
func (l Lab) info(kind string, r record) *labinfo.Info {
	in := &labinfo.Info{Name: l.Name, Kind: kind, NetNS: l.NetNS(), WireNetNS: l.WireNetNS(),
		FirmwareState: l.FirmwareState(), Substitutions: map[string]string{SubstitutedPMD: SubstitutePMD}}
	if r.machines() {
		in.Machine, in.HostNetNS, in.PeerNetNS = labinfo.MachineArm, r.HostNetNS, r.PeerNetNS
	}
	return in
}

// hostInfo is the host's lab.json: the same lab seen from the host (its
// netns, kind the host card's), no firmware state (the host's BDFs are
// not the Arm's; the firmware tools answer on the Arm) and no wire.
func (l Lab) hostInfo(hostKind string) *labinfo.Info {
	return &labinfo.Info{Name: l.Name, Kind: hostKind, NetNS: l.HostNetNS(), Machine: labinfo.MachineHost,
		HostNetNS: l.HostNetNS(), PeerNetNS: l.PeerNetNS(), Substitutions: map[string]string{SubstitutedPMD: SubstitutePMD}}
}

// Error is a lab failure that explains itself (rendered with cause and fix).
type Error struct {
	Lab       string
	Err       error
	CauseText string
	FixText   string
	// Exists: the lab is already up; NotFound: no such lab.
	Exists, NotFound bool
}

func (e *Error) Error() string { return "lab " + e.Lab + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }
func (e *Error) Cause() string { return e.CauseText }
func (e *Error) Fix() string   { return e.FixText }

func notFound(name string) error {
	return &Error{Lab: name, Err: errors.New("no such lab"), NotFound: true,
		FixText: "`rig lab list` shows the labs that are up; `rig lab up KIND --name " + name + "` makes one"}
}

// Names lists the labs that have state on this host, sorted.
func Names() ([]string, error) {
	ents, err := os.ReadDir(StateRoot)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && ValidateName(e.Name()) == nil {
			out = append(out, e.Name())
		}
	}
	return out, nil
}
