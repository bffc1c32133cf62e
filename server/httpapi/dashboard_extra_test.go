package httpapi

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hourglass-io/hourglass/queue"
)

// TestExtraFields: fields the job page does not name, such as a last error
// and the time of a state change, show as soon as a store fills them in.
func TestExtraFields(t *testing.T) {
	type stats struct {
		ID          uint64
		LastError   string
		BuriedAt    time.Time
		Backoff     time.Duration
		ReleasedTTR int
		HTTPStatus  int
		Unset       string
		hidden      string
	}
	at := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	got := extraFields(stats{ID: 1, LastError: "smtp: 550 mailbox unavailable", BuriedAt: at, Backoff: 1500 * time.Millisecond, ReleasedTTR: 2, HTTPStatus: 503, hidden: "x"},
		map[string]bool{"ID": true})
	want := []jobField{
		{"last error", "smtp: 550 mailbox unavailable", time.Time{}},
		{"buried at", "2026-11-26 08:00:00.000 UTC", at},
		{"backoff", "1.5s", time.Time{}},
		{"released TTR", "2", time.Time{}},
		{"HTTP status", "503", time.Time{}},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(jobField{})); diff != "" {
		t.Errorf("extraFields (-want +got):\n%s", diff)
	}
	if got := jobExtras(queue.JobStats{ID: 1, Tube: "t", State: queue.Buried, Priority: 1, Age: 1, Delay: 1, TTR: 1, TimeLeft: 1,
		Reserves: 1, Timeouts: 1, Releases: 1, Buries: 1, Kicks: 1}); len(got) != 0 {
		t.Errorf("jobExtras of beanstalkd's fields alone: %v, want none", got)
	}
	// The body and the holder have places of their own: never a line of
	// bytes, never a lease token.
	if got := jobExtras(queue.JobStats{ID: 1, Body: []byte(`{"a":1}`), ReservedBy: "hgl_0123456789abcdef0123456789abcdef"}); len(got) != 0 {
		t.Errorf("jobExtras of a body and a holder: %v, want none", got)
	}
}
