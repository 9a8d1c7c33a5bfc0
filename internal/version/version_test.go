package version

import (
	"runtime/debug"
	"testing"
)

// TestFrom: the version comes from the module version, else the VCS
// revision and dirty flag, else "devel".
func TestFrom(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	const rev = "0123456789abcdef0123456789abcdef01234567"
	cases := []struct {
		name string
		bi   *debug.BuildInfo
		want Info
	}{
		{"module version", &debug.BuildInfo{GoVersion: "go1.x", Main: debug.Module{Version: "v1.2.0"}, Settings: vcs(rev, "false")},
			Info{Version: "v1.2.0", Revision: rev, GoVersion: "go1.x"}},
		{"revision of a clean tree", &debug.BuildInfo{GoVersion: "go1.x", Main: debug.Module{Version: "(devel)"}, Settings: vcs(rev, "false")},
			Info{Version: "devel-0123456789ab", Revision: rev, GoVersion: "go1.x"}},
		{"revision of a modified tree", &debug.BuildInfo{GoVersion: "go1.x", Main: debug.Module{Version: "(devel)"}, Settings: vcs(rev, "true")},
			Info{Version: "devel-0123456789ab-modified", Revision: rev, Modified: true, GoVersion: "go1.x"}},
		{"nothing stamped", &debug.BuildInfo{GoVersion: "go1.x", Main: debug.Module{Version: "(devel)"}},
			Info{Version: "devel", GoVersion: "go1.x"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := from(tc.bi); got != tc.want {
				t.Errorf("from = %+v, want %+v", got, tc.want)
			}
		})
	}
	if got := from(nil); got.Version != "devel" || got.GoVersion == "" {
		t.Errorf("from(nil) = %+v, want devel and the running Go", got)
	}
}

// TestRelease: a version set with -ldflags -X wins over what the build
// stamped.
func TestRelease(t *testing.T) {
	release = "v9.9.9"
	defer func() { release = "" }()
	bi := &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260101000000-0123456789ab+dirty"}}
	if got := from(bi).Version; got != "v9.9.9" {
		t.Errorf("Version = %q, want the release set by the linker", got)
	}
}
