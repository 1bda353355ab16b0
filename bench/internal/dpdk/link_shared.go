//go:build !dpdkstatic

package dpdk

// Default link: DPDK's shared libraries, from the pkg-config line in
// dpdk.go; EAL loads the PMDs from its driver directory at run time.
// `make` builds with -tags dpdkstatic instead (link_static.go).

/*
#include <rte_config.h>
*/
import "C"

import (
	"fmt"
	"path/filepath"
	"sort"
)

// Linked says how DPDK is linked into this binary: "shared" here.
const Linked = "shared"

// pmdFiles: EAL (eal_plugins_init) loads every librte_*.so in its driver
// directory, RTE_EAL_PMD_PATH (/usr/lib/<triplet>/dpdk/pmds-23.0 for
// Debian's 22.11), when it starts.
func pmdFiles() ([]string, error) {
	dir := C.RTE_EAL_PMD_PATH
	files, err := filepath.Glob(filepath.Join(dir, "librte_*.so"))
	if err != nil {
		return nil, fmt.Errorf("DPDK driver directory %s: %w", dir, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("DPDK driver directory %s has no librte_*.so: install Debian's dpdk packages (make deps), or build rig with -tags dpdkstatic", dir)
	}
	sort.Strings(files)
	return files, nil
}
