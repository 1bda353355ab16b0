// Package buildinfo says which rig this is: its version and commit, and
// the Go toolchain and platform it was built for. The release build
// (mk/release.mk) stamps the version from `git describe`; any other build
// gets what the Go toolchain stamps from the repository (-buildvcs).
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// Stamped by the linker (go build -ldflags "-X rig/internal/buildinfo.version=V
// -X rig/internal/buildinfo.commit=C"), for a build whose tree has no
// .git to read; never written at run time.
var (
	version string
	commit  string
)

// Info is rig's build: what `rig version` prints.
type Info struct {
	Version    string `json:"version"`              // git describe, or Go's module version; "devel" when neither is known
	Commit     string `json:"commit"`               // the full commit hash; "unknown" when not stamped
	CommitTime string `json:"commitTime,omitempty"` // the commit's time (RFC 3339), when Go stamped it
	Modified   bool   `json:"modified"`             // built from a tree with uncommitted changes
	GoVersion  string `json:"goVersion"`            // go1.26.8
	Platform   string `json:"platform"`             // GOOS/GOARCH built for: linux/arm64
	Cgo        bool   `json:"cgo"`                  // built with cgo (the DPDK dataplane needs it)
	Tags       string `json:"tags,omitempty"`       // build tags (dpdkstatic)
}

// Read returns this binary's build information.
func Read() Info {
	bi, _ := debug.ReadBuildInfo()
	return from(bi, version, commit)
}

// from builds Info from the toolchain's stamp (bi, nil when the binary has
// none) and the linker-stamped ldVersion and ldCommit ("" when not given),
// which win: they are what the release build says it is.
func from(bi *debug.BuildInfo, ldVersion, ldCommit string) Info {
	in := Info{Version: "devel", Commit: "unknown", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi != nil {
		in.GoVersion = bi.GoVersion
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			in.Version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				in.Commit = s.Value
			case "vcs.time":
				in.CommitTime = s.Value
			case "vcs.modified":
				in.Modified = s.Value == "true"
			case "CGO_ENABLED":
				in.Cgo = s.Value == "1"
			case "-tags":
				in.Tags = s.Value
			}
		}
	}
	if ldVersion != "" {
		in.Version = ldVersion
		if strings.HasSuffix(ldVersion, "-dirty") {
			in.Modified = true
		}
	}
	if ldCommit != "" && in.Commit == "unknown" {
		in.Commit = ldCommit
	}
	return in
}
