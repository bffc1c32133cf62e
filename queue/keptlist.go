package queue

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// KeptLister is implemented by stores that list the jobs a tube keeps
// (both back ends do, beside KeepStore).
type KeptLister interface {
	// ListKept returns up to limit of the jobs tube keeps whose time has
	// not come, in the order of KeptJob.After (the one dropped last
	// first: with one retention, the newest finished first), those after
	// from (all when from is the zero KeptCursor). A tube that keeps no
	// job (or does not exist) has none.
	ListKept(ctx context.Context, tube string, from KeptCursor, limit int) ([]KeptJob, error)
}

// KeptJob is a job a tube keeps after it ended, as a list of the tube's
// kept jobs (Queue.ListKept) shows it; Lookup describes it whole.
type KeptJob struct {
	ID        ID
	UniqueKey string // "" for none
	// Cancelled says it ended by a cancel (its reason is LastError), not
	// a finish.
	Cancelled  bool
	LastError  string    // the last reason given with a release, a bury or its cancel
	FinishedAt time.Time // when it ended
	KeptUntil  time.Time // when its tube drops it
	// Result is the first KeptPreviewLen bytes of the result it was
	// finished with (nil for none); ResultLen is the whole result's length.
	Result    []byte
	ResultLen int
}

// KeptPreviewLen is the most bytes of a kept job's result a list of kept
// jobs carries (KeptJob.Result).
const KeptPreviewLen = 256

// MaxKeptList is the most jobs one call of Queue.ListKept returns.
const MaxKeptList = 1000

// KeptCursor is a place in the order of a tube's kept jobs: the jobs
// after it are those dropped earlier, or at the same time with a lower ID.
// The zero KeptCursor is before the first.
type KeptCursor struct {
	Until time.Time
	ID    ID
}

// IsZero reports whether c is the start of a list.
func (c KeptCursor) IsZero() bool { return c.ID == 0 && c.Until.IsZero() }

// CursorAfter returns the cursor after k in a list of kept jobs.
func (k KeptJob) CursorAfter() KeptCursor { return KeptCursor{Until: k.KeptUntil, ID: k.ID} }

// After reports whether k comes after c in a list of kept jobs: k is
// dropped earlier than c's place, or at the same time with a lower ID.
// Every job comes after the zero cursor.
func (k KeptJob) After(c KeptCursor) bool {
	if c.IsZero() {
		return true
	}
	if !k.KeptUntil.Equal(c.Until) {
		return k.KeptUntil.Before(c.Until)
	}
	return k.ID < c.ID
}

// String encodes c for a URL: Unix nanoseconds of Until, a dot, the ID;
// "" for the zero cursor.
func (c KeptCursor) String() string {
	if c.IsZero() {
		return ""
	}
	return strconv.FormatInt(c.Until.UnixNano(), 10) + "." + strconv.FormatUint(uint64(c.ID), 10)
}

// ParseKeptCursor reads a cursor that KeptCursor.String wrote; "" is the
// zero cursor. A malformed one is ErrInvalid.
func ParseKeptCursor(s string) (KeptCursor, error) {
	if s == "" {
		return KeptCursor{}, nil
	}
	ns, idt, ok := strings.Cut(s, ".")
	n, err1 := strconv.ParseInt(ns, 10, 64)
	id, err2 := strconv.ParseUint(idt, 10, 64)
	if !ok || err1 != nil || err2 != nil || n <= 0 || id == 0 || ID(id) > MaxID {
		return KeptCursor{}, invalid("cursor", "%q, want what a list of kept jobs gave as its next", s)
	}
	return KeptCursor{Until: time.Unix(0, n).UTC(), ID: ID(id)}, nil
}

// ListKept returns up to limit (1 to MaxKeptList) of the jobs tube keeps
// after it ended (KeepStore), the one its tube drops last first (with one
// retention, the newest finished first), starting after from (the zero
// KeptCursor for the first), and the cursor of the next page: the zero
// KeptCursor when there is none. It returns ErrInvalidTube for a bad
// name, ErrInvalid for a limit out of range, and ErrNoKeep when the store
// cannot list kept jobs. A call looks at the tube's kept jobs at one
// instant on the embedded engine and for a tube of one partition on
// Redis; a tube of several partitions on Redis is read one partition
// after another. A job kept between calls is listed by a later page only
// if its place is after the cursor.
func (q *Queue) ListKept(ctx context.Context, tube string, from KeptCursor, limit int) ([]KeptJob, KeptCursor, error) {
	if err := CheckTube(tube); err != nil {
		return nil, KeptCursor{}, err
	}
	if limit < 1 || limit > MaxKeptList {
		return nil, KeptCursor{}, invalid("limit", "%d, want 1 to %d", limit, MaxKeptList)
	}
	if !from.IsZero() && (from.ID == 0 || from.ID > MaxID || from.Until.IsZero()) {
		return nil, KeptCursor{}, invalid("cursor", "%v #%d, want a kept job's KeptUntil and ID", from.Until, from.ID)
	}
	kl, ok := q.store.(KeptLister)
	if !ok {
		return nil, KeptCursor{}, ErrNoKeep
	}
	jobs, err := kl.ListKept(ctx, tube, from, limit+1)
	if err != nil {
		return nil, KeptCursor{}, err
	}
	if len(jobs) <= limit {
		return jobs, KeptCursor{}, nil
	}
	jobs = jobs[:limit]
	return jobs, jobs[limit-1].CursorAfter(), nil
}
