//go:build !cgo

package bench

import "context"

// Run in a rig built without cgo: there is no dataplane to run.
func Run(context.Context, Config, Progress) (*Result, error) { return nil, ErrNoDataplane }
