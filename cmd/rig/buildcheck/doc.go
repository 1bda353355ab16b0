// Package buildcheck holds one test: rig builds without cgo, for amd64 and
// arm64, and such a rig says why it has no dataplane. It is a package of
// its own, not a test of cmd/rig, so that `go test -p 2` runs its two cold
// cross builds (about 30 s on a fresh machine) beside cmd/rig's long
// sequential run instead of inside it.
package buildcheck
