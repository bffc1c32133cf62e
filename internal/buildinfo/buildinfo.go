// Package buildinfo reports which hourglass this binary is: the module
// version, the version-control commit it was built from and the Go release
// that built it, all read from runtime/debug.ReadBuildInfo.
//
// A binary installed with "go install …@v1.2.3" has the module version
// v1.2.3; one built from a checkout with "go build" or "go run" has
// "(devel)" and, when the checkout is a git repository, the commit and
// whether the tree had uncommitted changes. Where the go command records no
// commit (GOFLAGS=-buildvcs=false, a build outside the repository), "make
// build" sets it with -ldflags "-X …/internal/buildinfo.commit=<sha>", and
// the version likewise with "-X …/internal/buildinfo.version=<version>"
// (make build VERSION=v1.2.3; by default what git describe says).
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// commit is the revision given at link time, for builds that record none.
var commit string

// version is the version given at link time ("-X …/buildinfo.version=v1.2.3"),
// for a build from a checkout, whose module version is "(devel)"; it wins
// over "(devel)", never over a module version "go install …@v1.2.3" records.
var version string

// Info describes a build. Fields that are not known are empty.
type Info struct {
	// Version is the main module's version: a tag such as v1.2.3, a
	// pseudo-version, or "(devel)" for a build from a checkout.
	Version string
	// Commit is the version-control revision (vcs.revision), with
	// "-dirty" appended when the tree had uncommitted changes
	// (vcs.modified=true).
	Commit string
	// GoVersion is the Go release that built the binary, such as go1.26.8.
	GoVersion string
}

// Read returns the running binary's build information. It never fails: a
// binary built without module support reports version "unknown".
func Read() Info {
	return fromBuildInfo(debug.ReadBuildInfo())
}

func fromBuildInfo(bi *debug.BuildInfo, ok bool) Info {
	info := Info{Version: "unknown", Commit: commit, GoVersion: runtime.Version()}
	if !ok || bi == nil {
		return info
	}
	if bi.Main.Version != "" {
		info.Version = bi.Main.Version
	}
	if version != "" && (info.Version == "(devel)" || info.Version == "unknown") {
		info.Version = version
	}
	if bi.GoVersion != "" {
		info.GoVersion = bi.GoVersion
	}
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Commit = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if info.Commit != "" && modified {
		info.Commit += "-dirty"
	}
	return info
}

// String formats the build on one line:
// "hourglass v1.2.3 (commit 0123abc, go1.26.8)".
func (i Info) String() string {
	commit := i.Commit
	if commit == "" {
		commit = "unknown"
	}
	return "hourglass " + i.Version + " (commit " + commit + ", " + i.GoVersion + ")"
}
