// Package labinfo is the one fact a virtual BlueField lab (`rig lab up`)
// tells the rig that runs inside it: which lab this is, where the far side
// of its cables is, and what it substitutes for hardware that cannot exist
// here. The lab writes the file into its own mount namespace (a tmpfs over
// /run/rig), so it exists only inside the lab; on a real host Read finds
// nothing and rig behaves as on hardware.
package labinfo

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"rig/internal/host"
)

// Path is where the lab's description lives inside the lab.
const Path = "/run/rig/lab.json"

// SchemaVersion of the file.
const SchemaVersion = "rig.lab/v1"

// Info describes the lab rig runs in.
type Info struct {
	SchemaVersion string `json:"schemaVersion"`
	Name          string `json:"name"`
	Kind          string `json:"kind"` // bf2-dpu, bf3-dpu, cx6dx-host
	// NetNS is the lab's own network namespace (a name under /run/netns);
	// WireNetNS the far side's: the cable and the far host, where a check's
	// traffic source and sink run. A card netdev's far end in WireNetNS has
	// the same name as the netdev (p0 ↔ p0).
	NetNS     string `json:"netns"`
	WireNetNS string `json:"wireNetns"`
	// FirmwareState is the firmware simulator's state file (lab/fwsim) that
	// the lab's mstconfig/mlxconfig answer from.
	FirmwareState string `json:"firmwareState"`
	// Substitutions: hardware rig cannot drive here → what stands in, e.g.
	// "mlx5" → "net_af_packet" (a port named by netdev attaches through
	// af_packet on the same veth instead of the mlx5 PMD).
	Substitutions map[string]string `json:"substitutions,omitempty"`
	// Machine is which machine of a DPU kind's lab this is (MachineArm,
	// MachineHost; the peer has no lab.json), "" in a lab whose far ends
	// are all in WireNetNS. HostNetNS and PeerNetNS are then the lab's x86
	// host and peer: pf0hpf's far end is the host's PF0 netdev there, p0's
	// the peer's p0, and WireNetNS holds only the far ends of the other
	// netdevs (VF and SF representors).
	Machine   string `json:"machine,omitempty"`
	HostNetNS string `json:"hostNetns,omitempty"`
	PeerNetNS string `json:"peerNetns,omitempty"`
}

// The machines of a DPU kind's lab.
const (
	MachineArm  = "arm"
	MachineHost = "host"
)

// Read returns the lab rig runs in, reading Path under root (through the
// host seam: inside the tree under a fixture root, a regular file of
// bounded size); (nil, nil) when the file does not exist (not in a lab).
func Read(root string) (*Info, error) {
	h := host.New(root)
	p := h.Path(Path)
	b, err := h.ReadFile(Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	var in Info
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, fmt.Errorf("lab: %s: %w; the lab's description is damaged: run `rig lab down` and `rig lab up` again", p, err)
	}
	if in.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("lab: %s: schemaVersion %q, want %q; this rig is older or newer than the one that made the lab: recreate it", p, in.SchemaVersion, SchemaVersion)
	}
	return &in, nil
}

// Write writes in to dir/lab.json (the lab calls it with dir = the
// lab's /run/rig as seen from the host side of its setup).
func Write(dir string, in *Info) error {
	in.SchemaVersion = SchemaVersion
	b, err := json.MarshalIndent(in, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "lab.json"), append(b, '\n'), 0o644)
}
