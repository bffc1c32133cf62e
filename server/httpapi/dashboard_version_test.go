package httpapi

import "testing"

// TestVersionLabel: the header names the version and the commit once
// each.
func TestVersionLabel(t *testing.T) {
	for _, c := range []struct{ version, commit, want string }{
		{"a2a859d", "a2a859d", "a2a859d"},
		{"a2a859d-dirty", "a2a859d-dirty", "a2a859d-dirty"},
		{"a2a859d", "a2a859d0123456789abcdef0123456789abcdef", "a2a859d"},
		{"v1.2.0-3-ga2a859d", "a2a859d0123456789abcdef0123456789abcdef", "v1.2.0-3-ga2a859d"},
		{"v1.2.3", "a2a859d0123456789abcdef0123456789abcdef", "v1.2.3 · a2a859d01234"},
		{"(devel)", "a2a859d0123456789abcdef0123456789abcdef-dirty", "a2a859d01234-dirty"},
		{"(devel)", "", "(devel)"},
		{"v1.2.3", "", "v1.2.3"},
	} {
		if got := versionLabel(c.version, c.commit); got != c.want {
			t.Errorf("versionLabel(%q, %q) = %q, want %q", c.version, c.commit, got, c.want)
		}
	}
}
