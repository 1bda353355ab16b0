package playbooks

import (
	"strings"
	"testing"
)

func TestSRIOVSection(t *testing.T) {
	pb, err := Parse("t.yaml", []byte("name: t\nsriov:\n  pfs:\n    - {pf: \"0000:3b:00.0\", numvfs: 4, eswitch: switchdev}\n    - {pf: enp59s0f1np1, numvfs: 0}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(pb.SRIOV.PFs) != 2 || *pb.SRIOV.PFs[0].NumVFs != 4 || *pb.SRIOV.PFs[1].NumVFs != 0 {
		t.Fatalf("%+v", pb.SRIOV)
	}
	for _, c := range []struct{ yaml, want string }{
		{"name: t\nsriov:\n  pfs: []\n", "sriov.pfs: empty"},
		{"name: t\nsriov:\n  pfs:\n    - {pf: p0}\n", "t.yaml:4: sriov.pfs[0]: nothing to set"},
		{"name: t\nsriov:\n  pfs:\n    - {pf: p0, numvfs: -1}\n", "sriov.pfs[0].numvfs: want 0..4096"},
		{"name: t\nsriov:\n  pfs:\n    - {pf: p0, eswitch: offload}\n", `sriov.pfs[0].eswitch: "offload": want switchdev or legacy`},
		{"name: t\nsriov:\n  pfs:\n    - {pf: 3b:00.0, numvfs: 1}\n    - {pf: \"0000:3b:00.0\", numvfs: 2}\n", "t.yaml:5: sriov.pfs[1].pf: same PF as pfs[0]"},
		{"name: t\nsriov:\n  pfs:\n    - {pf: \"p0 up\", numvfs: 1}\n", "sriov.pfs[0].pf: \"p0 up\" is neither"},
		{"name: t\nsriov:\n  pfs:\n    - {pf: p0, numvfs: 2, vfs: 3}\n", "t.yaml:4: sriov.pfs[0].vfs: unknown field"},
	} {
		_, err := Parse("t.yaml", []byte(c.yaml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want %q", c.yaml, err, c.want)
		}
	}
}
