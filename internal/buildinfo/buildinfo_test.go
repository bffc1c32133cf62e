package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want Info
	}{
		{"tagged", &debug.BuildInfo{GoVersion: "go1.24.0", Main: debug.Module{Version: "v1.2.3"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"}}},
			true, Info{Version: "v1.2.3", Commit: "abc", GoVersion: "go1.24.0"}},
		{"checkout with changes", &debug.BuildInfo{GoVersion: "go1.24.0", Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}}},
			true, Info{Version: "(devel)", Commit: "abc-dirty", GoVersion: "go1.24.0"}},
		{"no vcs", &debug.BuildInfo{GoVersion: "go1.24.0", Main: debug.Module{Version: "(devel)"}},
			true, Info{Version: "(devel)", GoVersion: "go1.24.0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fromBuildInfo(tt.bi, tt.ok); got != tt.want {
				t.Errorf("fromBuildInfo = %+v, want %+v", got, tt.want)
			}
		})
	}
	if got := fromBuildInfo(nil, false); got.Version != "unknown" || got.GoVersion == "" {
		t.Errorf("without build info: %+v", got)
	}
	if got := (Info{Version: "(devel)", GoVersion: "go1.24.0"}).String(); got != "hourglass (devel) (commit unknown, go1.24.0)" {
		t.Errorf("String = %q", got)
	}
}

// A version stamped at link time replaces "(devel)", never a module version.
func TestStampedVersion(t *testing.T) {
	defer func(v string) { version = v }(version)
	version = "v1.4.0-3-gabc"
	devel := &debug.BuildInfo{GoVersion: "go1.24.0", Main: debug.Module{Version: "(devel)"}}
	if got := fromBuildInfo(devel, true); got.Version != "v1.4.0-3-gabc" {
		t.Errorf("a checkout's build stamped v1.4.0-3-gabc: version %q", got.Version)
	}
	tagged := &debug.BuildInfo{GoVersion: "go1.24.0", Main: debug.Module{Version: "v1.2.3"}}
	if got := fromBuildInfo(tagged, true); got.Version != "v1.2.3" {
		t.Errorf("a module version v1.2.3 stamped v1.4.0-3-gabc: version %q", got.Version)
	}
}
