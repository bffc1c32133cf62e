package redisstore

import (
	"reflect"
	"testing"
)

// A delete of a tube that goes in the same batch as a reserve of that
// tube alone rides in it: one call, the reserve's, deleting first and
// reserving nothing for the delete's request; the delete's reply is its
// outcomes. A delete of another tube, or with no reserve beside it, goes
// as a delete.
func TestDeleteRidesInReserve(t *testing.T) {
	k := keys{prefix: DefaultPrefix}
	tubeCall := func(o *op, tube string, args ...any) *request {
		ks := append(k.tagKeys(7), k.tubeKeys(7, tube)...)
		return &request{call: call{op: o, keys: ks, args: append([]any{""}, args...)}}
	}
	res := tubeCall(scripts.reserve, "t", 1, "t", 1, "w1", 1, 0)
	del := tubeCall(scripts.delete, "t", "t", 1, "w2", 2, "00000000000107", "00000000000207")
	other := tubeCall(scripts.delete, "u", "u", 1, "w2", 1, "00000000000307")
	calls, parts := mergeCalls([]*request{del, res, other})
	if len(calls) != 2 {
		t.Fatalf("%d calls, want 2 (the reserve with the delete of t, the delete of u)", len(calls))
	}
	if calls[0].op != scripts.reserve || len(parts[0].reqs) != 2 {
		t.Fatalf("first call %s of %d requests, want the reserve of 2", calls[0].op.file, len(parts[0].reqs))
	}
	want := []any{"", 1, "t", 2, "w2", -1, 2, 1, "00000000000107", 1, "00000000000207", "w1", 1, 0}
	if !reflect.DeepEqual(calls[0].args, want) {
		t.Errorf("merged args\n got %v\nwant %v", calls[0].args, want)
	}
	if calls[1].op != scripts.delete || !reflect.DeepEqual(calls[1].args, other.args) {
		t.Errorf("second call: %s %v, want the delete of u as it was", calls[1].op.file, calls[1].args)
	}
	if !del.asDelete || other.asDelete || res.asDelete {
		t.Errorf("asDelete: del %v, res %v, other %v; want only the delete of t", del.asDelete, res.asDelete, other.asDelete)
	}
	// The reply: one per request, the delete's first; the delete gets its outcomes.
	reply := []any{
		[]any{[]any{int64(1), int64(0)}, []any{}, int64(-1), int64(0), int64(0)},
		[]any{[]any{}, []any{"a job"}, int64(-1), int64(0), int64(1)},
	}
	parts[0].split(reply, parts[0].reqs)
	if got := deleteReplyOf(del.val); !reflect.DeepEqual(got, []any{[]any{int64(1), int64(0)}}) {
		t.Errorf("the delete's reply: %v", got)
	}
	// Without a reserve of the tube in the batch, a delete stays one.
	lone := tubeCall(scripts.delete, "t", "t", 1, "w2", 1, "00000000000107")
	calls, _ = mergeCalls([]*request{lone})
	if calls[0].op != scripts.delete || lone.asDelete {
		t.Errorf("a lone delete became %s", calls[0].op.file)
	}
}
