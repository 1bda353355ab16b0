package dataplane

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"rig/bench"
)

// Non-root with hugepages: EAL says "Cannot allocate memory" when it may not
// create the hugepage files; rig names permission as the cause.
func TestExplainEALInitNonRoot(t *testing.T) {
	enomem := fmt.Errorf("rte_eal_init [...]: Cannot allocate memory (errno 12): %w", syscall.ENOMEM)
	huge := bench.Memory{Args: []string{"--huge-unlink"}}
	err := explainEALInit(enomem, huge, 65534, []string{"/dev/hugepages"})
	var be *bench.Error
	if !errors.As(err, &be) {
		t.Fatalf("non-root ENOMEM: %T %v is not a *bench.Error", err, err)
	}
	if s := be.Cause(); !strings.Contains(s, "permission denied, not memory") || !strings.Contains(s, "uid 65534") ||
		!strings.Contains(s, "hugetlbfs mount /dev/hugepages") || !strings.Contains(s, "hugepages need root, or a hugetlbfs mount this user may write") || !strings.Contains(be.Fix(), "--huge-dir") {
		t.Errorf("non-root ENOMEM: %v", err)
	}
	if !errors.Is(err, syscall.ENOMEM) {
		t.Errorf("%v does not wrap ENOMEM", err)
	}
	// as root, or without hugepages, ENOMEM is memory
	for _, tc := range []struct {
		mem  bench.Memory
		euid int
	}{{huge, 0}, {bench.Memory{Args: []string{"--no-huge", "-m", "512"}}, 65534}, {bench.Memory{Args: []string{"--in-memory"}}, 65534}} {
		if err := explainEALInit(enomem, tc.mem, tc.euid, nil); strings.Contains(err.Error(), "permission") || strings.Contains(err.(*bench.Error).Cause(), "permission") {
			t.Errorf("euid %d, %v: %v", tc.euid, tc.mem.Args, err)
		}
	}
	enodev := fmt.Errorf("rte_eal_init: No such device (errno 19): %w", syscall.ENODEV)
	if err := explainEALInit(enodev, huge, 0, nil); !strings.Contains(err.(*bench.Error).Cause(), "cannot parse or probe a --vdev/--port device") {
		t.Errorf("ENODEV: %v", err)
	}
	eacces := fmt.Errorf("x: %w", syscall.EACCES)
	if err := explainEALInit(eacces, bench.Memory{Args: []string{"--no-huge"}}, 1000, nil); !strings.Contains(err.(*bench.Error).Cause(), "permission denied") || !strings.Contains(err.(*bench.Error).Fix(), "run as root") {
		t.Errorf("non-root EACCES: %v", err)
	}
}
