package dpdk

import (
	"strings"
	"testing"
)

// rec is a PMD record as DPDK's pmdinfogen writes it, a C string of its
// own; json starts with "{". Records and markers are put together at run
// time (pmdMarker): a constant holding one would be a record in this test
// binary's .rodata, which TestPMDsOfThisBinary reads.
func rec(json string) string { return marker() + json[1:] + "\x00" }

func marker() string { return string(pmdMarker()) }

func TestParsePMDInfo(t *testing.T) {
	data := []byte("\x00\x00" + rec(`{"name": "net_ring", "params": "nodeaction=name:node:action(ATTACH|CREATE)", "pci_ids": []}`) +
		"other\x00" + rec(`{"name": "mlx5_eth", "kmod": "* ib_uverbs & mlx5_core & mlx5_ib", "pci_ids": [[5555, 4115, 65535, 65535], [5555, 4116, 65535, 65535]]}`) +
		// a Go string that happens to hold the marker: no NUL before it
		"gostring" + marker() + "not json")
	got, err := ParsePMDInfo(data)
	if err != nil {
		t.Fatal(err)
	}
	want := []PMD{
		{Name: "mlx5_eth", Kmod: "* ib_uverbs & mlx5_core & mlx5_ib", PCIIDs: 2},
		{Name: "net_ring", Params: "nodeaction=name:node:action(ATTACH|CREATE)"},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if got, err := ParsePMDInfo([]byte(rec(`{"name": "net_null", "pci_ids": []}`))); err != nil || len(got) != 1 || got[0].Name != "net_null" {
		t.Errorf("record at offset 0: %+v %v", got, err)
	}
	if got, err := ParsePMDInfo([]byte("no records here")); err != nil || len(got) != 0 {
		t.Errorf("no records: %+v %v", got, err)
	}
}

func TestParsePMDInfoErrors(t *testing.T) {
	cases := map[string]string{
		"broken JSON":   "\x00" + rec(`{"name": "net_ring", "pci_ids": [}`),
		"no NUL":        "\x00" + marker() + `"name": "net_ring"}`,
		"no name":       "\x00" + rec(`{"params": "x", "pci_ids": []}`),
		"pci_ids wrong": "\x00" + rec(`{"name": "net_ring", "pci_ids": "none"}`),
	}
	for name, data := range cases {
		if got, err := ParsePMDInfo([]byte(data)); err == nil || !strings.Contains(err.Error(), "PMD_INFO_STRING at byte 1") {
			t.Errorf("%s: got %+v, err %v", name, got, err)
		}
	}
}

func FuzzParsePMDInfo(f *testing.F) {
	f.Add([]byte("\x00" + rec(`{"name": "net_ring", "params": "nodeaction=name:node:action(ATTACH|CREATE)", "pci_ids": []}`)))
	f.Add([]byte(rec(`{"name": "mlx5_eth", "kmod": "* ib_uverbs & mlx5_core & mlx5_ib", "pci_ids": [[5555, 4115, 65535, 65535]]}`)))
	f.Add([]byte("x" + rec(`{"name": "a"}`) + rec(`{"name": "b"}`)))
	f.Add([]byte("\x00" + marker()))
	f.Fuzz(func(t *testing.T, data []byte) {
		pmds, err := ParsePMDInfo(data)
		if err != nil {
			return
		}
		for i, p := range pmds {
			if p.Name == "" || p.PCIIDs < 0 {
				t.Fatalf("record %d: %+v", i, p)
			}
			if i > 0 && pmds[i-1].Name > p.Name {
				t.Fatalf("not sorted: %q before %q", pmds[i-1].Name, p.Name)
			}
		}
	})
}
