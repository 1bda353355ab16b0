package provision

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// stateFile is what rig changed that a later `rig down` restores, so it
// restores the previous values instead of guessing (a host path, under
// the root like every other).
const stateFile = "/var/lib/rig/state.json"

// stateFilePath is stateFile, or $RIG_STATE_FILE when set: tests that run
// steps on this machine keep their records in a temporary file, not the
// host's.
func stateFilePath() string {
	if p := os.Getenv("RIG_STATE_FILE"); p != "" {
		return p
	}
	return stateFile
}

// stateVersion is the file's schema version; a newer one is refused.
const stateVersion = 1

type rigState struct {
	Version   int           `json:"version"`
	Bound     []boundDevice `json:"bound,omitempty"`
	Hugepages *hugeRecord   `json:"hugepages,omitempty"`
	Kernel    *kernelRecord `json:"kernel,omitempty"`
	SRIOV     []sriovRecord `json:"sriov,omitempty"`
	OVS       []ovsRecord   `json:"ovs,omitempty"`
	// Firmware: per card, each parameter's Next Boot value before rig's
	// first set (as the tool printed it, NAME(n) or a number).
	Firmware map[string]map[string]string `json:"firmware,omitempty"`
}

// ovsRecord is what the ovs step changed in one OvS instance (Target: its
// ovsdb remote, "" for the system one).
type ovsRecord struct {
	Target  string             `json:"target"`
	Config  map[string]*string `json:"config,omitempty"` // key -> value before rig (null: absent)
	Bridges []string           `json:"bridges,omitempty"`
	Ports   []ovsPortRecord    `json:"ports,omitempty"` // ports rig added to bridges it did not make
}

type ovsPortRecord struct {
	Bridge string `json:"bridge"`
	Name   string `json:"name"`
}

// fileRecord is a file rig wrote: whether it existed and what it held
// before rig's first write (restored by rig down, or removed).
type fileRecord struct {
	Path    string `json:"path"`
	Existed bool   `json:"existed"`
	Content string `json:"content,omitempty"`
	// Link: the path was a symlink rig made (Content is its old target).
	Link bool `json:"link,omitempty"`
}

// hugeRecord is what the hugepages step changed.
type hugeRecord struct {
	Pools  []poolRecord  `json:"pools,omitempty"`
	Mounts []mountRecord `json:"mounts,omitempty"` // hugetlbfs mounts rig made
	Files  []fileRecord  `json:"files,omitempty"`
}

type mountRecord struct {
	Path    string `json:"path"`
	Created bool   `json:"created"` // rig made the directory too
}

type poolRecord struct {
	SizeKB int64 `json:"sizeKB"`
	Node   int   `json:"node"`
	Before int   `json:"before"`
}

// kernelRecord is what the kernel step changed.
type kernelRecord struct {
	Files  []fileRecord      `json:"files,omitempty"`
	Sysctl map[string]string `json:"sysctl,omitempty"` // name -> live value before
	// Leaving: boot parameters rig down took out of the drop-in that the
	// running kernel still had (a reboot away from gone).
	Leaving []string `json:"leaving,omitempty"`
}

// sriovRecord is a PF's settings before the sriov step changed them.
type sriovRecord struct {
	BDF     string `json:"bdf"`
	NumVFs  int    `json:"numvfs"`
	Eswitch string `json:"eswitch,omitempty"`
}

// boundDevice is one PCI function the bind step moved to another driver.
type boundDevice struct {
	BDF    string `json:"bdf"`
	Netdev string `json:"netdev,omitempty"` // its netdev before the bind (gone after it)
	// Original is the driver it had ("" = none), what `rig down` rebinds.
	Original string `json:"originalDriver"`
	Driver   string `json:"driver"`
}

// stateHost is what reading and writing the state file needs.
type stateHost interface {
	ReadFile(p string) ([]byte, error)
	ReplaceFile(p string, data []byte, perm fs.FileMode) error
}

func loadState(h stateHost) (rigState, error) {
	b, err := h.ReadFile(stateFilePath())
	if errors.Is(err, fs.ErrNotExist) {
		return rigState{Version: stateVersion}, nil
	}
	if err != nil {
		return rigState{}, fmt.Errorf("rig state %s: %w", stateFilePath(), err)
	}
	var st rigState
	if err := json.Unmarshal(b, &st); err != nil {
		return rigState{}, fmt.Errorf("rig state %s: %w (fix or remove the file; it only records what `rig down` restores)", stateFilePath(), err)
	}
	if st.Version > stateVersion {
		return rigState{}, fmt.Errorf("rig state %s: version %d is newer than this rig's %d; use the rig that wrote it", stateFilePath(), st.Version, stateVersion)
	}
	st.Version = stateVersion
	return st, nil
}

func saveState(h stateHost, st rigState) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := h.ReplaceFile(stateFilePath(), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("rig state %s: %w", stateFilePath(), err)
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

// updateState loads the state, lets change edit it, and saves it.
func updateState(h stateHost, change func(st *rigState)) error {
	st, err := loadState(h)
	if err != nil {
		return err
	}
	change(&st)
	return saveState(h, st)
}

// recordFile adds a file's before-state unless it is recorded already
// (the first write's before is the host's own).
func recordFile(list *[]fileRecord, r fileRecord) {
	for _, old := range *list {
		if old.Path == r.Path {
			return
		}
	}
	*list = append(*list, r)
}

// fileBefore reads a path's before-state for recordFile.
func fileBefore(h interface {
	ReadFile(p string) ([]byte, error)
	Readlink(p string) (string, error)
}, p string, link bool) fileRecord {
	if link {
		t, err := h.Readlink(p)
		return fileRecord{Path: p, Existed: err == nil, Content: t, Link: true}
	}
	b, err := h.ReadFile(p)
	return fileRecord{Path: p, Existed: err == nil, Content: string(b)}
}

// restoreHost is what restoring a recorded file needs.
type restoreHost interface {
	ReadFile(p string) ([]byte, error)
	Readlink(p string) (string, error)
	CreateFile(p string, data []byte, perm fs.FileMode) error
	Symlink(target, p string) error
	Remove(p string) error
}

// planRestoreFile plans putting a file back as it was before rig's first
// write: removed when rig created it, its old content (or link) otherwise.
func planRestoreFile(h restoreHost, f fileRecord, what string, plan *Plan) {
	now := fileBefore(h, f.Path, f.Link)
	if now.Existed == f.Existed && (!f.Existed || now.Content == f.Content) {
		return
	}
	obj := what + " " + f.Path
	switch {
	case !f.Existed:
		plan.add(func(context.Context) error { return h.Remove(f.Path) }, Change{Object: obj, Action: "remove (rig created it)"})
	case f.Link:
		plan.add(func(context.Context) error {
			if now.Existed {
				if err := h.Remove(f.Path); err != nil {
					return err
				}
			}
			return h.Symlink(f.Content, f.Path)
		}, Change{Object: obj, Action: "restore link", To: f.Content})
	default:
		plan.add(func(context.Context) error { return h.CreateFile(f.Path, []byte(f.Content), 0o644) },
			Change{Object: obj, Action: "restore the content it had before rig"})
	}
}
