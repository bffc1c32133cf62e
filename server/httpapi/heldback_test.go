package httpapi_test

import (
	"net/http"
	"regexp"
	"testing"

	"github.com/hourglass-io/hourglass/queue"
	"github.com/hourglass-io/hourglass/server/httpapi"
)

// TestReserveHeldBackSaysWhy: a reserve that asks for it and gets no job
// while ready jobs wait says which tube's pause, cap or rate held them
// back and when one frees; the tube's stats say the same of a pause or a
// cap; a reserve that does not ask pays nothing and hears nothing.
func TestReserveHeldBackSaysWhy(t *testing.T) {
	forEachBackend(t, func(t *testing.T, open func(testing.TB) queue.Store) {
		ts := startServer(t, open(t), nil)
		c := ts.c
		empty := func(tubes []string, explain bool) string {
			t.Helper()
			r := c.do(req{method: "POST", path: "/v1/reserve", json: map[string]any{"tubes": tubes, "timeout_ms": 0, "explain": explain}}).want(t, http.StatusNoContent, "")
			return r.header.Get(httpapi.HeaderHeldBack)
		}
		// The cap: 2 reserved of 2, 8 ready.
		c.do(req{method: "PUT", path: "/v1/tubes/mail/limits", json: map[string]any{"cap": 2}}).want(t, http.StatusOK, "")
		for range 10 {
			c.put(t, "mail", map[string]any{"body": "m", "ttr_ms": 60000})
		}
		c.reserve(t, []string{"mail"}, 0)
		c.reserve(t, []string{"mail"}, 0)
		if h := empty([]string{"mail"}, false); h != "" {
			t.Errorf("a reserve that did not ask heard %q", h)
		}
		if h := empty([]string{"mail"}, true); !regexp.MustCompile(`^"mail";by=cap;ready=8;reserved=2;cap=2;frees-in-ms=(59\d{3}|60000)$`).MatchString(h) {
			t.Errorf("held back by the cap: %s %q", httpapi.HeaderHeldBack, h)
		}
		var st httpapi.TubeStats
		c.do(req{method: "GET", path: "/v1/tubes/mail"}).want(t, http.StatusOK, "").decode(t, &st)
		if h := st.HeldBack; h == nil || h.By != "cap" || h.Ready != 8 || h.Reserved != 2 || h.Cap != 2 || h.FreesInMS < 59000 {
			t.Errorf("mail's stats: held_back %+v", h)
		}
		// The rate: one a minute, taken.
		c.do(req{method: "PUT", path: "/v1/tubes/sms/limits", json: map[string]any{"rate": map[string]any{"events": 1, "per": "1m"}}}).want(t, http.StatusOK, "")
		c.put(t, "sms", map[string]any{"body": "1"})
		c.put(t, "sms", map[string]any{"body": "2"})
		c.reserve(t, []string{"sms"}, 0)
		if h := empty([]string{"sms", "nosuch"}, true); h != `"sms";by=rate;ready=1;rate="1/1m0s, burst 1";frees-in-ms=60000` {
			t.Errorf("held back by the rate: %q", h)
		}
		var sms httpapi.TubeStats
		c.do(req{method: "GET", path: "/v1/tubes/sms"}).want(t, http.StatusOK, "").decode(t, &sms)
		if sms.HeldBack != nil {
			t.Errorf("sms's stats name a rate, which they cannot know holds: %+v", sms.HeldBack)
		}
		// A pause; and a tube with nothing ready is not held back.
		c.put(t, "reports", map[string]any{"body": "r"})
		c.do(req{method: "POST", path: "/v1/tubes/reports/pause", json: map[string]any{"delay_ms": 600000}}).want(t, http.StatusNoContent, "")
		c.put(t, "idle", map[string]any{"body": "i", "delay_ms": 600000})
		if h := empty([]string{"reports", "idle"}, true); !regexp.MustCompile(`^"reports";by=pause;ready=1;frees-in-ms=(59\d{4}|600000)$`).MatchString(h) {
			t.Errorf("held back by the pause: %q", h)
		}
	})
}
