package redisstore

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/hourglass-io/hourglass/queue"
)

var listKeptScript = operation("listkept")

// ListKept implements queue.KeptLister: listkept.lua on each partition of
// tube (a page of up to limit jobs from each), merged in the list's
// order. The partitions are read one after another, so a tube of several
// partitions is not listed at one instant.
func (s *Store) ListKept(ctx context.Context, tube string, from queue.KeptCursor, limit int) ([]queue.KeptJob, error) {
	if limit <= 0 {
		return nil, nil
	}
	fromMS, fromID := "", ""
	if !from.IsZero() {
		fromMS, fromID = strconv.FormatInt(from.Until.UnixMilli(), 10), idhex(from.ID)
	}
	k := s.partitions(tube)
	var out []queue.KeptJob
	for p := 0; p < k; p++ {
		v, err := s.run(ctx, listKeptScript, tubeTag(tube, p, k), tube, tube, fromMS, fromID, limit, queue.KeptPreviewLen)
		if err != nil {
			return nil, err
		}
		r := replyOf(listKeptScript)
		a := r.arr(v, 0)
		if len(a)%8 != 0 {
			return nil, fmt.Errorf("redisstore: listkept replied %d elements, want a multiple of 8", len(a))
		}
		for i := 0; i+8 <= len(a); i += 8 {
			idh := r.str(a[i])
			id, perr := strconv.ParseUint(idh, 16, 64)
			j := queue.KeptJob{ID: queue.ID(id), UniqueKey: r.str(a[i+1]), Cancelled: r.int(a[i+2]) == 2,
				FinishedAt: timeMS(r.int(a[i+3])), KeptUntil: timeMS(r.int(a[i+4])), ResultLen: int(r.int(a[i+6])),
				LastError: r.str(a[i+7])}
			if res := r.str(a[i+5]); res != "" {
				j.Result = []byte(res)
			}
			if perr != nil {
				return nil, fmt.Errorf("redisstore: listkept named job %q", idh)
			}
			out = append(out, j)
		}
		if err := r.done(); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b queue.KeptJob) int {
		if c := b.KeptUntil.Compare(a.KeptUntil); c != 0 {
			return c
		}
		if a.ID > b.ID {
			return -1
		}
		return 1
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
