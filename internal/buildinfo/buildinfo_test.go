package buildinfo

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func stamped(mainVersion string, settings ...string) *debug.BuildInfo {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "rig", Version: mainVersion}}
	for i := 0; i+1 < len(settings); i += 2 {
		bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
	}
	return bi
}

func TestFrom(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	vcs := []string{"vcs.revision", "a665e4e1a2b3c4d5e6f708192a3b4c5d6e7f8091", "vcs.time", "2025-12-02T00:59:00Z", "vcs.modified", "true", "CGO_ENABLED", "1", "-tags", "dpdkstatic"}
	cases := []struct {
		name              string
		bi                *debug.BuildInfo
		ldVersion, ldComm string
		want              Info
	}{
		{"no stamp at all", nil, "", "", Info{Version: "devel", Commit: "unknown", GoVersion: runtime.Version(), Platform: platform}},
		{"go test or a worktree: (devel), no vcs", stamped("(devel)", "CGO_ENABLED", "0"), "", "",
			Info{Version: "devel", Commit: "unknown", GoVersion: "go1.26.8", Platform: platform}},
		{"toolchain's vcs stamp", stamped("v0.0.0-20251202005900-a665e4e1a2b3+dirty", vcs...), "", "",
			Info{Version: "v0.0.0-20251202005900-a665e4e1a2b3+dirty", Commit: "a665e4e1a2b3c4d5e6f708192a3b4c5d6e7f8091", CommitTime: "2025-12-02T00:59:00Z",
				Modified: true, GoVersion: "go1.26.8", Platform: platform, Cgo: true, Tags: "dpdkstatic"}},
		{"release: git describe wins, the vcs commit stays", stamped("v0.0.0-x", vcs[:2]...), "v1.2.0-3-ga665e4e", "ffff",
			Info{Version: "v1.2.0-3-ga665e4e", Commit: "a665e4e1a2b3c4d5e6f708192a3b4c5d6e7f8091", GoVersion: "go1.26.8", Platform: platform}},
		{"release from a tree without .git: both from ldflags", stamped("(devel)", "CGO_ENABLED", "1"), "a665e4e-dirty", "a665e4e1a2b3",
			Info{Version: "a665e4e-dirty", Commit: "a665e4e1a2b3", Modified: true, GoVersion: "go1.26.8", Platform: platform, Cgo: true}},
	}
	for _, c := range cases {
		if got := from(c.bi, c.ldVersion, c.ldComm); got != c.want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

// Read in a test binary: Go's own version and this platform, whatever
// was stamped.
func TestRead(t *testing.T) {
	in := Read()
	if in.GoVersion != runtime.Version() || in.Platform != runtime.GOOS+"/"+runtime.GOARCH || in.Version == "" || in.Commit == "" {
		t.Errorf("Read() = %+v", in)
	}
}
