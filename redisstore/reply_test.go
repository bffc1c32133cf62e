package redisstore

import (
	"strings"
	"testing"
)

// A reply of the wrong shape is an error naming the operation, never a
// value filled in with zeros.
func TestReplyOfWrongShapeIsAnError(t *testing.T) {
	state := []any{`{"spec":"@every 1s"}`, "body", int64(1), int64(0), int64(0), int64(0), int64(0), int64(0), "", int64(0), int64(0)}
	for _, c := range []struct {
		name string
		read func() error
	}{
		{"a count that is a string", func() error { _, err := count(hxScripts.length, "3", nil); return err }},
		{"codes with a string among them", func() error { _, err := codes(hxScripts.ttl, []any{int64(1), "x"}); return err }},
		{"a short sweep reply", func() error { _, err := sweepResult([]any{int64(1), int64(0)}); return err }},
		{"entries not in threes", func() error { _, err := entries(replyOf(hxScripts.getAll), []any{"f", "v"}); return err }},
		{"a state whose version is a string", func() error {
			bad := append([]any{}, state...)
			bad[2] = "1"
			_, _, err := decodeState(replyOf(scScripts.get), "s", bad)
			return err
		}},
		{"a state that says more fires than it holds", func() error {
			bad := append([]any{}, state...)
			bad[10] = int64(1)
			_, _, err := decodeState(replyOf(scScripts.get), "s", bad)
			return err
		}},
		{"a status that is not an integer", func() error {
			_, _, _, _, err := (&Schedules{}).stateReply(scScripts.fire, "s", []any{"0"})
			return err
		}},
	} {
		err := c.read()
		if err == nil || !strings.Contains(err.Error(), "redisstore: ") {
			t.Errorf("%s: got %v, want a shape error", c.name, err)
		}
	}
	// The well-formed state reads.
	st, rest, err := decodeState(replyOf(scScripts.get), "s", state)
	if err != nil || st.Version != 1 || string(st.Job.Body) != "body" || len(rest) != 0 {
		t.Errorf("decodeState = %+v, %v, %v", st, rest, err)
	}
}
