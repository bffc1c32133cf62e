package queue

// LockHub takes the lock of q's hub that every reserve and put of the
// Queue would share while a tube is subscribed, for a test to show which
// calls need it; the returned function releases it.
func LockHub(q *Queue) (unlock func()) {
	q.hub.smu.Lock()
	return q.hub.smu.Unlock
}

// HubSubscriptions is the number of tubes q's hub holds a subscription to.
func HubSubscriptions(q *Queue) int64 { return q.hub.subs.Load() }
