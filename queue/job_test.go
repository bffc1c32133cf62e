package queue_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/queue"
)

// TestAppendError: the history keeps the newest entries, at most
// MaxErrors of them and at most MaxErrorBytes of reasons, and never
// changes the slice it is given.
func TestAppendError(t *testing.T) {
	at := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	entry := func(n int, size int) queue.AttemptError {
		return queue.AttemptError{At: at.Add(time.Duration(n) * time.Second), Attempt: uint32(n), Reason: strings.Repeat(string(rune('a'+n%26)), size)}
	}
	attempts := func(h []queue.AttemptError) []uint32 {
		var out []uint32
		for _, e := range h {
			out = append(out, e.Attempt)
		}
		return out
	}
	var h []queue.AttemptError
	for n := 1; n <= 15; n++ {
		h = queue.AppendError(h, entry(n, 10))
	}
	if got := attempts(h); len(got) != queue.MaxErrors || got[0] != 6 || got[9] != 15 {
		t.Fatalf("15 short errors kept as attempts %v, want 6 to 15", got)
	}
	// Long reasons: the byte budget binds before the count.
	long := queue.MaxReasonLen
	for n := 16; n <= 20; n++ {
		h = queue.AppendError(h, entry(n, long))
	}
	if got := attempts(h); len(got) != queue.MaxErrorBytes/long || got[0] != 17 || got[len(got)-1] != 20 {
		t.Fatalf("after 5 reasons of %d bytes kept attempts %v, want 17 to 20", long, got)
	}
	// A short one after them: the oldest long one goes only if it must.
	before := append([]queue.AttemptError(nil), h...)
	h2 := queue.AppendError(h, entry(21, 1))
	if got := attempts(h2); len(got) != 4 || got[0] != 18 || got[3] != 21 {
		t.Fatalf("kept attempts %v, want 18 to 21", got)
	}
	for i := range before {
		if h[i] != before[i] {
			t.Fatalf("AppendError changed its argument at %d", i)
		}
	}
	total := 0
	for _, e := range h2 {
		total += len(e.Reason)
	}
	if total > queue.MaxErrorBytes {
		t.Fatalf("%d bytes of reasons kept, budget %d", total, queue.MaxErrorBytes)
	}
	if got := queue.AppendError(nil, entry(1, long)); len(got) != 1 {
		t.Fatalf("first entry: %d kept", len(got))
	}
}
