//go:build !cgo

package bench

import "context"

// Run in a rig built without cgo: there is no dataplane to run.
func Run(context.Context, Config, Progress) (*Result, error) { return nil, ErrNoDataplane }

// MemoryMB in a rig built without cgo: no dataplane, no memory to size.
func MemoryMB(Config) (int, error) { return 0, ErrNoDataplane }
