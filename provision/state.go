package provision

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	"rig/internal/host"
)

// stateFile is what rig changed that a later `rig down` restores, so it
// restores the previous values instead of guessing: today the drivers the
// bind step replaced.
const stateFile = "/var/lib/rig/state.json"

// stateVersion is the file's schema version; a newer one is refused.
const stateVersion = 1

type rigState struct {
	Version int           `json:"version"`
	Bound   []boundDevice `json:"bound,omitempty"`
}

// boundDevice is one PCI function the bind step moved to another driver.
type boundDevice struct {
	BDF    string `json:"bdf"`
	Netdev string `json:"netdev,omitempty"` // its netdev before the bind (gone after it)
	// Original is the driver it had ("" = none), what `rig down` rebinds.
	Original string `json:"originalDriver"`
	Driver   string `json:"driver"`
}

func loadState(h *host.Host) (rigState, error) {
	b, err := h.ReadFile(stateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return rigState{Version: stateVersion}, nil
	}
	if err != nil {
		return rigState{}, fmt.Errorf("rig state %s: %w", stateFile, err)
	}
	var st rigState
	if err := json.Unmarshal(b, &st); err != nil {
		return rigState{}, fmt.Errorf("rig state %s: %w (fix or remove the file; it only records what `rig down` restores)", stateFile, err)
	}
	if st.Version > stateVersion {
		return rigState{}, fmt.Errorf("rig state %s: version %d is newer than this rig's %d; use the rig that wrote it", stateFile, st.Version, stateVersion)
	}
	st.Version = stateVersion
	return st, nil
}

func saveState(h *host.Host, st rigState) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := h.ReplaceFile(stateFile, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("rig state %s: %w", stateFile, err)
	}
	return nil
}

// bound returns the record of a function rig bound, by BDF or by the
// netdev it had.
func (st rigState) bound(bdf, netdev string) (boundDevice, bool) {
	for _, b := range st.Bound {
		if (bdf != "" && b.BDF == bdf) || (netdev != "" && b.Netdev == netdev) {
			return b, true
		}
	}
	return boundDevice{}, false
}

// recordBind adds (or keeps) the record of a bind: an earlier record's
// original driver stays, since that is what the host had before rig.
func (st *rigState) recordBind(b boundDevice) {
	for i, old := range st.Bound {
		if old.BDF == b.BDF {
			if b.Netdev == "" {
				b.Netdev = old.Netdev
			}
			b.Original = old.Original
			st.Bound[i] = b
			return
		}
	}
	st.Bound = append(st.Bound, b)
}
