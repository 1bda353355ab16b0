package dpdk

/*
#include <rte_version.h>
*/
import "C"

import "fmt"

// Version is rte_version() of the DPDK this binary runs ("DPDK 22.11.11"):
// the one linked in (static link) or librte_eal.so's (shared link).
func Version() string { return C.GoString(C.rte_version()) }

// Drivers is what this binary carries of DPDK's poll-mode drivers.
type Drivers struct {
	PMDs []PMD
	// From: the files the PMD records were read from: the executable (a
	// static link carries its drivers), or the librte_*.so in EAL's driver
	// directory, which EAL loads at start (shared link).
	From []string
}

// PMDs reads the PMD records (see PMD) of the files that hold this
// binary's drivers: for the static link (Linked "static") the running
// executable, for the shared one the driver directory's libraries.
func PMDs() (Drivers, error) {
	files, err := pmdFiles()
	if err != nil {
		return Drivers{}, err
	}
	d := Drivers{From: files}
	seen := map[string]bool{}
	for _, f := range files {
		pmds, err := PMDsInFile(f)
		if err != nil {
			return d, err
		}
		for _, p := range pmds {
			if !seen[p.Name] {
				seen[p.Name] = true
				d.PMDs = append(d.PMDs, p)
			}
		}
	}
	if len(d.PMDs) == 0 {
		return d, fmt.Errorf("no PMD_INFO_STRING record in %v: this DPDK build has no drivers rig can find", files)
	}
	return d, nil
}
