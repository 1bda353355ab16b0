package dpdk

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"fmt"
	"sort"
)

// PMD is one driver's PMD_INFO_STRING record. DPDK's build writes one into
// every driver object that registers itself with RTE_PMD_REGISTER_PCI,
// _VDEV or _AUXILIARY (buildtools/pmdinfogen.py):
//
//	PMD_INFO_STRING= {"name": "net_ring", "params": "...", "pci_ids": []}
//
// a NUL-terminated C string in .rodata, kept with __rte_used. It is what
// DPDK's own usertools/dpdk-pmdinfo.py reads back from an application or a
// librte_*.so to say which drivers it carries.
type PMD struct {
	Name   string `json:"name"`
	Kmod   string `json:"kmod,omitempty"`   // kernel modules it needs ("* ib_uverbs & mlx5_core & mlx5_ib")
	Params string `json:"params,omitempty"` // the devargs it takes
	PCIIDs int    `json:"pciIds"`           // PCI vendor/device entries it probes
}

// pmdMarker is how a record starts. It is put together at run time so
// that this binary holds no Go string constant "PMD_INFO_STRING= {" of its
// own to be found (ParsePMDInfo also wants a NUL or the start of the data
// before a record, as a C string of its own has).
func pmdMarker() []byte { return append([]byte("PMD_INFO_STRING"), '=', ' ', '{') }

// ParsePMDInfo returns the PMD records in data (an ELF section's bytes),
// sorted by name. A record whose JSON does not parse is an error: DPDK
// writes them, so a broken one means the data is not what it seems.
func ParsePMDInfo(data []byte) ([]PMD, error) {
	marker := pmdMarker()
	var pmds []PMD
	for off := 0; ; {
		i := bytes.Index(data[off:], marker)
		if i < 0 {
			break
		}
		start := off + i
		off = start + len(marker)
		if start > 0 && data[start-1] != 0 {
			continue // inside some other string, not a C string of its own
		}
		end := bytes.IndexByte(data[start:], 0)
		if end < 0 {
			return nil, fmt.Errorf("PMD_INFO_STRING at byte %d: no terminating NUL", start)
		}
		rec := data[start+len(marker)-1 : start+end]
		var raw struct {
			Name   string  `json:"name"`
			Kmod   string  `json:"kmod"`
			Params string  `json:"params"`
			PCIIDs [][]int `json:"pci_ids"`
		}
		if err := json.Unmarshal(rec, &raw); err != nil {
			return nil, fmt.Errorf("PMD_INFO_STRING at byte %d: %w", start, err)
		}
		if raw.Name == "" {
			return nil, fmt.Errorf("PMD_INFO_STRING at byte %d: no driver name in %.80q", start, rec)
		}
		pmds = append(pmds, PMD{Name: raw.Name, Kmod: raw.Kmod, Params: raw.Params, PCIIDs: len(raw.PCIIDs)})
		off = start + end
	}
	sort.Slice(pmds, func(i, j int) bool { return pmds[i].Name < pmds[j].Name })
	return pmds, nil
}

// PMDsInFile reads the PMD records of an ELF file (an executable or a
// shared object): those of its allocated, non-executable PROGBITS sections
// (.rodata is where they are).
func PMDsInFile(path string) ([]PMD, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read the PMD records of %s: %w", path, err)
	}
	defer f.Close()
	var pmds []PMD
	for _, s := range f.Sections {
		if s.Type != elf.SHT_PROGBITS || s.Flags&elf.SHF_ALLOC == 0 || s.Flags&elf.SHF_EXECINSTR != 0 {
			continue
		}
		data, err := s.Data()
		if err != nil {
			return nil, fmt.Errorf("read the PMD records of %s: section %s: %w", path, s.Name, err)
		}
		p, err := ParsePMDInfo(data)
		if err != nil {
			return nil, fmt.Errorf("%s: section %s: %w", path, s.Name, err)
		}
		pmds = append(pmds, p...)
	}
	sort.Slice(pmds, func(i, j int) bool { return pmds[i].Name < pmds[j].Name })
	return pmds, nil
}
