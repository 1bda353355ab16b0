//go:build !cgo

package dataplane

import (
	"context"

	"rig/bench"
)

// Run in a rig built without cgo: there is no dataplane to run.
func Run(context.Context, bench.Config, bench.Progress) (*bench.Result, error) {
	return nil, bench.ErrNoDataplane
}

// RunValid in a rig built without cgo: there is no dataplane to run.
func RunValid(context.Context, bench.Config, bench.Progress) (*bench.Result, error) {
	return nil, bench.ErrNoDataplane
}

// MemoryMB in a rig built without cgo: no dataplane, no memory to size.
func MemoryMB(bench.Config) (int, error) { return 0, bench.ErrNoDataplane }
