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
	for _, c := range queueCases() {
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

// queueCases are the cases of Queue, in the order they run: first those
// of the contract every store keeps, then those of the optional
// interfaces, each group's in the file named beside it.
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
		{"ErrorHistory", testErrorHistory},
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

		// Tube limits (queue.LimitStore; cases_limits.go).
		{"LimitsSetAndClear", testLimitsSetAndClear},
		{"LimitCap", testLimitCap},
		{"LimitRate", testLimitRate},
		{"LimitRateWindow", testLimitRateWindow},
		{"LimitOutlivesTube", testLimitOutlivesTube},
		{"LimitSkipsTube", testLimitSkipsTube},
		{"LimitWakes", testLimitWakes},

		// Groups (docs/tube-limits.md, "Groups"; cases_groups.go): jobs put
		// with a group key into the tube "tube;group", served in turn by a
		// reserve of the tube, each group held to the tube's group template.
		{"GroupRotation", testGroupRotation},
		{"GroupFairness", testGroupFairness},
		{"GroupCap", testGroupCap},
		{"GroupRate", testGroupRate},
		{"GroupDelayedReleased", testGroupDelayedReleased},
		{"GroupWakes", testGroupWakes},
		{"GroupBadInput", testGroupBadInput},

		// Finished jobs kept by their tube's retention (queue.KeepStore;
		// cases_retain.go).
		{"RetentionSetting", testRetentionSetting},
		{"FinishKeeps", testFinishKeeps},
		{"DeleteKeeps", testDeleteKeeps},
		{"FinishWithoutRetention", testFinishWithoutRetention},
		{"FinishErrors", testFinishErrors},
		{"KeptKeyNewJob", testKeptKeyNewJob},
		{"KeyWindow", testKeyWindow},
		{"UniqueKept", testUniqueKept},
		{"DuplicateState", testDuplicateState},
		{"KeyOptionsBadInput", testKeyOptionsBadInput},
		{"KeptNotAWake", testKeptNotAWake},
		{"ListKept", testListKept},

		// Cancels (queue.CancelStore; cases_cancel.go).
		{"CancelEveryState", testCancelEveryState},
		{"CancelTimedOut", testCancelTimedOut},
		{"CancelFreesTubeAndKey", testCancelFreesTubeAndKey},
		{"CancelListen", testCancelListen},
		{"CancelWorker", testCancelWorker},
		{"CancelKept", testCancelKept},

		// A put's debounce (queue.NewJob.Debounce, MaxWait, DuplicateLive;
		// cases_debounce.go).
		{"Debounce", testDebounce},
		{"DebounceMaxWait", testDebounceMaxWait},
		{"DebounceExtend", testDebounceExtend},
		{"DebounceReplace", testDebounceReplace},
		{"DebounceLive", testDebounceLive},
		{"DebounceBatch", testDebounceBatch},
		{"DebounceWindowAndKept", testDebounceWindowAndKept},
		{"DebounceBadInput", testDebounceBadInput},
	}
}
