package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hourglass-io/hourglass/queue"
)

// locate returns the tube of each job ("" when there is no such job), from
// the cache or, for the rest, one script call per tag.
func (s *Store) locate(ctx context.Context, ids []queue.ID) ([]string, error) {
	out, _, err := s.locateCached(ctx, ids)
	return out, err
}

// locateCached is locate, saying which tubes came from the cache.
func (s *Store) locateCached(ctx context.Context, ids []queue.ID) ([]string, []bool, error) {
	out := make([]string, len(ids))
	cached := make([]bool, len(ids))
	missing := map[int][]int{}
	for i, id := range ids {
		if id == 0 || id > queue.MaxID {
			continue
		}
		if t, ok := s.tubes.get(id); ok {
			out[i], cached[i] = t, true
			continue
		}
		missing[tagOf(id)] = append(missing[tagOf(id)], i)
	}
	for tag, idx := range missing {
		args := make([]any, len(idx))
		for n, i := range idx {
			args[n] = idhex(ids[i])
		}
		v, err := s.run(ctx, scripts.locate, tag, "", args...)
		if err != nil {
			return nil, nil, err
		}
		r := replyOf(scripts.locate)
		for n, t := range r.arr(v, len(idx)) {
			if t, ok := r.optStr(t); ok { // false (nil here) when there is no such job
				out[idx[n]] = t
				s.tubes.add(ids[idx[n]], t)
			}
		}
		if err := r.done(); err != nil {
			return nil, nil, err
		}
	}
	return out, cached, nil
}

// withTube runs f on the tube of job id; f reports whether it found the
// job not there (no such job, or in another tube) with the error to return.
// A tube from this process's cache is checked, not trusted: when f finds
// the job not there, the cache forgets id and f runs once more on the tube
// Redis names now, if it is another. So a cache never makes a job that
// exists "not found".
func (s *Store) withTube(ctx context.Context, id queue.ID, f func(tube string) (notThere bool, err error)) error {
	tube, cached := s.tubes.get(id)
	if !cached {
		t, err := s.locateOne(ctx, id)
		if err != nil {
			return err
		}
		tube = t
	}
	notThere, err := f(tube)
	if !notThere || !cached {
		return err
	}
	s.tubes.drop(id)
	fresh, lerr := s.locateOne(ctx, id)
	if lerr != nil {
		return lerr
	}
	if fresh == tube {
		return err
	}
	_, err = f(fresh)
	return err
}

// locateOne returns the tube of one job, or queue.ErrNotFound.
func (s *Store) locateOne(ctx context.Context, id queue.ID) (string, error) {
	t, err := s.locate(ctx, []queue.ID{id})
	if err != nil {
		return "", err
	}
	if t[0] == "" {
		return "", fmt.Errorf("%w: %d", queue.ErrNotFound, id)
	}
	return t[0], nil
}

// Delete implements queue.Store. A job not found in the tube this
// process's cache named is looked for again in the tube Redis names.
func (s *Store) Delete(ctx context.Context, owner string, ids []queue.ID) ([]error, error) {
	out, cached, err := s.delete(ctx, owner, ids)
	if err != nil {
		return nil, err
	}
	var again []int
	for i, e := range out {
		if cached[i] && errors.Is(e, queue.ErrNotFound) {
			s.tubes.drop(ids[i])
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return out, nil
	}
	retry := make([]queue.ID, len(again))
	for n, i := range again {
		retry[n] = ids[i]
	}
	errs, _, err := s.delete(ctx, owner, retry)
	if err != nil {
		return nil, err
	}
	for n, i := range again {
		out[i] = errs[n]
	}
	return out, nil
}

// delete deletes jobs in the tubes locate names, and says which came from
// the cache.
func (s *Store) delete(ctx context.Context, owner string, ids []queue.ID) ([]error, []bool, error) {
	out := make([]error, len(ids))
	tubes, cached, err := s.locateCached(ctx, ids)
	if err != nil {
		return nil, nil, err
	}
	type key struct {
		tag  int
		tube string
	}
	groups := map[key][]int{}
	var order []key
	for i, id := range ids {
		if tubes[i] == "" {
			out[i] = queue.ErrNotFound
			continue
		}
		k := key{tagOf(id), tubes[i]}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	for _, k := range order {
		idx := groups[k]
		args := make([]any, 0, 4+len(idx))
		args = append(args, k.tube, 1, owner, len(idx))
		for _, i := range idx {
			args = append(args, idhex(ids[i]))
		}
		v, err := s.run(ctx, scripts.delete, k.tag, k.tube, args...)
		if err != nil {
			return nil, nil, err
		}
		r := replyOf(scripts.delete)
		codes := r.arr(r.arr(v, 1)[0], len(idx))
		for n, i := range idx {
			code := r.int(codes[n])
			if out[i] = deleteOutcome(code); out[i] == nil {
				s.held.ended(owner, ids[i])
			}
			if code == 2 {
				s.keep.noteAsync(ctx, k.tag)
			}
		}
		if err := r.done(); err != nil {
			return nil, nil, err
		}
	}
	return out, cached, nil
}

// codeErr turns the status of a by-ID script into an error.
func codeErr(code int64, id queue.ID) error {
	switch code {
	case 1:
		return nil
	case 0, -2:
		return fmt.Errorf("%w: %d", queue.ErrNotFound, id)
	case -1:
		return fmt.Errorf("%w: %d", queue.ErrNotReserved, id)
	case -3:
		return fmt.Errorf("%w: %d", queue.ErrNotKickable, id)
	}
	return fmt.Errorf("redisstore: unexpected script status %d", code)
}

// owned runs release or bury: scripts whose ARGV are now, owner, tube, id, extra...
func (s *Store) owned(ctx context.Context, sc *op, owner string, id queue.ID, extra ...any) error {
	return s.withTube(ctx, id, func(tube string) (bool, error) {
		code, err := s.status(ctx, sc, tagOf(id), tube, append([]any{owner, tube, idhex(id)}, extra...)...)
		if err != nil {
			return false, err
		}
		if code == 1 {
			s.held.ended(owner, id)
		}
		return code == 0 || code == -2, codeErr(code, id)
	})
}

// Release implements queue.Store.
func (s *Store) Release(ctx context.Context, owner string, id queue.ID, pri int64, delay time.Duration, reason string) error {
	return s.owned(ctx, scripts.release, owner, id, pri, ms(delay), reason)
}

// Bury implements queue.Store.
func (s *Store) Bury(ctx context.Context, owner string, id queue.ID, pri int64, reason string) error {
	return s.owned(ctx, scripts.bury, owner, id, pri, reason)
}

// Touch implements queue.Store.
func (s *Store) Touch(ctx context.Context, owner string, id queue.ID) (time.Duration, error) {
	var left time.Duration
	err := s.withTube(ctx, id, func(tube string) (bool, error) {
		v, err := s.run(ctx, scripts.touch, tagOf(id), tube, owner, tube, idhex(id))
		if err != nil {
			return false, err
		}
		r := replyOf(scripts.touch)
		a := r.arr(v, 1)
		code := r.int(a[0])
		if code == 1 {
			left = time.Duration(r.int(r.arr(a, 2)[1])) * time.Millisecond
		}
		if err := r.done(); err != nil {
			return false, err
		}
		return code == 0 || code == -2, codeErr(code, id)
	})
	return left, err
}

// Reservations implements queue.Store: one call per tag that may hold
// owner's reservations (see heldTags), in one pipeline, each reading the
// reserved sets of its tag's tubes and the owners their jobs' records name.
func (s *Store) Reservations(ctx context.Context, owner string) ([]queue.Reservation, error) {
	tags, gen := s.held.tags(owner)
	if len(tags) == 0 {
		if err := s.r.open(queueFamily); err != nil {
			return nil, err
		}
		return []queue.Reservation{}, nil
	}
	calls := make([]call, len(tags))
	for i, tag := range tags {
		calls[i] = call{op: scripts.reservations, keys: s.k.tagKeys(tag), args: []any{s.now(), owner}}
	}
	var replies []any
	var err error
	if len(calls) == 1 {
		// The common case, an owner of a session (a beanstalkd connection
		// closing): through the shared batches, with other callers' calls.
		var v any
		v, err = s.r.run(ctx, calls[0])
		replies = []any{v}
	} else {
		replies, err = s.runMany(ctx, calls)
	}
	if err != nil {
		return nil, err
	}
	out := []queue.Reservation{}
	r := replyOf(scripts.reservations)
	for _, v := range replies {
		a := r.arr(v, 0)
		for i := 0; i+1 < len(a); i += 2 {
			out = append(out, queue.Reservation{ID: queue.ID(r.int(a[i])), Left: time.Duration(r.int(a[i+1])) * time.Millisecond})
		}
	}
	if err := r.done(); err != nil {
		return nil, err
	}
	s.held.found(owner, gen, out)
	return out, nil
}

// Unreserve implements queue.Store. The owner is going away: Reservations
// stops asking the tags it reserved in (see heldTags).
func (s *Store) Unreserve(ctx context.Context, owner string, ids []queue.ID) (int, error) {
	defer s.held.drop(owner)
	tubes, err := s.locate(ctx, ids)
	if err != nil {
		return 0, err
	}
	type key struct {
		tag  int
		tube string
	}
	groups := map[key][]any{}
	for i, id := range ids {
		if tubes[i] != "" {
			k := key{tagOf(id), tubes[i]}
			groups[k] = append(groups[k], idhex(id))
		}
	}
	total := 0
	for k, hs := range groups {
		n, err := s.status(ctx, scripts.unreserve, k.tag, k.tube, append([]any{owner, k.tube}, hs...)...)
		if err != nil {
			return total, err
		}
		total += int(n)
	}
	return total, nil
}

// ReserveJob implements queue.Store.
func (s *Store) ReserveJob(ctx context.Context, owner string, id queue.ID) (queue.Job, error) {
	var j queue.Job
	err := s.withTube(ctx, id, func(tube string) (bool, error) {
		s.held.begin(owner, tagOf(id))
		var got []queue.ID
		code, err := func() (int64, error) {
			v, err := s.run(ctx, scripts.reserveJob, tagOf(id), tube, owner, tube, idhex(id))
			if err != nil {
				return 0, err
			}
			r := replyOf(scripts.reserveJob)
			a := r.arr(v, 1)
			code := r.int(a[0])
			if err := r.done(); err != nil {
				return 0, err
			}
			if code == 1 {
				j = parseJob(r, r.arr(a, 2)[1])
				if err := r.done(); err != nil {
					return 0, err
				}
				got = []queue.ID{id}
			}
			return code, nil
		}()
		s.held.end(owner, tagOf(id), got, err)
		if err != nil {
			return false, err
		}
		switch code {
		case 1:
			return false, nil
		case -1:
			return false, fmt.Errorf("%w: %d", queue.ErrReserved, id)
		}
		return true, fmt.Errorf("%w: %d", queue.ErrNotFound, id)
	})
	return j, err
}

// Kick implements queue.Store. A partitioned tube is kicked partition by
// partition until n jobs have moved.
func (s *Store) Kick(ctx context.Context, tube string, n int) (int, error) {
	k := s.partitions(tube)
	total := 0
	for p := 0; p < k && total < n; p++ {
		tag := tubeTag(tube, p, k)
		for total < n {
			want := min(n-total, maxBatch)
			n, err := s.status(ctx, scripts.kick, tag, tube, tube, want)
			if err != nil {
				return total, err
			}
			got := int(n)
			total += got
			if got < want {
				break
			}
		}
	}
	return total, nil
}

// KickJob implements queue.Store.
func (s *Store) KickJob(ctx context.Context, id queue.ID) error {
	return s.withTube(ctx, id, func(tube string) (bool, error) {
		code, err := s.status(ctx, scripts.kickJob, tagOf(id), tube, tube, idhex(id))
		if err != nil {
			return false, err
		}
		return code == 0 || code == -2, codeErr(code, id)
	})
}
