package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/hourglass-io/hourglass/queue"
)

// NewQueueStore returns a fresh, empty store whose clock is now (a back end
// may keep only milliseconds). It registers its own cleanup with t.
type NewQueueStore func(t *testing.T, now func() time.Time) queue.Store

// Checker is implemented by stores that can verify their internal
// consistency (every job in exactly one state index, counters equal to what
// is stored). When the store implements it, the suite calls it after every
// subtest.
type Checker interface {
	// CheckInvariants returns an error describing the first inconsistency
	// it finds, or nil.
	CheckInvariants(ctx context.Context) error
}

// Queue runs the conformance suite for the queue.Store contract against
// stores made by newStore, one fresh store per subtest (t.Run per case).
// Most cases drive the store through queue.New(store, nil), as users do;
// the rest call the Store where the Queue hides something (Reserve's Next
// and Delete, Unreserve, Close).
func Queue(t *testing.T, newStore NewQueueStore) {
	s := &suite{newStore: newStore}
	for _, c := range append(append(append(append(append(queueCases(), limitCases()...), groupCases()...), retainCases()...), cancelCases()...), debounceCases()...) {
		t.Run(c.name, func(t *testing.T) { c.run(t, s) })
	}
}

// suite carries what every case needs to make its environment.
type suite struct {
	newStore NewQueueStore
}

type queueCase struct {
	name string
	run  func(t *testing.T, s *suite)
}

func queueCases() []queueCase {
	return []queueCase{
		{"PutReserveDelete", testPutReserveDelete},
		{"Bodies", testBodies},
		{"TubeNames", testTubeNames},
		{"IDs", testIDs},
		{"PutMany", testPutMany},
		{"Ordering", testOrdering},
		{"ReleaseKeepsPlace", testReleaseKeepsPlace},
		{"MultipleTubes", testMultipleTubes},
		{"ReserveN", testReserveN},
		{"UniqueKey", testUniqueKey},
		{"TraceContext", testTraceContext},
		{"Delayed", testDelayed},
		{"PeekDelayedSoonest", testPeekDelayedSoonest},
		{"TTRExpiry", testTTRExpiry},
		{"Touch", testTouch},
		{"Reservations", testReservations},
		{"DueTransitions", testDueTransitions},
		{"Release", testRelease},
		{"Bury", testBury},
		{"KeepPriority", testKeepPriority},
		{"Kick", testKick},
		{"KickJob", testKickJob},
		{"ReserveJob", testReserveJob},
		{"Delete", testDelete},
		{"DeleteMany", testDeleteMany},
		{"PeekByID", testPeekByID},
		{"PeekState", testPeekState},
		{"PeekStateN", testPeekStateN},
		{"StatsJob", testStatsJob},
		{"HistoryReasons", testHistoryReasons},
		{"ReservedBy", testReservedBy},
		{"CounterLog", testCounterLog},
		{"HistoryReasonBound", testHistoryReasonBound},
		{"StatsTube", testStatsTube},
		{"StatsTubeUnknown", testStatsTubeUnknown},
		{"Stats", testStats},
		{"PauseTube", testPauseTube},
		{"Tubes", testTubes},
		{"Hold", testHold},
		{"HoldSessions", testHoldSessions},
		{"SessionsReap", testSessionsReap},
		{"Abandon", testAbandon},
		{"Unreserve", testUnreserve},
		{"StoreReserveNext", testStoreReserveNext},
		{"StoreReserveDelete", testStoreReserveDelete},
		{"BlockingReserve", testBlockingReserve},
		{"ReserveTimeout", testReserveTimeout},
		{"ReserveContext", testReserveContext},
		{"Notifier", testNotifier},
		{"BadInput", testBadInput},
		{"Concurrency", testConcurrency},
		{"Close", testClose},
	}
}
