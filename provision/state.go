package provision

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"rig/internal/host"
)

// DefaultStateFile is rig's record of what it changed that a later `rig
// down` restores (the previous values, so down restores instead of
// guessing), when the host root is "/". It is a path on the machine rig
// runs on, never under --root: see StateFileFor.
const DefaultStateFile = "/var/lib/rig/state.json"

// Where a state file's path came from (StateFile.Source).
const (
	StateFromFlag    = "--state-file"
	StateFromEnv     = "$RIG_STATE_FILE"
	StateFromDefault = "default"
)

// StateFile is where rig keeps its state file on this machine, and why
// there.
type StateFile struct {
	Path   string
	Source string // StateFromFlag, StateFromEnv or StateFromDefault
}

// StateFileFor resolves rig's state file for the host root: flag
// (--state-file), else $RIG_STATE_FILE, else the default. The default
// with root "/" is DefaultStateFile; under any other root it is a file
// per tree outside the tree (a fixture checkout stays clean):
// BASE/roots/KEY/state.json, BASE being $RIG_STATE_DIR when set, else
// /var/lib/rig for root (euid 0), else $XDG_STATE_HOME/rig or
// ~/.local/state/rig, and KEY StateKey of the tree. ($RIG_STATE_DIR with
// root "/": $RIG_STATE_DIR/state.json.) Relative paths are made absolute.
// root, flag and the environment are arguments so rig up and rig down of
// one tree derive the same file and tests need not touch /var/lib/rig.
func StateFileFor(root, flag string, euid int, getenv func(string) string) (StateFile, error) {
	if flag != "" {
		p, err := filepath.Abs(flag)
		if err != nil {
			return StateFile{}, fmt.Errorf("--state-file %s: %w", flag, err)
		}
		return StateFile{Path: p, Source: StateFromFlag}, nil
	}
	if e := getenv("RIG_STATE_FILE"); e != "" {
		p, err := filepath.Abs(e)
		if err != nil {
			return StateFile{}, fmt.Errorf("$RIG_STATE_FILE %s: %w", e, err)
		}
		return StateFile{Path: p, Source: StateFromEnv}, nil
	}
	realRoot := root == "" || filepath.Clean(root) == "/"
	base := getenv("RIG_STATE_DIR")
	switch {
	case base != "":
		b, err := filepath.Abs(base)
		if err != nil {
			return StateFile{}, fmt.Errorf("$RIG_STATE_DIR %s: %w", base, err)
		}
		base = b
	case realRoot:
		return StateFile{Path: DefaultStateFile, Source: StateFromDefault}, nil
	case euid == 0:
		base = filepath.Dir(DefaultStateFile)
	case filepath.IsAbs(getenv("XDG_STATE_HOME")):
		base = filepath.Join(getenv("XDG_STATE_HOME"), "rig")
	case filepath.IsAbs(getenv("HOME")):
		base = filepath.Join(getenv("HOME"), ".local", "state", "rig")
	default:
		return StateFile{}, fmt.Errorf("rig state for --root %s: no default place (neither $XDG_STATE_HOME nor $HOME is an absolute path); give --state-file FILE", root)
	}
	if realRoot {
		return StateFile{Path: filepath.Join(base, "state.json"), Source: StateFromDefault}, nil
	}
	key, err := StateKey(root)
	if err != nil {
		return StateFile{}, err
	}
	return StateFile{Path: filepath.Join(base, "roots", key, "state.json"), Source: StateFromDefault}, nil
}

// StateKey names a host root's state directory: the tree's last path
// element (letters, digits, '.', '_', '-'; at most 32) and the first 12
// hex digits of the SHA-256 of its absolute path, symlinks resolved, so
// two trees never share a file and one tree always finds its own
// (testdata/hosts/bf2-dpu-arm: bf2-dpu-arm-1a2b3c4d5e6f).
func StateKey(root string) (string, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("rig state for --root %s: %w", root, err)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	base := filepath.Base(abs)
	if base == "/" {
		base = "root"
	}
	name := []byte(base)
	for i, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			name[i] = '_'
		}
	}
	if len(name) > 32 {
		name = name[:32]
	}
	if len(name) == 0 || name[0] == '.' {
		name = append([]byte("root"), name...)
	}
	sum := sha256.Sum256([]byte(abs))
	return string(name) + "-" + hex.EncodeToString(sum[:6]), nil
}

// StateStore is the state file as the steps read and write it: a path on
// this machine (never under the host root), or why there is none.
type StateStore struct {
	Path string
	// Playbook names the playbook whose records this store reads and
	// writes (state_layers.go): rig's state keeps each playbook's records
	// apart, so `rig down -p X` undoes exactly X's. "" is a run without a
	// playbook name (tests), and the records of a version-1 file.
	Playbook string
	err      error
}

// State is the Env's state file: Env.StateFile, or, when that is
// empty (tests that build an Env), StateFileFor the host root and the
// process's environment.
func (e *Env) State() StateStore {
	if e.StateFile != "" {
		return StateStore{Path: e.StateFile, Playbook: e.Playbook}
	}
	root := "/"
	if e.Host != nil && e.Host.Root != "" {
		root = e.Host.Root
	}
	sf, err := StateFileFor(root, "", os.Geteuid(), os.Getenv)
	return StateStore{Path: sf.Path, Playbook: e.Playbook, err: err}
}

// String is the file's path, for notes and changes.
func (s StateStore) String() string {
	if s.Path == "" {
		return "rig's state file"
	}
	return s.Path
}

func (s StateStore) ready() error {
	switch {
	case s.err != nil:
		return s.err
	case s.Path == "":
		return errors.New("rig state: no state file given (a step built without its Env); give --state-file FILE")
	}
	return nil
}

// stateVersion is the file's schema version; a newer one is refused.
// Version 1 held one set of records; version 2 holds one per playbook
// (stateDoc). A version-1 file reads as the records of playbook "".
const stateVersion = 2

// RigState is one playbook's records in the state file: what rig's steps
// changed for it, and what was there before, for rig down to restore.
type RigState struct {
	Version   int           `json:"version"`
	Bound     []BoundDevice `json:"bound,omitempty"`
	Hugepages *HugeRecord   `json:"hugepages,omitempty"`
	Kernel    *KernelRecord `json:"kernel,omitempty"`
	SRIOV     []SRIOVRecord `json:"sriov,omitempty"`
	OVS       []OVSRecord   `json:"ovs,omitempty"`
	// Firmware: per card, each parameter's Next Boot value before rig's
	// first set (as the tool printed it, NAME(n) or a number).
	Firmware map[string]map[string]string `json:"firmware,omitempty"`
}

// OVSRecord is what the ovs step changed in one OvS instance (Target: its
// ovsdb remote, "" for the system one).
type OVSRecord struct {
	Target  string             `json:"target"`
	Config  map[string]*string `json:"config,omitempty"` // key -> value before rig (null: absent)
	Bridges []string           `json:"bridges,omitempty"`
	Ports   []OVSPortRecord    `json:"ports,omitempty"` // ports rig added to bridges it did not make
	// Relied: bridges this playbook wants that another playbook of rig's
	// made before it (provision.Layers): down leaves them, unless that one
	// came down first and handed its record over (then in Bridges).
	Relied []string `json:"relied,omitempty"`
}

type OVSPortRecord struct {
	Bridge string `json:"bridge"`
	Name   string `json:"name"`
}

// FileRecord is a file rig wrote: whether it existed and what it held
// before rig's first write (restored by rig down, or removed).
type FileRecord struct {
	Path    string `json:"path"`
	Existed bool   `json:"existed"`
	Content string `json:"content,omitempty"`
	// Link: the path was a symlink rig made (Content is its old target).
	Link bool `json:"link,omitempty"`
}

// HugeRecord is what the hugepages step changed.
type HugeRecord struct {
	Pools  []PoolRecord  `json:"pools,omitempty"`
	Mounts []MountRecord `json:"mounts,omitempty"` // hugetlbfs mounts rig made
	Files  []FileRecord  `json:"files,omitempty"`
	// Persist: the pool counts this playbook put in the tmpfiles.d
	// drop-in. The drop-in holds those of every playbook still up,
	// composed (the system's own before, in Files, comes back with the
	// last one's down).
	Persist []PersistPool `json:"persist,omitempty"`
}

// PersistPool is one pool count a playbook put in the tmpfiles.d drop-in:
// a minimum, or with Exact the count (as the playbook's reservation).
type PersistPool struct {
	SizeKB int64 `json:"sizeKB"`
	Node   int   `json:"node"`
	Count  int   `json:"count"`
	Exact  bool  `json:"exact,omitempty"`
}

type MountRecord struct {
	Path    string `json:"path"`
	Created bool   `json:"created"` // rig made the directory too
	// Mounted: it was mounted before this playbook, by another playbook
	// of rig's this one relies on (provision.Layers): down leaves it.
	Mounted bool `json:"mounted,omitempty"`
}

type PoolRecord struct {
	SizeKB int64 `json:"sizeKB"`
	Node   int   `json:"node"`
	Before int   `json:"before"`
}

// KernelRecord is what the kernel step changed.
type KernelRecord struct {
	Files  []FileRecord      `json:"files,omitempty"`
	Sysctl map[string]string `json:"sysctl,omitempty"` // name -> live value before
	// Leaving: boot parameters rig down took out of the drop-in that the
	// running kernel still had (a reboot away from gone).
	Leaving []string `json:"leaving,omitempty"`
	// BootArgs and SysctlFile: what this playbook put in the GRUB and the
	// sysctl drop-ins. Each drop-in holds those of every playbook still
	// up, composed (the system's own before, in Files, comes back with
	// the last one's down).
	BootArgs   []string          `json:"bootArgs,omitempty"`
	SysctlFile map[string]string `json:"sysctlFile,omitempty"`
}

// SRIOVRecord is a PF's settings before the sriov step changed them.
type SRIOVRecord struct {
	BDF     string `json:"bdf"`
	NumVFs  int    `json:"numvfs"`
	Eswitch string `json:"eswitch,omitempty"`
}

// BoundDevice is one PCI function the bind step moved to another driver.
type BoundDevice struct {
	BDF    string `json:"bdf"`
	Netdev string `json:"netdev,omitempty"` // its netdev before the bind (gone after it)
	// Original is the driver it had ("" = none), what `rig down` rebinds.
	Original string `json:"originalDriver"`
	Driver   string `json:"driver"`
}

// LoadState reads the records of sf.Playbook from the state file on this
// machine (whatever the host root); none yet is an empty record. The file
// must be one only rig's user could have written (readStateFile); a file or
// directory another user could have planted or changed is refused.
func LoadState(sf StateStore) (RigState, error) {
	if err := sf.ready(); err != nil {
		return RigState{}, err
	}
	release, err := lockState(sf, unix.LOCK_SH)
	if err != nil {
		return RigState{}, err
	}
	defer release()
	return loadState(sf)
}

// loadState is LoadState under the state file's lock.
func loadState(sf StateStore) (RigState, error) {
	doc, err := loadDoc(sf)
	if err != nil {
		return RigState{}, err
	}
	st, _ := doc.of(sf.Playbook)
	st.Version = stateVersion
	return st, nil
}

// maxStateFile bounds the state file rig reads: its records are a few
// kilobytes (the largest, a file's content before rig, is bounded by
// MaxRecordedContent); a bigger file is not rig's.
const maxStateFile = 4 << 20

// ErrStateUntrusted is wrapped by LoadState when the state file or its
// directory could have been planted or changed by another user.
var ErrStateUntrusted = errors.New("untrusted state file")

// readStateFile reads the state file the way AcquireLock opens the lock
// (lock.go), and refuses what it refuses there: a directory owned by
// another user, or writable by group or others without the sticky bit (they
// could replace the file under rig); a file that is not a regular one (a
// FIFO would hang the read: it is opened O_NONBLOCK and checked with fstat
// before any read), a symbolic link (never followed), one with more than
// one link, one owned by neither root nor euid, one group or others may
// write, or one over maxStateFile. A missing file or directory is
// fs.ErrNotExist.
func readStateFile(path string, euid int) ([]byte, error) {
	obj := "rig state " + path
	dir := filepath.Dir(path)
	b, err := host.ReadTrusted(path, host.Trust{Flags: unix.O_RDONLY, RootOwner: true, Forbidden: 0o022, OneLink: true, MaxSize: maxStateFile, CheckDir: true, EUID: euid})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fs.ErrNotExist
	}
	var u *host.Untrusted
	var pe *fs.PathError
	switch {
	case err == nil:
		return b, nil
	case errors.As(err, &u):
		return nil, untrustedStateFile(obj, path, dir, euid, u)
	case errors.As(err, &pe) && pe.Path == dir:
		return nil, &Problem{Object: obj, Err: fmt.Errorf("directory %s: %w", dir, pe.Err), FixText: "give another place with --state-file FILE"}
	case errors.As(err, &pe) && pe.Op == "open":
		err = pe.Err
	}
	return nil, &Problem{Object: obj, Err: err, FixText: "check the path, or give another place with --state-file FILE"}
}

// untrustedStateFile words what u found wrong with the state file at path
// (or its directory dir), with the fix.
func untrustedStateFile(obj, path, dir string, euid int, u *host.Untrusted) error {
	rmFix := "remove it (rm " + path + "); rig writes its own file there"
	switch u.Why {
	case host.WhyDirKind:
		return untrustedState(obj, fmt.Sprintf("its directory %s is %s, not a directory", dir, u.Kind), "give another place with --state-file FILE")
	case host.WhyDirOwner:
		return untrustedState(obj, fmt.Sprintf("its directory %s is owned by %s, not by root or rig's user", dir, userName(u.UID)),
			"chown root "+dir+" (or remove it: rm -r "+dir+"; rig recreates it), or give another place with --state-file FILE")
	case host.WhyDirMode:
		return untrustedState(obj, fmt.Sprintf("its directory %s is writable by group or others (mode %#o) without the sticky bit: any user who can write it can replace the file", dir, u.Mode),
			"chmod go-w "+dir+", or give another place with --state-file FILE")
	case host.WhySymlink:
		return untrustedState(obj, "it is a symbolic link"+linkTarget(path)+"; rig does not follow it", rmFix)
	case host.WhyKind:
		return untrustedState(obj, "it is "+u.Kind+", not a regular file", rmFix)
	case host.WhyOwner:
		return untrustedState(obj, fmt.Sprintf("it is owned by %s, not by root or rig's user (%s)", userName(u.UID), userName(uint32(euid))),
			"remove it (rm "+path+") unless you know it is rig's, then chown root "+path)
	case host.WhyMode:
		return untrustedState(obj, fmt.Sprintf("it is writable by group or others (mode %#o)", u.Mode),
			"chmod go-w "+path+" (rig writes it 0600), after checking that its records are rig's")
	case host.WhyLinks:
		return untrustedState(obj, fmt.Sprintf("it has %d hard links; it may be a link to another file", u.N), rmFix)
	}
	if u.Grew {
		return untrustedState(obj, fmt.Sprintf("it grew past %d bytes while read", maxStateFile), "remove it (rm "+path+") and restore by hand what rig changed")
	}
	return untrustedState(obj, fmt.Sprintf("it is %d bytes, more than the %d a state file of rig's can be", u.N, maxStateFile), "remove it (rm "+path+") and restore by hand what rig changed")
}

func untrustedState(obj, what, fix string) error {
	return &Problem{Object: obj, Err: fmt.Errorf("%w: %s; nothing was written", ErrStateUntrusted, what),
		CauseText: "rig writes its state file itself (a regular file, mode 0600, owned by the user rig runs as, in a directory only that user or root can change); this one could have been planted or changed by another user",
		FixText:   fix}
}

// SaveState writes st as sf.Playbook's records into the state file,
// atomically on this machine (the real root's ReplaceFile), making its
// directory; the other playbooks' records stay as they are. It holds the
// state file's own lock (lockState).
func SaveState(sf StateStore, st RigState) error {
	if err := sf.ready(); err != nil {
		return err
	}
	release, err := lockState(sf, unix.LOCK_EX)
	if err != nil {
		return err
	}
	defer release()
	doc, err := loadDoc(sf)
	if err != nil {
		return err
	}
	doc.set(sf.Playbook, st)
	return saveDoc(sf, doc)
}

// BoundRecord returns the record of a function rig bound, by BDF or by
// the netdev it had.
func (st RigState) BoundRecord(bdf, netdev string) (BoundDevice, bool) {
	for _, b := range st.Bound {
		if (bdf != "" && b.BDF == bdf) || (netdev != "" && b.Netdev == netdev) {
			return b, true
		}
	}
	return BoundDevice{}, false
}

// RecordBind adds (or keeps) the record of a bind: an earlier record's
// original driver stays, since that is what the host had before rig.
func (st *RigState) RecordBind(b BoundDevice) {
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

// UpdateState loads sf.Playbook's records, lets change edit them, and
// saves them (the other playbooks' records as they were read). It holds
// the state file's own lock (lockState) throughout.
func UpdateState(sf StateStore, change func(st *RigState)) error {
	if err := sf.ready(); err != nil {
		return err
	}
	release, err := lockState(sf, unix.LOCK_EX)
	if err != nil {
		return err
	}
	defer release()
	doc, err := loadDoc(sf)
	if err != nil {
		return err
	}
	st, _ := doc.of(sf.Playbook)
	change(&st)
	doc.set(sf.Playbook, st)
	return saveDoc(sf, doc)
}

// RecordFile adds a file's before-state unless it is recorded already
// (the first write's before is the host's own).
func RecordFile(list *[]FileRecord, r FileRecord) {
	for _, old := range *list {
		if old.Path == r.Path {
			return
		}
	}
	*list = append(*list, r)
}

// FileBefore reads a path's before-state for RecordFile.
func FileBefore(h interface {
	ReadFile(p string) ([]byte, error)
	Readlink(p string) (string, error)
}, p string, link bool) FileRecord {
	if link {
		t, err := h.Readlink(p)
		return FileRecord{Path: p, Existed: err == nil, Content: t, Link: true}
	}
	b, err := h.ReadFile(p)
	return FileRecord{Path: p, Existed: err == nil, Content: string(b)}
}

// RestoreHost is what restoring a recorded file needs.
type RestoreHost interface {
	ReadFile(p string) ([]byte, error)
	Readlink(p string) (string, error)
	ReplaceFile(p string, data []byte, perm fs.FileMode) error
	Symlink(target, p string) error
	Remove(p string) error
}

// PlanRestoreFile plans putting a file back as it was before rig's first
// write: removed when rig created it, its old content (or link) otherwise.
func PlanRestoreFile(h RestoreHost, f FileRecord, what string, plan *Plan) {
	now := FileBefore(h, f.Path, f.Link)
	if now.Existed == f.Existed && (!f.Existed || now.Content == f.Content) {
		return
	}
	obj := what + " " + f.Path
	switch {
	case !f.Existed:
		plan.Add(func(context.Context) error { return h.Remove(f.Path) }, Change{Object: obj, Action: "remove (rig created it)"})
	case f.Link:
		plan.Add(func(context.Context) error {
			if now.Existed {
				if err := h.Remove(f.Path); err != nil {
					return err
				}
			}
			return h.Symlink(f.Content, f.Path)
		}, Change{Object: obj, Action: "restore link", To: f.Content})
	default:
		plan.Add(func(context.Context) error { return h.ReplaceFile(f.Path, []byte(f.Content), 0o644) },
			Change{Object: obj, Action: "restore the content it had before rig"})
	}
}
