package provision

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sort"

	"golang.org/x/sys/unix"

	"rig/internal/host"
)

// PlaybookRecords is one playbook's records in the state file and when
// rig first wrote them: Seq orders the playbooks that changed one object
// (a hugepage pool, an OvS key), so their undos compose in any order (see
// Layers). Seq 0 is a version-1 file's records (written before any other).
type PlaybookRecords struct {
	Playbook string   `json:"playbook"`
	Seq      int      `json:"seq"`
	Records  RigState `json:"records"`
}

// stateDoc is the state file (version 2): each playbook's records apart.
type stateDoc struct {
	Version   int               `json:"version"`
	Next      int               `json:"next,omitempty"` // the Seq of the next playbook to record
	Playbooks []PlaybookRecords `json:"playbooks,omitempty"`
}

// loadDoc reads the state file (readStateFile's checks); none yet is an
// empty document. A version-1 file's records become playbook "" (Seq 0):
// the first playbook that writes records adopts them (of, set), so a file
// from before the split still comes down.
func loadDoc(sf StateStore) (*stateDoc, error) {
	if err := sf.ready(); err != nil {
		return nil, err
	}
	doc := &stateDoc{Version: stateVersion, Next: 1}
	b, err := readStateFile(sf.Path, os.Geteuid())
	if errors.Is(err, fs.ErrNotExist) {
		return doc, nil
	}
	if err != nil {
		return nil, err
	}
	bad := func(err error) error {
		return fmt.Errorf("rig state %s: %w (fix or remove the file; it only records what `rig down` restores)", sf.Path, err)
	}
	var head struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, bad(err)
	}
	switch {
	case head.Version > stateVersion:
		return nil, fmt.Errorf("rig state %s: version %d is newer than this rig's %d; use the rig that wrote it", sf.Path, head.Version, stateVersion)
	case head.Version <= 1:
		var st RigState
		if err := json.Unmarshal(b, &st); err != nil {
			return nil, bad(err)
		}
		if !emptyRecords(st) {
			doc.Playbooks = []PlaybookRecords{{Playbook: "", Seq: 0, Records: st}}
		}
		return doc, nil
	}
	if err := json.Unmarshal(b, doc); err != nil {
		return nil, bad(err)
	}
	seen := map[string]bool{}
	for _, p := range doc.Playbooks {
		if seen[p.Playbook] {
			return nil, &Problem{Object: "rig state " + sf.Path, Err: fmt.Errorf("%w: two sets of records for playbook %q; rig down acts on none of them, nothing was written", ErrStateRecord, p.Playbook),
				CauseText: "the state file was edited or damaged: rig keeps one set of records per playbook",
				FixText:   "merge or remove one of them (or the file " + sf.Path + ") and restore those settings by hand; then rig down again"}
		}
		seen[p.Playbook] = true
		if p.Seq >= doc.Next {
			doc.Next = p.Seq + 1
		}
	}
	doc.Version = stateVersion
	return doc, nil
}

// saveDoc writes doc atomically (ReplaceFile: temp, fsync, rename).
func saveDoc(sf StateStore, doc *stateDoc) error {
	if err := sf.ready(); err != nil {
		return err
	}
	doc.Version = stateVersion
	if len(doc.Playbooks) == 0 {
		doc.Next = 0
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if err := host.New("/").ReplaceFile(sf.Path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("rig state %s: %w (give another place with --state-file FILE)", sf.Path, err)
	}
	return nil
}

// index is the position of name's records (-1: none).
func (d *stateDoc) index(name string) int {
	for i, p := range d.Playbooks {
		if p.Playbook == name {
			return i
		}
	}
	return -1
}

// of is name's records; when name has none, a version-1 file's records
// (playbook "") are offered for adoption (adopted true).
func (d *stateDoc) of(name string) (st RigState, adopted bool) {
	if i := d.index(name); i >= 0 {
		return d.Playbooks[i].Records, false
	}
	if name != "" {
		if i := d.index(""); i >= 0 {
			return d.Playbooks[i].Records, true
		}
	}
	return RigState{}, false
}

// set stores st as name's records: adopting the version-1 records when
// of offered them (they take name, keeping their place), dropping name
// when st holds nothing, else a new playbook in the next place.
func (d *stateDoc) set(name string, st RigState) {
	st.Version = 0
	i := d.index(name)
	if i < 0 && name != "" {
		if j := d.index(""); j >= 0 {
			d.Playbooks[j].Playbook = name
			i = j
		}
	}
	switch {
	case emptyRecords(st) && i >= 0:
		d.Playbooks = append(d.Playbooks[:i], d.Playbooks[i+1:]...)
	case emptyRecords(st):
	case i >= 0:
		d.Playbooks[i].Records = st
	default:
		d.Playbooks = append(d.Playbooks, PlaybookRecords{Playbook: name, Seq: d.Next, Records: st})
		d.Next++
	}
}

// emptyRecords: st records nothing.
func emptyRecords(st RigState) bool {
	st.Version = 0
	b, _ := json.Marshal(st)
	return string(b) == `{"version":0}`
}

// For is the store of another playbook's records in the same file.
func (s StateStore) For(playbook string) StateStore {
	s.Playbook = playbook
	return s
}

// Layers are every playbook's records in the state file, ordered by when
// rig first wrote them (Seq), with the position of sf.Playbook's (-1:
// none; a version-1 file's records count as its own, see loadDoc).
//
// They are how one playbook's undo composes with another's on the same
// object: each playbook records the value it found before its first
// change, so the playbook that changed an object last holds the value the
// one before it left. rig down -p X restores X's recorded value only when
// no later playbook changed the same object; otherwise it leaves the live
// value (the later playbook's) and hands X's value to the next later
// playbook's record, which is what that one will restore. Any order of
// downs ends with the value before the first up.
func Layers(sf StateStore) ([]PlaybookRecords, int, error) {
	if err := sf.ready(); err != nil {
		return nil, -1, err
	}
	release, err := lockState(sf, unix.LOCK_SH)
	if err != nil {
		return nil, -1, err
	}
	defer release()
	doc, err := loadDoc(sf)
	if err != nil {
		return nil, -1, err
	}
	ls := append([]PlaybookRecords(nil), doc.Playbooks...)
	sort.SliceStable(ls, func(i, j int) bool { return ls[i].Seq < ls[j].Seq })
	self := -1
	for i, l := range ls {
		if l.Playbook == sf.Playbook {
			self = i
		}
	}
	if self < 0 && sf.Playbook != "" {
		for i, l := range ls {
			if l.Playbook == "" {
				self = i
			}
		}
	}
	return ls, self, nil
}

// NextLayer is the first playbook after position self (Layers) whose
// records have holds true: the one whose recorded value a later undo of
// that object restores ("", false when none).
func NextLayer(ls []PlaybookRecords, self int, holds func(RigState) bool) (string, bool) {
	if self < 0 {
		return "", false
	}
	for _, l := range ls[self+1:] {
		if holds(l.Records) {
			return l.Playbook, true
		}
	}
	return "", false
}

// PlaybookName says which playbook a store's records are ("this run's",
// for a run without a name).
func (s StateStore) PlaybookName() string {
	if s.Playbook == "" {
		return "this run's"
	}
	return "playbook " + s.Playbook + "'s"
}

// Handover is one kind of record that two playbooks can each hold for
// one object (a hugepage pool, a PCI function, a PF): how to find the
// records of that kind in a playbook's records, which two are of the same
// object, and how a later playbook's record takes over an earlier one's
// value before (Layers). It is how rig down -p X composes with the
// playbooks still up: an object a later playbook also recorded is left as
// it is, and X's "before" goes into that playbook's record.
type Handover[T any] struct {
	// Of is st's records of this kind (nil when it has none). Its
	// elements are edited in place, so it returns st's own slice.
	Of func(st *RigState) []T
	// Same: a and b are records of one object.
	Same func(a, b T) bool
	// Merge makes later, a later playbook's record of mine's object,
	// restore what mine would have restored.
	Merge func(later *T, mine T)
}

// Next is the first playbook after position self in ls (Layers) that
// recorded mine's object ("" when none).
func (h Handover[T]) Next(ls []PlaybookRecords, self int, mine T) string {
	n, _ := NextLayer(ls, self, func(st RigState) bool {
		return slices.ContainsFunc(h.Of(&st), func(r T) bool { return h.Same(r, mine) })
	})
	return n
}

// Plan plans handing mine to the next later playbook that recorded its
// object (Next), in one op that writes only rig's state file: that
// playbook's record merges mine (Merge), and this playbook's down leaves
// the object as it is. change words the op for that playbook's name.
// true when there is such a playbook (down must not restore mine then).
func (h Handover[T]) Plan(sf StateStore, ls []PlaybookRecords, self int, mine T, plan *Plan, change func(next string) Change) bool {
	next := h.Next(ls, self, mine)
	if next == "" {
		return false
	}
	plan.Add(func(context.Context) error {
		return UpdateState(sf.For(next), func(st *RigState) {
			recs := h.Of(st)
			for i := range recs {
				if h.Same(recs[i], mine) {
					h.Merge(&recs[i], mine)
				}
			}
		})
	}, change(next))
	return true
}

// Holder is the first playbook other than position self in ls that
// recorded an object of h's kind for which holds is true ("" when none):
// the one an up relies on when it finds the object already as it wants
// it (and then records that, so the undos compose).
func (h Handover[T]) Holder(ls []PlaybookRecords, self int, holds func(T) bool) string {
	for i, l := range ls {
		if i != self && slices.ContainsFunc(h.Of(&l.Records), holds) {
			return l.Playbook
		}
	}
	return ""
}
