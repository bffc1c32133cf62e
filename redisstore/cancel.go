package redisstore

import (
	"context"
	"strconv"
	"strings"

	"github.com/hourglass-io/hourglass/queue"
)

// Cancel implements queue.CancelStore: one call of cancel.lua on the job's
// tube, which removes the job, counts the cancel in the tube's cn and, for
// a reserved job, publishes "<id> <reason>" on the tag's cancel channel.
func (s *Store) Cancel(ctx context.Context, id queue.ID, reason string) (queue.State, error) {
	var was queue.State
	err := s.withTube(ctx, id, func(tube string) (bool, error) {
		code, err := s.status(ctx, scripts.cancel, tagOf(id), tube, tube, idhex(id), reason)
		if err != nil {
			return false, err
		}
		if code >= 1 && code <= 4 {
			was = queue.State(code)
			s.tubes.drop(id)
			return false, nil
		}
		return code == 0 || code == -2, codeErr(code, id)
	})
	return was, err
}

// ListenCancel implements queue.CancelStore: a subscription to the cancel
// channel of each tag of tube's partitions, on the connection the tag's
// wake-ups use (the notifier's queue range). The channel is the tag's, so
// cancelled also hears of the cancels of other tubes on those tags; after
// a reconnect it is called with 0.
func (s *Store) ListenCancel(ctx context.Context, tube string, cancelled func(id queue.ID, reason string)) (func(), error) {
	tube, _ = queue.SplitGroup(tube) // a group's jobs are on its tube's tags
	k := s.partitions(tube)
	h := func(payload string) {
		id, reason, ok := parseCancel(payload)
		if !ok {
			return
		}
		cancelled(id, reason)
	}
	var subs []channelSub
	seen := map[int]bool{}
	for p := 0; p < k; p++ {
		tag := tubeTag(tube, p, k)
		if seen[tag] {
			continue
		}
		seen[tag] = true
		subs = append(subs, channelSub{i: tag, ch: s.k.cancels(tag), topic: withPayload})
	}
	return s.notify.addAll(ctx, queueFamily, subs, &h)
}

// parseCancel reads a message of a cancel channel: "<id> <reason>" (the id
// in hex, as the job's fields name it), or ""
// after a resubscription (id 0: cancels may have been missed).
func parseCancel(payload string) (queue.ID, string, bool) {
	if payload == "" {
		return 0, "", true
	}
	idText, reason, _ := strings.Cut(payload, " ")
	id, err := strconv.ParseUint(idText, 16, 64)
	if err != nil || id == 0 || id > uint64(queue.MaxID) {
		return 0, "", false
	}
	return queue.ID(id), reason, true
}
