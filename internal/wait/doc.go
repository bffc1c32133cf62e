// Package wait is the one way hourglass waits for a change in a store: a
// queue's reservers (package queue's hub), a lock's waiters, an expiring
// hash's consumers and Sweepers, a schedule's Run and the HTTP API's long
// polls all wait through a Waiter.
//
// # Notifiers
//
// A store that can tell a process about changes implements, for each
// primitive, one method shape:
//
//	Listen(ctx context.Context, topic string, wake func(topic string)) (stop func(), err error)
//
// Listen returns once the subscription is in effect: a change after it
// returns is never missed. wake must not block; it is called, from any
// goroutine, soon after a change of the topic (in any process, for a
// shared store), may be called spuriously, and, where a store can tell
// (Redis's sharded subscriptions), once more after it may have lost
// wake-ups in a reconnect. stop ends the subscription. Each primitive names its topics and its interface: a
// queue.Notifier's topic is a tube, a lock.Notifier's a lock name, a
// ttlhash.Notifier's TopicEvents, TopicDue or an event shard's topic, a
// schedule.Notifier's TopicDue. Listen fails in one shape too: a topic the
// store does not announce with the primitive's ErrNoTopic (ttlhash's,
// schedule's: the primitives whose topics are a fixed set), a closed store
// with the primitive's ErrClosed.
//
// # The loop
//
// A Waiter holds at most one pending wake-up. Wake leaves one (wake-ups
// that come while the waiter is busy are coalesced into one), and Wait
// returns at once while one is pending. So a caller listens first, then
// checks its condition and waits, in a loop:
//
//	w := wait.New()
//	stop, err := n.Listen(ctx, topic, w.WakeTopic)
//	...
//	defer stop()
//	for {
//		if done := check(); done {
//			return
//		}
//		if _, err := w.Wait(ctx, deadline, poll); err != nil {
//			return err // ctx ended
//		}
//	}
//
// A change between a check and the Wait that follows is not lost: its
// wake-up is pending, and the Wait returns at once. Wait returns why it
// returned (Woken, Polled, Deadline); whatever the reason, the caller
// checks again.
//
// The deadline (optional) is a time the caller must look again at: the end
// of its own wait, or the next due time the store reported (a delayed
// job, a lease's end, the next field deadline or tick). The poll bound
// (optional) is for stores without a notifier, or, where a package says
// so, a safety net against wake-ups lost in a reconnect; a store with a
// notifier is otherwise never polled.
//
// A Waiter is safe for concurrent use by any number of wakers and one
// goroutine in Wait.
//
// # Many waiters of one process
//
// When many goroutines of a process wait on the topics of one notifier
// (a Queue's blocking reserves on tubes, a lock client's waiters on lock
// names, the consumers of an expiring hash's group on TopicEvents), they
// wait in one Line: it shares one subscription per topic among them and
// gives a wake-up of a topic to its oldest waiter with none pending (or to
// every waiter that entered with all set), so one change does not set
// every waiter racing. Enter returns a Place, whose Waiter is waited on in
// the loop above; Leave passes on a wake-up left unused. A waiter that
// stands in the Line only while it waits, not while it works (a hash's
// consumer: a wake-up should reach a consumer that is free to read), holds
// its topics with Hold between its waits, so that the subscription stays
// in effect.
package wait
