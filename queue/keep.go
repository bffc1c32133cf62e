package queue

import (
	"context"
	"errors"
	"time"
)

// ErrNoKeep is returned by the methods of a Queue that keep or look up
// finished jobs when its store does not implement KeepStore.
var ErrNoKeep = errors.New("queue: the store does not keep finished jobs")

// MaxRetention is the longest a tube may keep its finished jobs.
const MaxRetention = 30 * 24 * time.Hour

// MaxResultLen is the most bytes of a result a finished job keeps
// (KeepStore.Finish).
const MaxResultLen = 64 << 10

// KeepStore is implemented by stores that keep finished jobs (both back
// ends do). A tube's retention (SetRetention) outlives the tube, as its
// limits do. While a tube has a retention, a job of it that ends (Finish,
// or a Delete: a beanstalkd delete too) is not forgotten: it is kept, in
// state Finished, with its history, its last error and the result it was
// finished with, until the retention has passed on the store's clock, and
// then dropped by the store without any other call. A kept job is in no
// count of the tube or the store (StatsTube, Stats) and no reply of a
// reserve, a peek or StatsJob; Lookup and LookupKey find it, and its
// unique key holds while it is kept (NewJob.UniqueKept). A tube lives
// while it keeps jobs, as while a job or a reference holds it.
type KeepStore interface {
	// SetRetention sets how long tube keeps its finished jobs (0: not at
	// all, jobs are deleted when they end). It applies to the jobs that
	// end from then on; jobs kept already keep their deadline.
	SetRetention(ctx context.Context, tube string, d time.Duration) error
	// Retention returns tube's retention, 0 when none is set.
	Retention(ctx context.Context, tube string) (time.Duration, error)
	// Finish ends a job as Delete does (ErrNotFound, ErrReserved when
	// another owner holds it) and, when its tube has a retention, keeps it
	// with result (at most MaxResultLen bytes; nil or empty for none).
	Finish(ctx context.Context, owner string, id ID, result []byte) error
	// Lookup describes the job with the given ID, live (as StatsJob) or
	// kept (State Finished, with its Result, FinishedAt and KeptUntil),
	// or returns ErrNotFound.
	Lookup(ctx context.Context, id ID) (JobStats, error)
	// LookupKey is Lookup of the job of tube that holds the unique key
	// key: the live one, or else the last kept one put with it.
	LookupKey(ctx context.Context, tube, key string) (JobStats, error)
}

// checkKeyOptions validates the windows of a NewJob's key.
func checkKeyOptions(j NewJob) error {
	if len(j.UniqueKey) > 0 && j.UniqueKey[0] == 0 {
		return invalid("UniqueKey", "begins with a NUL byte")
	}
	if j.UniqueFor < 0 {
		return invalid("UniqueFor", "%v, want 0 or more", j.UniqueFor)
	}
	if err := checkDebounce(j); err != nil {
		return err
	}
	if !j.HasKeyOptions() {
		return nil
	}
	if j.UniqueKey == "" {
		return invalid("UniqueKey", "is empty, and UniqueKept, UniqueFor or Debounce needs one")
	}
	if j.UniqueFor < 0 || j.UniqueFor > MaxRetention || j.UniqueFor%time.Millisecond != 0 {
		return invalid("UniqueFor", "%v, want whole milliseconds from 0 to %v", j.UniqueFor, MaxRetention)
	}
	return nil
}

func (q *Queue) keepStore() (KeepStore, error) {
	ks, ok := q.store.(KeepStore)
	if !ok {
		return nil, ErrNoKeep
	}
	return ks, nil
}

// SetRetention sets how long tube keeps its finished jobs (KeepStore), 0
// for not at all. It returns ErrInvalidTube for a bad name, ErrInvalid
// for a retention outside 0 to MaxRetention or finer than a millisecond,
// and ErrNoKeep when the store cannot keep jobs.
func (q *Queue) SetRetention(ctx context.Context, tube string, d time.Duration) error {
	if err := CheckTube(tube); err != nil {
		return err
	}
	if d < 0 || d > MaxRetention {
		return invalid("retention", "%v, want 0 to %v", d, MaxRetention)
	}
	if d%time.Millisecond != 0 {
		return invalid("retention", "%v, want whole milliseconds", d)
	}
	ks, err := q.keepStore()
	if err != nil {
		return err
	}
	return ks.SetRetention(ctx, tube, d)
}

// Retention returns tube's retention, 0 when none is set.
func (q *Queue) Retention(ctx context.Context, tube string) (time.Duration, error) {
	if err := CheckTube(tube); err != nil {
		return 0, err
	}
	ks, err := q.keepStore()
	if err != nil {
		return 0, err
	}
	return ks.Retention(ctx, tube)
}

// Finish ends a job that is ready, delayed, buried or reserved by q's
// owner, as Delete does, and keeps it with result for its tube's retention
// (KeepStore). It returns ErrNotFound when there is no such job,
// ErrReserved when another owner holds it, ErrInvalid for a result over
// MaxResultLen bytes, and ErrNoKeep when the store cannot keep jobs.
func (q *Queue) Finish(ctx context.Context, id ID, result []byte) error {
	if err := checkID(id); err != nil {
		return err
	}
	if len(result) > MaxResultLen {
		return invalid("result", "is %d bytes, want at most %d", len(result), MaxResultLen)
	}
	ks, err := q.keepStore()
	if err != nil {
		return err
	}
	return ks.Finish(ctx, q.owner, id, result)
}

// Lookup describes the job with the given ID, live or kept (State
// Finished), or returns ErrNotFound.
func (q *Queue) Lookup(ctx context.Context, id ID) (JobStats, error) {
	if err := checkID(id); err != nil {
		return JobStats{}, err
	}
	ks, err := q.keepStore()
	if err != nil {
		return JobStats{}, err
	}
	return ks.Lookup(ctx, id)
}

// LookupKey describes the job of tube put with unique key key: the live
// one, or else the last one kept, or returns ErrNotFound. A tube of a
// group ("tube;group", GroupTube) has its own keys.
func (q *Queue) LookupKey(ctx context.Context, tube, key string) (JobStats, error) {
	if err := CheckTube(tube); err != nil {
		return JobStats{}, err
	}
	if key == "" || len(key) > MaxUniqueKey {
		return JobStats{}, invalid("key", "is %d bytes, want 1 to %d", len(key), MaxUniqueKey)
	}
	ks, err := q.keepStore()
	if err != nil {
		return JobStats{}, err
	}
	return ks.LookupKey(ctx, tube, key)
}

// checkDebounce validates a NewJob's debounce (Debounce, MaxWait,
// DuplicateLive); the caller checks the UniqueKey.
func checkDebounce(j NewJob) error {
	if j.Debounce&^(DebounceReplace|DebounceExtend) != 0 {
		return invalid("Debounce", "%d, want a set of DebounceReplace and DebounceExtend", uint8(j.Debounce))
	}
	if j.Debounce == 0 {
		if j.MaxWait != 0 {
			return invalid("MaxWait", "%v without Debounce", j.MaxWait)
		}
		if j.DuplicateLive {
			return invalid("DuplicateLive", "without Debounce")
		}
		return nil
	}
	if err := checkDuration("MaxWait", j.MaxWait); err != nil {
		return err
	}
	if j.MaxWait != 0 && truncMS(j.MaxWait) < truncMS(j.Delay) {
		return invalid("MaxWait", "%v is shorter than Delay %v", j.MaxWait, j.Delay)
	}
	return nil
}
