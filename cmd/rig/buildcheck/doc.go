// Package buildcheck holds the tests of rig's builds: rig builds without
// cgo, for amd64 and arm64, and such a rig says why it has no dataplane;
// the release rig (make release) is fully static and runs in a chroot
// that holds nothing else; make build stamps the commit. It is a package
// of its own, not a test of cmd/rig, so that `go test -p 2` runs its cold
// builds (about 30 s for the two cross builds on a fresh machine, a static
// dpdkstatic link beside them) beside cmd/rig's long sequential run
// instead of inside it.
package buildcheck
