package httpapi

import "testing"

// TestHolderOf: a reservation's owner, as the dashboard names it; an HTTP
// lease's token is never shown whole.
func TestHolderOf(t *testing.T) {
	lease := newLease()
	for _, c := range []struct {
		owner string
		want  Holder
	}{
		{"", Holder{}},
		{lease, Holder{"lease", lease[:12] + "…"}},
		{"3fa2c1d09b8e77aa/17", Holder{"connection", "#17 on server 3fa2c1d0"}},
		{"3fa2c1d09b8e77aa/server", Holder{"worker", "3fa2c1d09b8e77aa/server"}},
		{"billing-worker-7", Holder{"worker", "billing-worker-7"}},
	} {
		if got := holderOf(c.owner); got != c.want {
			t.Errorf("holderOf(%q) = %+v, want %+v", c.owner, got, c.want)
		}
	}
}
