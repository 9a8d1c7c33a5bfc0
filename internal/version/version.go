// Package version is sessiondb's own version, read once from the build:
// the command line (`sessiondb version`, `--version`, doctor), the HTTP
// server's /healthz and MCP's serverInfo all report it from here, so they
// cannot disagree.
//
// A release build sets it with the linker:
//
//	go build -ldflags "-X github.com/sessiondb/sessiondb/internal/version.release=v1.2.0" ./cmd/sessiondb
//
// Otherwise it comes from runtime/debug.ReadBuildInfo: the main module's
// version (`go install ...@v1.2.0`, or the pseudo-version Go stamps on a
// build in a git checkout), else the VCS revision and whether the tree was
// modified, else "devel" (a build with -buildvcs=false, `go run`, a test).
package version

import (
	"runtime"
	"runtime/debug"
)

// release is set by -ldflags -X for release builds; it is never written
// at run time.
var release string

// Info is what a build says about itself.
type Info struct {
	// Version is the one string every face reports: release, else the
	// module version, else "devel-<revision>" (with "-modified" when the
	// tree had uncommitted changes), else "devel".
	Version string `json:"version"`
	// Revision and Modified are the VCS revision and dirty flag Go
	// stamped into the build, when it did.
	Revision string `json:"revision,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	// GoVersion is the Go toolchain that built the binary.
	GoVersion string `json:"go_version"`
}

// Get reads the build's version.
func Get() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return from(nil)
	}
	return from(bi)
}

// String is Get().Version: the version every face reports.
func String() string { return Get().Version }

// from derives Info from build information (nil: none available).
func from(bi *debug.BuildInfo) Info {
	in := Info{GoVersion: runtime.Version()}
	var module string
	if bi != nil {
		in.GoVersion = bi.GoVersion
		module = bi.Main.Version
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				in.Revision = s.Value
			case "vcs.modified":
				in.Modified = s.Value == "true"
			}
		}
	}
	switch {
	case release != "":
		in.Version = release
	case module != "" && module != "(devel)":
		in.Version = module
	case in.Revision != "":
		in.Version = "devel-" + short(in.Revision)
		if in.Modified {
			in.Version += "-modified"
		}
	default:
		in.Version = "devel"
	}
	return in
}

// short is the first 12 characters of a revision, as Go's pseudo-versions
// show it.
func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
