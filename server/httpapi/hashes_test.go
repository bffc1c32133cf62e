package httpapi_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/server/httpapi"
	"github.com/hourglass-io/hourglass/ttlhash"
)

// startHashServer serves b's hashes, with a Sweeper running (so that
// fields expire and their events appear), and opts for the Hashes.
func startHashServer(t testing.TB, b backend, opts *ttlhash.Options, configure func(*httpapi.Server)) *testServer {
	t.Helper()
	qs := b.Open(t)
	hs := storesOf(t, qs).hashes
	h, err := ttlhash.New(hs, opts)
	if err != nil {
		t.Fatal(err)
	}
	w, err := ttlhash.NewSweeper(hs, &ttlhash.SweeperOptions{Interval: 2 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	ts := startServer(t, qs, func(s *httpapi.Server) {
		s.Hashes = h
		if configure != nil {
			configure(s)
		}
	})
	ts.srv.Metrics.WatchSweeper(w)
	t.Cleanup(func() { w.Close() }) // before the store closes: cleanups run last first
	return ts
}

func forEachHashBackend(t *testing.T, f func(t *testing.T, b backend)) {
	for _, b := range backends {
		t.Run(b.Name, func(t *testing.T) { f(t, b) })
	}
}

type hashEntry struct {
	Name        string     `json:"name"`
	ValueBase64 string     `json:"value_base64"`
	Value       *string    `json:"value"`
	Deadline    *time.Time `json:"deadline"`
}

type getReply struct {
	Fields  []hashEntry `json:"fields"`
	Missing []string    `json:"missing"`
}

type fieldCodes struct {
	Fields []struct {
		Name string `json:"name"`
		Code int    `json:"code"`
	} `json:"fields"`
}

func (f fieldCodes) codes() []int {
	var out []int
	for _, x := range f.Fields {
		out = append(out, x.Code)
	}
	return out
}

type hashEvent struct {
	ID          string    `json:"id"`
	Hash        string    `json:"hash"`
	Field       string    `json:"field"`
	ValueBase64 string    `json:"value_base64"`
	Value       *string   `json:"value"`
	Deadline    time.Time `json:"deadline"`
	ExpiredAt   time.Time `json:"expired_at"`
	Redelivered bool      `json:"redelivered"`
}

func fieldsQuery(names ...string) string {
	v := url.Values{"field": names}
	return "?" + v.Encode()
}

func text(s string) map[string]any { return map[string]any{"name": s, "value": s + "-value"} }

func (c *client) hset(t testing.TB, hash string, body map[string]any) int {
	t.Helper()
	var r struct{ Added int }
	c.do(req{method: "POST", path: "/v1/hashes/" + url.PathEscape(hash) + "/fields", json: body}).want(t, http.StatusOK, "").decode(t, &r)
	return r.Added
}

func (c *client) hget(t testing.TB, hash string, names ...string) getReply {
	t.Helper()
	q := ""
	if len(names) > 0 {
		q = fieldsQuery(names...)
	}
	var r getReply
	c.do(req{method: "GET", path: "/v1/hashes/" + url.PathEscape(hash) + "/fields" + q}).want(t, http.StatusOK, "").decode(t, &r)
	return r
}

func (c *client) hcodes(t testing.TB, hash, op string, body map[string]any) []int {
	t.Helper()
	var r fieldCodes
	c.do(req{method: "POST", path: "/v1/hashes/" + url.PathEscape(hash) + "/" + op, json: body}).want(t, http.StatusOK, "").decode(t, &r)
	return r.codes()
}

func (c *client) httl(t testing.TB, hash string, names ...string) []int64 {
	t.Helper()
	var r struct {
		Fields []struct {
			Name  string `json:"name"`
			TTLMS int64  `json:"ttl_ms"`
		} `json:"fields"`
	}
	c.do(req{method: "GET", path: "/v1/hashes/" + url.PathEscape(hash) + "/ttl" + fieldsQuery(names...)}).want(t, http.StatusOK, "").decode(t, &r)
	var out []int64
	for i, f := range r.Fields {
		if f.Name != names[i] {
			t.Fatalf("ttl reply field %d is %q, want %q", i, f.Name, names[i])
		}
		out = append(out, f.TTLMS)
	}
	return out
}

func (c *client) readEvents(t testing.TB, group, consumer string, max int, timeoutMS int64) []hashEvent {
	t.Helper()
	var r struct{ Events []hashEvent }
	c.do(req{method: "POST", path: "/v1/hash-groups/" + group + "/read", json: map[string]any{"consumer": consumer, "max": max, "timeout_ms": timeoutMS}}).
		want(t, http.StatusOK, "").decode(t, &r)
	return r.Events
}

func TestHashFields(t *testing.T) {
	forEachHashBackend(t, func(t *testing.T, b backend) {
		ts := startHashServer(t, b, nil, nil)
		c := ts.c
		const h = "users:42"

		// Set: many fields with a TTL, one without.
		if n := c.hset(t, h, map[string]any{"fields": []any{text("a"), text("b")}, "ttl_ms": 600000}); n != 2 {
			t.Fatalf("set added %d, want 2", n)
		}
		if n := c.hset(t, h, map[string]any{"fields": []any{text("c")}}); n != 1 {
			t.Fatalf("set added %d, want 1", n)
		}
		if n := c.hset(t, h, map[string]any{"fields": []any{text("a")}, "ttl_ms": 600000}); n != 0 {
			t.Fatalf("set of an existing field added %d, want 0", n)
		}

		// Get one, many (with a missing one), all.
		g := c.hget(t, h, "a", "nope", "c")
		if len(g.Fields) != 2 || g.Fields[0].Name != "a" || *g.Fields[0].Value != "a-value" || g.Fields[0].Deadline == nil ||
			g.Fields[1].Name != "c" || g.Fields[1].Deadline != nil || !slices.Equal(g.Missing, []string{"nope"}) {
			t.Fatalf("get a, nope, c: %+v", g)
		}
		if left := time.Until(*g.Fields[0].Deadline); left < 9*time.Minute || left > 11*time.Minute {
			t.Errorf("a's deadline is %v from now, want about 10 min", left)
		}
		all := c.hget(t, h)
		var names []string
		for _, e := range all.Fields {
			names = append(names, e.Name)
		}
		slices.Sort(names)
		if !slices.Equal(names, []string{"a", "b", "c"}) {
			t.Fatalf("get all: %v", names)
		}
		var l struct {
			Hash string
			Len  int
		}
		c.do(req{method: "GET", path: "/v1/hashes/" + url.PathEscape(h)}).want(t, http.StatusOK, "").decode(t, &l)
		if l.Hash != h || l.Len != 3 {
			t.Fatalf("len: %+v, want 3 of %s", l, h)
		}

		// TTL: ms left, -1 without a TTL, -2 missing.
		ttls := c.httl(t, h, "a", "c", "nope")
		if ttls[0] < 590000 || ttls[0] > 600000 || ttls[1] != -1 || ttls[2] != -2 {
			t.Fatalf("ttl a, c, nope: %v", ttls)
		}

		// Expire with the conditions, by TTL and by deadline.
		if got := c.hcodes(t, h, "expire", map[string]any{"fields": []string{"a", "c", "nope"}, "ttl_ms": 60000, "cond": "NX"}); !slices.Equal(got, []int{0, 1, -2}) {
			t.Errorf("expire NX a, c, nope: %v, want [0 1 -2]", got)
		}
		if got := c.hcodes(t, h, "expire", map[string]any{"fields": []string{"a", "c"}, "ttl_ms": 120000, "cond": "GT"}); !slices.Equal(got, []int{0, 1}) {
			t.Errorf("expire GT 2 min a (10 min), c (1 min): %v, want [0 1]", got)
		}
		at := time.Now().Add(30 * time.Minute).UTC().Truncate(time.Millisecond)
		if got := c.hcodes(t, h, "expire", map[string]any{"fields": []string{"a", "b"}, "at": at, "cond": "LT"}); !slices.Equal(got, []int{0, 0}) {
			t.Errorf("expire LT +30 min: %v, want [0 0]", got)
		}
		if got := c.hcodes(t, h, "expire", map[string]any{"fields": []string{"a"}, "at": at, "cond": "XX"}); !slices.Equal(got, []int{1}) {
			t.Errorf("expire XX at +30 min: %v, want [1]", got)
		}
		if g := c.hget(t, h, "a"); g.Fields[0].Deadline == nil || !g.Fields[0].Deadline.Equal(at) {
			t.Errorf("a's deadline %v, want %v", g.Fields[0].Deadline, at)
		}

		// Persist: 1, then -1; -2 missing.
		if got := c.hcodes(t, h, "persist", map[string]any{"fields": []string{"c", "c", "nope"}}); !slices.Equal(got, []int{1, -1, -2}) {
			t.Errorf("persist c, c, nope: %v, want [1 -1 -2]", got)
		}

		// Keep-TTL and an absolute deadline at set.
		c.hset(t, h, map[string]any{"fields": []any{map[string]any{"name": "a", "value": "new"}, text("d")}, "keep_ttl": true})
		if g := c.hget(t, h, "a", "d"); *g.Fields[0].Value != "new" || g.Fields[0].Deadline == nil || !g.Fields[0].Deadline.Equal(at) || g.Fields[1].Deadline != nil {
			t.Errorf("after a keep_ttl set: %+v", g.Fields)
		}
		c.hset(t, h, map[string]any{"fields": []any{text("e")}, "at": at})
		if g := c.hget(t, h, "e"); g.Fields[0].Deadline == nil || !g.Fields[0].Deadline.Equal(at) {
			t.Errorf("e set with at %v: %+v", at, g.Fields)
		}
		c.hset(t, h, map[string]any{"fields": []any{text("a")}})
		if ttls := c.httl(t, h, "a"); ttls[0] != -1 {
			t.Errorf("a set without a TTL has ttl %d, want -1 (cleared)", ttls[0])
		}

		// Expire now: 2, and the field is gone.
		if got := c.hcodes(t, h, "expire", map[string]any{"fields": []string{"d"}, "ttl_ms": 0}); !slices.Equal(got, []int{2}) {
			t.Errorf("expire ttl 0: %v, want [2]", got)
		}

		// Delete.
		var d struct{ Deleted int }
		c.do(req{method: "DELETE", path: "/v1/hashes/" + url.PathEscape(h) + "/fields" + fieldsQuery("b", "d", "nope")}).want(t, http.StatusOK, "").decode(t, &d)
		if d.Deleted != 1 {
			t.Errorf("deleted %d of b, d, nope, want 1", d.Deleted)
		}

		// A hash name with a slash, escaped in the path (the document's
		// router does not unescape it: off-spec for the check only).
		c.do(req{method: "POST", path: "/v1/hashes/a%2Fb/fields", json: map[string]any{"fields": []any{text("x")}}, offSpec: true}).want(t, http.StatusOK, "")
		var ab getReply
		c.do(req{method: "GET", path: "/v1/hashes/a%2Fb/fields?field=x", offSpec: true}).want(t, http.StatusOK, "").decode(t, &ab)
		if len(ab.Fields) != 1 {
			t.Errorf("get of hash a/b: %+v", ab)
		}
		if g := c.hget(t, "a", "x"); len(g.Fields) != 0 {
			t.Errorf("hash a has a/b's field: %+v", g)
		}

		// Scan in pages until the cursor is empty.
		for i := range 25 {
			c.hset(t, "big", map[string]any{"fields": []any{text(fmt.Sprintf("f%02d", i))}, "ttl_ms": 600000})
		}
		seen := map[string]bool{}
		cursor := ""
		for pages := 0; ; pages++ {
			if pages > 100 {
				t.Fatal("the scan does not end")
			}
			var sr struct {
				Fields []hashEntry
				Cursor string
			}
			c.do(req{method: "GET", path: "/v1/hashes/big/scan?count=5&cursor=" + url.QueryEscape(cursor)}).want(t, http.StatusOK, "").decode(t, &sr)
			for _, e := range sr.Fields {
				seen[e.Name] = true
			}
			if sr.Cursor == "" {
				break
			}
			cursor = sr.Cursor
		}
		if len(seen) != 25 {
			t.Errorf("the scan saw %d fields, want 25", len(seen))
		}
	})
}

func TestHashBadInput(t *testing.T) {
	ts := startHashServer(t, backends[0], nil, nil)
	c := ts.c
	path := "/v1/hashes/h/fields"
	for _, tc := range []struct {
		name   string
		r      req
		status int
		code   string
	}{
		{"no fields", req{method: "POST", path: path, json: map[string]any{"fields": []any{}}, offSpec: true}, 400, httpapi.CodeBadRequest},
		{"bad base64", req{method: "POST", path: path, json: map[string]any{"fields": []any{map[string]any{"name": "a", "value_base64": "!!"}}}, offSpec: true}, 400, httpapi.CodeBadRequest},
		{"no value", req{method: "POST", path: path, json: map[string]any{"fields": []any{map[string]any{"name": "a"}}}}, 400, httpapi.CodeBadRequest},
		{"ttl and keep_ttl", req{method: "POST", path: path, json: map[string]any{"fields": []any{text("a")}, "ttl_ms": 5, "keep_ttl": true}}, 400, httpapi.CodeBadRequest},
		{"past at", req{method: "POST", path: path, json: map[string]any{"fields": []any{text("a")}, "at": time.Now().Add(-time.Hour)}}, 400, httpapi.CodeBadRequest},
		{"ttl too long", req{method: "POST", path: path, json: map[string]any{"fields": []any{text("a")}, "ttl_ms": int64(ttlhash.MaxTTL/time.Millisecond) + 1}}, 400, httpapi.CodeBadRequest},
		{"unknown JSON field", req{method: "POST", path: path, json: map[string]any{"fields": []any{text("a")}, "tll_ms": 5}, offSpec: true}, 400, httpapi.CodeBadRequest},
		{"hash name too long", req{method: "GET", path: "/v1/hashes/" + strings.Repeat("x", ttlhash.MaxNameLen+1), offSpec: true}, 400, httpapi.CodeBadRequest},
		{"ttl without fields", req{method: "GET", path: "/v1/hashes/h/ttl", offSpec: true}, 400, httpapi.CodeBadRequest},
		{"del without fields", req{method: "DELETE", path: path, offSpec: true}, 400, httpapi.CodeBadRequest},
		{"bad cond", req{method: "POST", path: "/v1/hashes/h/expire", json: map[string]any{"fields": []string{"a"}, "ttl_ms": 5, "cond": "ZZ"}, offSpec: true}, 400, httpapi.CodeBadRequest},
		{"expire with ttl and at", req{method: "POST", path: "/v1/hashes/h/expire", json: map[string]any{"fields": []string{"a"}, "ttl_ms": 5, "at": time.Now().Add(time.Hour)}}, 400, httpapi.CodeBadRequest},
		{"expire with neither", req{method: "POST", path: "/v1/hashes/h/expire", json: map[string]any{"fields": []string{"a"}}}, 400, httpapi.CodeBadRequest},
		{"scan count 0", req{method: "GET", path: "/v1/hashes/h/scan?count=0", offSpec: true}, 400, httpapi.CodeBadRequest},
		{"read without consumer", req{method: "POST", path: "/v1/hash-groups/g/read", json: map[string]any{}, offSpec: true}, 400, httpapi.CodeBadRequest},
		{"read of no group", req{method: "POST", path: "/v1/hash-groups/g/read", json: map[string]any{"consumer": "c"}}, 404, httpapi.CodeNotFound},
		{"ack without ids", req{method: "POST", path: "/v1/hash-groups/g/ack", json: map[string]any{"ids": []string{}}, offSpec: true}, 400, httpapi.CodeBadRequest},
		{"delete of no group", req{method: "DELETE", path: "/v1/hash-groups/g"}, 404, httpapi.CodeNotFound},
		{"read max too big", req{method: "POST", path: "/v1/hash-groups/g/read", json: map[string]any{"consumer": "c", "max": 5000}, offSpec: true}, 400, httpapi.CodeBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.do(tc.r).want(t, tc.status, tc.code)
		})
	}
	// Nothing was stored by the refused sets.
	if g := c.hget(t, "h"); len(g.Fields) != 0 {
		t.Errorf("the refused calls stored %+v", g.Fields)
	}
}

// TestHashBinaryValues stores every byte value, alone and all together,
// and reads them back exactly: by get, by scan and in the expiry events.
func TestHashBinaryValues(t *testing.T) {
	forEachHashBackend(t, func(t *testing.T, b backend) {
		ts := startHashServer(t, b, nil, nil)
		c := ts.c
		want := map[string][]byte{}
		var fields []any
		every := make([]byte, 256)
		for i := range 256 {
			every[i] = byte(i)
			name := fmt.Sprintf("b%03d", i)
			want[name] = []byte{byte(i)}
			fields = append(fields, map[string]any{"name": name, "value_base64": base64.StdEncoding.EncodeToString([]byte{byte(i)})})
		}
		want["every"] = every
		fields = append(fields, map[string]any{"name": "every", "value_base64": base64.StdEncoding.EncodeToString(every)})
		if n := c.hset(t, "bin", map[string]any{"fields": fields}); n != 257 {
			t.Fatalf("added %d, want 257", n)
		}
		check := func(how string, es []hashEntry) {
			t.Helper()
			if len(es) != len(want) {
				t.Fatalf("%s: %d fields, want %d", how, len(es), len(want))
			}
			for _, e := range es {
				got, err := base64.StdEncoding.DecodeString(e.ValueBase64)
				if err != nil || !bytes.Equal(got, want[e.Name]) {
					t.Fatalf("%s: field %s is %x (%v), want %x", how, e.Name, got, err, want[e.Name])
				}
				if e.Value != nil && *e.Value != string(want[e.Name]) {
					t.Fatalf("%s: field %s's text %q, want %q", how, e.Name, *e.Value, want[e.Name])
				}
			}
		}
		check("get all", c.hget(t, "bin").Fields)
		names := make([]string, 0, len(want))
		for n := range want {
			names = append(names, n)
		}
		check("get many", c.hget(t, "bin", names...).Fields)

		// Through the events: every field expires at once.
		c.do(req{method: "POST", path: "/v1/hash-groups/bin"}).want(t, http.StatusNoContent, "")
		if got := c.hcodes(t, "bin", "expire", map[string]any{"fields": names, "ttl_ms": 0}); len(got) != 257 || slices.ContainsFunc(got, func(c int) bool { return c != 2 }) {
			t.Fatalf("expire now: %v", got)
		}
		seen := map[string]bool{}
		deadline := time.Now().Add(20 * time.Second)
		for len(seen) < len(want) && time.Now().Before(deadline) {
			evs := c.readEvents(t, "bin", "c1", 1000, 1000)
			var ids []string
			for _, e := range evs {
				got, _ := base64.StdEncoding.DecodeString(e.ValueBase64)
				if e.Hash != "bin" || !bytes.Equal(got, want[e.Field]) {
					t.Fatalf("event %+v: value %x, want %x", e, got, want[e.Field])
				}
				seen[e.Field] = true
				ids = append(ids, e.ID)
			}
			if len(ids) > 0 {
				c.do(req{method: "POST", path: "/v1/hash-groups/bin/ack", json: map[string]any{"ids": ids}}).want(t, http.StatusOK, "")
			}
		}
		if len(seen) != len(want) {
			t.Fatalf("%d events of %d fields", len(seen), len(want))
		}
	})
}

func TestHashEvents(t *testing.T) {
	forEachHashBackend(t, func(t *testing.T, b backend) {
		ts := startHashServer(t, b, &ttlhash.Options{VisibilityTimeout: 300 * time.Millisecond}, nil)
		c := ts.c
		c.do(req{method: "POST", path: "/v1/hash-groups/audit"}).want(t, http.StatusNoContent, "")
		c.do(req{method: "POST", path: "/v1/hash-groups/audit"}).want(t, http.StatusNoContent, "") // again: nothing

		// Nothing yet: an empty list at once.
		if evs := c.readEvents(t, "audit", "w1", 10, 0); len(evs) != 0 {
			t.Fatalf("events before any expiry: %+v", evs)
		}
		// A read waiting for the expiry gets it.
		c.hset(t, "sessions", map[string]any{"fields": []any{map[string]any{"name": "s1", "value": "alice"}}, "ttl_ms": 50})
		evs := c.readEvents(t, "audit", "w1", 10, 20000)
		if len(evs) != 1 {
			t.Fatalf("read: %+v, want the expiry of s1", evs)
		}
		e := evs[0]
		if e.Hash != "sessions" || e.Field != "s1" || e.Value == nil || *e.Value != "alice" || e.ValueBase64 != base64.StdEncoding.EncodeToString([]byte("alice")) ||
			e.Redelivered || e.ID == "" || e.ExpiredAt.Before(e.Deadline) {
			t.Fatalf("event %+v", e)
		}
		if g := c.hget(t, "sessions", "s1"); len(g.Fields) != 0 {
			t.Errorf("s1 still there after its event: %+v", g)
		}

		// Unacknowledged, it is pending, and handed out again after the
		// visibility timeout.
		var st struct {
			Retained, Dropped int64
			Groups            []struct {
				Name    string
				Pending int64
			}
		}
		c.do(req{method: "GET", path: "/v1/hash-groups"}).want(t, http.StatusOK, "").decode(t, &st)
		if len(st.Groups) != 1 || st.Groups[0].Name != "audit" || st.Groups[0].Pending != 1 {
			t.Fatalf("event stats %+v, want audit with 1 pending", st)
		}
		var again []hashEvent
		waitFor(t, "the event to be handed out again", func() bool {
			again = c.readEvents(t, "audit", "w2", 10, 500)
			return len(again) > 0
		})
		if again[0].ID != e.ID || !again[0].Redelivered {
			t.Fatalf("handed out again: %+v, want %s redelivered", again[0], e.ID)
		}

		// Ack: 1, then 0; nothing pending.
		var ack struct{ Acked int }
		c.do(req{method: "POST", path: "/v1/hash-groups/audit/ack", json: map[string]any{"ids": []string{e.ID}}}).want(t, http.StatusOK, "").decode(t, &ack)
		if ack.Acked != 1 {
			t.Fatalf("acked %d, want 1", ack.Acked)
		}
		c.do(req{method: "POST", path: "/v1/hash-groups/audit/ack", json: map[string]any{"ids": []string{e.ID}}}).want(t, http.StatusOK, "").decode(t, &ack)
		if ack.Acked != 0 {
			t.Fatalf("acked again %d, want 0", ack.Acked)
		}
		c.do(req{method: "GET", path: "/v1/hash-groups"}).want(t, http.StatusOK, "").decode(t, &st)
		if st.Groups[0].Pending != 0 {
			t.Fatalf("event stats after the ack %+v, want nothing pending", st)
		}

		// Delete the group: then it is unknown.
		c.do(req{method: "DELETE", path: "/v1/hash-groups/audit"}).want(t, http.StatusNoContent, "")
		c.do(req{method: "POST", path: "/v1/hash-groups/audit/read", json: map[string]any{"consumer": "w1"}}).want(t, http.StatusNotFound, httpapi.CodeNotFound)
	})
}

func TestHashReadLongPollBounded(t *testing.T) {
	forEachHashBackend(t, func(t *testing.T, b backend) {
		ts := startHashServer(t, b, nil, func(s *httpapi.Server) { s.MaxWait = 200 * time.Millisecond })
		c := ts.c
		c.do(req{method: "POST", path: "/v1/hash-groups/g"}).want(t, http.StatusNoContent, "")
		// A minute asked for, MaxWait served: the reply comes, empty.
		start := time.Now()
		if evs := c.readEvents(t, "g", "c", 10, 60000); len(evs) != 0 {
			t.Fatalf("events %+v, want none", evs)
		}
		if d := time.Since(start); d < 200*time.Millisecond || d > 30*time.Second {
			t.Fatalf("the read took %v: want MaxWait (200ms), not the minute asked for", d)
		}
	})
}

func TestHashMetrics(t *testing.T) {
	ts := startHashServer(t, backends[1], nil, nil) // Redis: the Sweeper expires the fields
	c := ts.c
	m := ts.srv.Metrics
	c.do(req{method: "POST", path: "/v1/hash-groups/m"}).want(t, http.StatusNoContent, "")
	c.hset(t, "mh", map[string]any{"fields": []any{text("a"), text("b")}, "ttl_ms": 20})
	var ids []string
	waitFor(t, "two events", func() bool {
		for _, e := range c.readEvents(t, "m", "c", 10, 1000) {
			ids = append(ids, e.ID)
		}
		return len(ids) == 2
	})
	c.do(req{method: "POST", path: "/v1/hash-groups/m/ack", json: map[string]any{"ids": ids}}).want(t, http.StatusOK, "")

	if n := counter(t, m, "hourglass_requests_total", map[string]string{"protocol": "http", "primitive": "hashes", "command": "hset", "result": "ok"}); n != 1 {
		t.Errorf("hset requests %v, want 1", n)
	}
	if n := counter(t, m, httpapi.MetricHashEventsDelivered, map[string]string{"redelivered": "false"}); n != 2 {
		t.Errorf("events delivered %v, want 2", n)
	}
	if n := counter(t, m, httpapi.MetricHashEventsAcked, nil); n != 2 {
		t.Errorf("events acked %v, want 2", n)
	}
	if n := counter(t, m, httpapi.MetricHashFieldsSwept, nil); n != 2 {
		t.Errorf("fields swept %v, want 2", n)
	}
	lag := find(t, m, httpapi.MetricExpiryLag, nil)
	if len(lag) != 1 || lag[0].GetHistogram().GetSampleCount() != 2 {
		t.Errorf("expiry lag %v, want two observations", lag)
	}
	// And on the wire.
	body := string(c.do(req{method: "GET", path: "/metrics"}).want(t, http.StatusOK, "").body)
	for _, name := range []string{httpapi.MetricExpiryLag + "_count", httpapi.MetricHashEventsDelivered, httpapi.MetricHashEventsAcked, httpapi.MetricHashFieldsSwept} {
		if !strings.Contains(body, name) {
			t.Errorf("/metrics has no %s", name)
		}
	}
}

func TestDashboardListsHashes(t *testing.T) {
	ts := startHashServer(t, backends[0], nil, nil)
	c := ts.c
	page := string(c.do(req{method: "GET", path: "/dashboard/panels?view=hashes"}).want(t, http.StatusOK, "").body)
	if !strings.Contains(page, `id="panel-hashes"`) || !strings.Contains(page, "there are none") {
		t.Fatalf("the hashes panel before any call:\n%s", page)
	}
	// A read of a hash nobody wrote does not make it appear.
	c.do(req{method: "GET", path: "/v1/hashes/nosuchhash"}).want(t, http.StatusOK, "")
	if page := string(c.do(req{method: "GET", path: "/dashboard/panels?view=hashes"}).want(t, http.StatusOK, "").body); strings.Contains(page, "nosuchhash") {
		t.Errorf("the hashes panel lists a hash only read, never written:\n%s", page)
	}
	c.hset(t, "carts", map[string]any{"fields": []any{text("soon"), text("later")}, "ttl_ms": 3600000})
	c.hset(t, "carts", map[string]any{"fields": []any{text("soonest")}, "ttl_ms": 60000})
	c.hset(t, "carts", map[string]any{"fields": []any{text("forever")}})
	c.do(req{method: "POST", path: "/v1/hash-groups/billing"}).want(t, http.StatusNoContent, "")
	c.do(req{method: "POST", path: "/v1/hashes/carts/expire", json: map[string]any{"fields": []string{"gone"}, "ttl_ms": 0}}).want(t, http.StatusOK, "")
	page = string(c.do(req{method: "GET", path: "/dashboard/panels?view=hashes"}).want(t, http.StatusOK, "").body)
	for _, want := range []string{`data-hash="carts"`, `<td class="n len" data-label="live fields">4</td>`, `<td class="n ttl" data-label="with a TTL">3</td>`, `data-group="billing"`, "<code>soonest</code> in ", "touched most recently"} {
		if !strings.Contains(page, want) {
			t.Errorf("the hashes panel lacks %q:\n%s", want, page)
		}
	}
	if i, j := strings.Index(page, "<code>soonest</code>"), strings.Index(page, "<code>soon</code>"); i < 0 || j < 0 || i > j {
		t.Errorf("the next expiries are not soonest first")
	}
}

// A malformed scan cursor or event ID is bad input on every back end: a
// 4xx (the embedded engine may take any cursor), never the store's error.
func TestHashMalformedCursorAndEventID(t *testing.T) {
	forEachHashBackend(t, func(t *testing.T, b backend) {
		ts := startHashServer(t, b, nil, nil)
		c := ts.c
		c.do(req{method: "POST", path: "/v1/hash-groups/g", offSpec: true})
		for _, cursor := range []string{"%FF", "-1", "abc", "1.5", "99999999999999999999999"} {
			r := c.do(req{method: "GET", path: "/v1/hashes/h/scan?cursor=" + cursor, offSpec: true})
			if r.status >= 500 || (b.Name != "mem" && r.status != 400) {
				t.Errorf("scan with cursor %q: %d %s, want 400 (or 200 on the embedded engine)", cursor, r.status, r.body)
			}
		}
		for _, id := range []string{"0:x", "0:1-", "0:-1", "0:1-2-3", "0:18446744073709551616-0"} {
			r := c.do(req{method: "POST", path: "/v1/hash-groups/g/ack", json: map[string]any{"ids": []string{id}}, offSpec: true})
			if r.status >= 500 {
				t.Errorf("ack of event %q: %d %s, want a 4xx", id, r.status, r.body)
			}
		}
	})
}
