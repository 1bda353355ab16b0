package provision

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The state file keeps each playbook's records apart: one playbook's
// update leaves the other's, a playbook reads only its own, Layers
// orders them by first write, and a playbook whose records are all
// forgotten leaves the file.
func TestStatePlaybooksApart(t *testing.T) {
	dir := t.TempDir()
	sf := StateStore{Path: filepath.Join(dir, "state.json")}
	a, b := sf.For("ovs-vdev"), sf.For("ovs-check")
	if err := UpdateState(a, func(st *RigState) { st.OVS = []OVSRecord{{Target: "x", Bridges: []string{"br-vdev"}}} }); err != nil {
		t.Fatal(err)
	}
	if err := UpdateState(b, func(st *RigState) {
		st.OVS = []OVSRecord{{Target: "x", Bridges: []string{"br-chk"}}}
		st.Hugepages = &HugeRecord{Pools: []PoolRecord{{SizeKB: 2048, Node: -1, Before: 0}}}
	}); err != nil {
		t.Fatal(err)
	}
	sa, _ := LoadState(a)
	sb, _ := LoadState(b)
	if len(sa.OVS) != 1 || sa.OVS[0].Bridges[0] != "br-vdev" || sa.Hugepages != nil || len(sb.OVS) != 1 || sb.OVS[0].Bridges[0] != "br-chk" || sb.Hugepages == nil {
		t.Fatalf("a %+v\nb %+v", sa, sb)
	}
	ls, self, err := Layers(b)
	if err != nil || len(ls) != 2 || ls[0].Playbook != "ovs-vdev" || ls[1].Playbook != "ovs-check" || self != 1 {
		t.Fatalf("layers %+v self %d %v", ls, self, err)
	}
	holdsX := func(st RigState) bool { return len(st.OVS) > 0 }
	if n, ok := NextLayer(ls, 0, holdsX); !ok || n != "ovs-check" {
		t.Errorf("next after ovs-vdev: %q %v", n, ok)
	}
	if _, ok := NextLayer(ls, 1, holdsX); ok {
		t.Error("a layer after the last")
	}
	// forgetting all of a playbook's records drops it; the other stays in its place
	if err := UpdateState(a, func(st *RigState) { st.OVS = nil }); err != nil {
		t.Fatal(err)
	}
	ls, self, _ = Layers(a)
	if len(ls) != 1 || ls[0].Playbook != "ovs-check" || ls[0].Seq != 2 || self != -1 {
		t.Fatalf("after forgetting ovs-vdev: %+v %d", ls, self)
	}
	// a playbook brought up again comes after
	if err := UpdateState(a, func(st *RigState) { st.Bound = []BoundDevice{{BDF: "0000:00:04.0"}} }); err != nil {
		t.Fatal(err)
	}
	if ls, _, _ = Layers(a); ls[1].Playbook != "ovs-vdev" || ls[1].Seq != 3 {
		t.Fatalf("ovs-vdev again: %+v", ls)
	}
	for _, s := range []StateStore{a, b} {
		if err := UpdateState(s, func(st *RigState) { *st = RigState{} }); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := os.ReadFile(sf.Path); strings.Join(strings.Fields(string(got)), "") != `{"version":2}` {
		t.Fatalf("empty file: %s", got)
	}
}

// A version-1 file (one set of records, from before the split) is read as
// the records of the first playbook that acts on them, which adopts them
// in their place; the others see none of them.
func TestStateVersion1Adopted(t *testing.T) {
	dir := t.TempDir()
	sf := StateStore{Path: filepath.Join(dir, "state.json")}
	if err := os.WriteFile(sf.Path, []byte(`{"version": 1, "hugepages": {"pools": [{"sizeKB": 2048, "node": -1, "before": 4}]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	a := sf.For("ovs-check")
	st, err := LoadState(a)
	if err != nil || st.Hugepages == nil || st.Hugepages.Pools[0].Before != 4 || st.Version != stateVersion {
		t.Fatalf("%+v %v", st, err)
	}
	if err := UpdateState(a, func(st *RigState) { st.Hugepages.Pools[0].Before = 5 }); err != nil {
		t.Fatal(err)
	}
	if st, _ := LoadState(sf.For("ovs-vdev")); st.Hugepages != nil {
		t.Fatalf("another playbook sees the adopted records: %+v", st)
	}
	ls, self, _ := Layers(a)
	if len(ls) != 1 || ls[0].Playbook != "ovs-check" || ls[0].Seq != 0 || self != 0 || ls[0].Records.Hugepages.Pools[0].Before != 5 {
		t.Fatalf("%+v %d", ls, self)
	}
}

// Two record sets for one playbook cannot be rig's: refused, naming it.
func TestStateDuplicatePlaybookRefused(t *testing.T) {
	p := filepath.Join(t.TempDir(), "state.json")
	if err := os.WriteFile(p, []byte(`{"version": 2, "playbooks": [{"playbook": "x", "seq": 1, "records": {}}, {"playbook": "x", "seq": 2, "records": {}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadState(StateStore{Path: p, Playbook: "x"}); err == nil || !strings.Contains(err.Error(), `records rig could not have written: two sets of records for playbook "x"`) {
		t.Fatalf("%v", err)
	}
}
