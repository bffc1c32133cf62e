package httpapi

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/hourglass-io/hourglass/lock"
	"github.com/prometheus/client_golang/prometheus"
)

// Locks and semaphores over HTTP:
//
//	POST /v1/locks/{name}/obtain    obtain (wait_ms 0: try once; else a long poll of up to wait_ms, cut to MaxWait)
//	POST /v1/locks/{name}/release   release (Hourglass-Lock-Token)
//	POST /v1/locks/{name}/refresh   set the lease to ttl_ms from now (Hourglass-Lock-Token)
//	GET  /v1/locks/{name}/ttl       the lease's remainder (Hourglass-Lock-Token)
//
// A grant's reply carries the owner token and the fencing token. No one
// renews an HTTP lease: the holder refreshes it before ttl_ms runs out, or
// loses the lock. The server never renews a lease for a client.

// locksPrimitive serves locks and semaphores under /v1/locks.
var locksPrimitive = primitive{
	name:    "locks",
	pkg:     "lock",
	enabled: func(s *Server) bool { return s.Locks != nil },
	routes: func(s *Server) []route {
		s.locks.setup(s)
		return []route{
			{"POST", "/v1/locks/{name}/obtain", "obtain", s.lockObtain},
			{"POST", "/v1/locks/{name}/release", "release", s.lockRelease},
			{"POST", "/v1/locks/{name}/refresh", "refresh", s.lockRefresh},
			{"GET", "/v1/locks/{name}/ttl", "ttl", s.lockTTL},
		}
	},
	panel: locksPanel,
}

// Error codes of the locks (see the Code constants).
const (
	// CodeNotObtained (409): the lock, or every slot of the semaphore, was
	// still held by others when the obtain's wait ended.
	CodeNotObtained = "not_obtained"
	// CodeNotHeld (409): release, refresh or ttl with a token that holds
	// no live lease of the name: another owner's, a released one, or one
	// whose lease ran out.
	CodeNotHeld = "not_held"
)

// LockTokenHeader carries the owner token of a grant on release, refresh
// and ttl.
const LockTokenHeader = "Hourglass-Lock-Token"

// maxLockToken bounds the length of an owner token a request may carry.
const maxLockToken = 128

// maxRecentLocks bounds the grants the dashboard lists: those this server
// made over HTTP, the most recent ones.
const maxRecentLocks = 50

// lockServer is the state of the locks' routes in a Server.
type lockServer struct {
	once     sync.Once
	grants   *prometheus.CounterVec
	releases *prometheus.CounterVec
	wait     *prometheus.HistogramVec

	mu     sync.Mutex
	recent []heldLock // grants made over HTTP, oldest first
}

// heldLock is a grant this server made over HTTP, for the dashboard.
type heldLock struct {
	name    string
	token   string
	fence   uint64
	limit   int
	granted time.Time
}

// setup registers the metrics, once.
func (ls *lockServer) setup(s *Server) {
	ls.once.Do(func() {
		reg := s.Metrics.Registry()
		ls.grants = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricLockGrants,
			Help: "Lock and semaphore obtains over HTTP, by mode (try, wait, fair) and result (granted, refused, error)."},
			[]string{"mode", "result"}))
		ls.releases = register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricLockReleases,
			Help: "Lock and semaphore releases over HTTP, by result (released, not_held, error)."},
			[]string{"result"}))
		ls.wait = register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: MetricLockWait,
			Help:    "Seconds an obtain over HTTP took, its wait included, by mode and result.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}},
			[]string{"mode", "result"}))
	})
}

func (ls *lockServer) remember(l *lock.Lock, limit int) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if len(ls.recent) == maxRecentLocks {
		ls.recent = slices.Delete(ls.recent, 0, 1)
	}
	ls.recent = append(ls.recent, heldLock{name: l.Name(), token: l.Token(), fence: l.Fence(), limit: limit, granted: time.Now()})
}

func (ls *lockServer) forget(token string) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.recent = slices.DeleteFunc(ls.recent, func(h heldLock) bool { return h.token == token })
}

// held returns err, the outcome of a call on token's grant, having
// forgotten the grant when err says it is not held (released elsewhere,
// or its lease ran out).
func (ls *lockServer) held(token string, err error) error {
	if errors.Is(err, lock.ErrNotHeld) {
		ls.forget(token)
	}
	return err
}

// LockObtainRequest is the JSON body of an obtain (optional: the defaults
// are a lock, a lease of 15 s, no wait).
type LockObtainRequest struct {
	// TTLMS is the lease: the store drops the hold this long after the
	// grant unless the holder refreshes it. Default 15000 (lock.DefaultTTL).
	TTLMS int64 `json:"ttl_ms"`
	// WaitMS is how long to wait while the lock is held: 0 tries once. It
	// is cut to the server's maximum wait.
	WaitMS int64 `json:"wait_ms"`
	// Fair makes a waiting obtain wait in line: grants go to waiters in
	// the order they arrived, across servers. A place in line lasts while
	// the request waits.
	Fair bool `json:"fair"`
	// Limit makes the name a semaphore of that many slots (default 1, a
	// lock). Every user of a name must give the same limit.
	Limit int `json:"limit"`
}

// LockGrant is the reply to an obtain that got the lock.
type LockGrant struct {
	Name string `json:"name"`
	// Token is the owner token, for release, refresh and ttl (in the
	// Hourglass-Lock-Token header).
	Token string `json:"token"`
	// Fence is the fencing token: larger than every earlier grant's of
	// the name. Pass it to the resource the lock protects.
	Fence uint64 `json:"fence"`
	Limit int    `json:"limit"`
	// TTLMS is the lease granted: refresh before it runs out.
	TTLMS int64 `json:"ttl_ms"`
	// WaitedMS is how long the obtain took.
	WaitedMS int64 `json:"waited_ms"`
}

// LockRefreshRequest is the JSON body of a refresh.
type LockRefreshRequest struct {
	// TTLMS is the new lease, from now. Required.
	TTLMS int64 `json:"ttl_ms"`
}

// LockTTL is the reply to a ttl.
type LockTTL struct {
	// TTLMS is how long the lease has left on the store's clock.
	TTLMS int64 `json:"ttl_ms"`
}

// lockMS converts a lease in milliseconds, refusing what lock refuses.
func lockMS(n int64, field string) (time.Duration, error) {
	if n < lock.MinTTL.Milliseconds() || n > lock.MaxTTL.Milliseconds() {
		return 0, badField(field, "is %d, want %d to %d", n, lock.MinTTL.Milliseconds(), lock.MaxTTL.Milliseconds())
	}
	return time.Duration(n) * time.Millisecond, nil
}

// notObtained is the reply of an obtain that found the lock held: at once,
// or for as long as it could wait.
func notObtained(limit int, wait time.Duration) error {
	held := "the lock is held"
	if limit > 1 {
		held = sprintf("the semaphore's %d leases are held", limit)
	}
	if wait <= 0 {
		return apiError{http.StatusConflict, CodeNotObtained, "not obtained: " + held + " (give wait_ms to wait for it)", 0}
	}
	return apiError{http.StatusConflict, CodeNotObtained, sprintf("not obtained: %s, and was still held after waiting %d ms", held, wait.Milliseconds()), 0}
}

func (s *Server) lockObtain(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	var req LockObtainRequest
	if err := readJSON(w, r, maxSmallBody, &req); err != nil {
		return err
	}
	if req.TTLMS == 0 {
		req.TTLMS = lock.DefaultTTL.Milliseconds()
	}
	ttl, err := lockMS(req.TTLMS, "ttl_ms")
	if err != nil {
		return err
	}
	if req.WaitMS < 0 {
		return badField("wait_ms", "is %d, want 0 or more", req.WaitMS)
	}
	if req.Limit == 0 {
		req.Limit = 1
	}
	// A TTL is always given, and AutoRenew never set: the server renews
	// no lease; the holder refreshes it.
	opts := &lock.ObtainOptions{TTL: ttl, Fair: req.Fair}
	sem := s.Locks.NewSemaphore(name, req.Limit)
	wait := min(ms(req.WaitMS), s.maxWait())
	mode := "try"
	start := time.Now()
	var l *lock.Lock
	if wait <= 0 {
		l, err = sem.TryAcquire(r.Context(), opts)
	} else {
		ctx, done, werr := s.longPoll(r, true)
		if werr != nil {
			return werr
		}
		defer done()
		mode = "wait"
		if req.Fair {
			mode = "fair"
		}
		ctx, cancelWait := context.WithTimeout(ctx, wait)
		defer cancelWait()
		l, err = sem.Acquire(ctx, opts)
	}
	took := time.Since(start)
	if isBadInput(err) {
		return err
	}
	result := lockResult(err, lock.ErrNotObtained, "granted", "refused")
	s.locks.grants.WithLabelValues(mode, result).Inc()
	s.locks.wait.WithLabelValues(mode, result).Observe(took.Seconds())
	if err != nil {
		if s.stopped(r) {
			return shuttingDown
		}
		if errors.Is(err, lock.ErrNotObtained) {
			return notObtained(req.Limit, wait)
		}
		return err
	}
	s.locks.remember(l, req.Limit)
	writeJSON(w, http.StatusOK, LockGrant{Name: name, Token: l.Token(), Fence: l.Fence(), Limit: req.Limit,
		TTLMS: ttl.Milliseconds(), WaitedMS: took.Milliseconds()})
	return nil
}

// lockResult is the metrics label "result" of a call that ended with err:
// done when it succeeded, refused when err is the call's refusal (a lock
// not obtained, a grant not held), "error" otherwise.
func lockResult(err, refusal error, done, refused string) string {
	switch {
	case err == nil:
		return done
	case errors.Is(err, refusal):
		return refused
	}
	return "error"
}

// lockTarget reads the name and owner token of a call on a grant.
func lockTarget(r *http.Request) (name, token string, err error) {
	name = r.PathValue("name")
	if name == "" || len(name) > lock.MaxNameLen {
		return "", "", badRequest("lock name of %d bytes, want 1 to %d", len(name), lock.MaxNameLen)
	}
	token = r.Header.Get(LockTokenHeader)
	if token == "" {
		return "", "", badRequest("the %s header is required: the token obtain returned", LockTokenHeader)
	}
	if len(token) > maxLockToken {
		return "", "", badRequest("%s of %d bytes, want at most %d", LockTokenHeader, len(token), maxLockToken)
	}
	return name, token, nil
}

func (s *Server) lockRelease(w http.ResponseWriter, r *http.Request) error {
	name, token, err := lockTarget(r)
	if err != nil {
		return err
	}
	err = s.Locks.Release(r.Context(), name, token)
	result := lockResult(err, lock.ErrNotHeld, "released", "not_held")
	s.locks.releases.WithLabelValues(result).Inc()
	if err == nil || errors.Is(err, lock.ErrNotHeld) {
		s.locks.forget(token)
	}
	return noContent(w, err)
}

func (s *Server) lockRefresh(w http.ResponseWriter, r *http.Request) error {
	name, token, err := lockTarget(r)
	if err != nil {
		return err
	}
	var req LockRefreshRequest
	if err := readJSON(w, r, maxSmallBody, &req); err != nil {
		return err
	}
	ttl, err := lockMS(req.TTLMS, "ttl_ms")
	if err != nil {
		return err
	}
	return noContent(w, s.locks.held(token, s.Locks.Refresh(r.Context(), name, token, ttl)))
}

func (s *Server) lockTTL(w http.ResponseWriter, r *http.Request) error {
	name, token, err := lockTarget(r)
	if err != nil {
		return err
	}
	d, err := s.Locks.TTL(r.Context(), name, token)
	if err := s.locks.held(token, err); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, LockTTL{TTLMS: d.Milliseconds()})
	return nil
}

// locksPanelData is what the locks panel shows.
type locksPanelData struct {
	Held []panelLock
	Max  int
}

type panelLock struct {
	Name        string
	TokenPrefix string
	Fence       uint64
	Limit       int
	LeftMS      int64
	HeldMS      int64
}

// locksPanel lists the grants this server made over HTTP that are still
// held, with the remainder of each lease as the store tells it. A
// lock.Store cannot list its locks, so grants made by other servers or by
// Go programs are not shown; the panel says so.
func locksPanel(ctx context.Context, s *Server) (any, error) {
	s.locks.mu.Lock()
	recent := slices.Clone(s.locks.recent)
	s.locks.mu.Unlock()
	d := locksPanelData{Max: maxRecentLocks}
	for _, h := range recent {
		left, err := s.Locks.TTL(ctx, h.name, h.token)
		if errors.Is(err, lock.ErrNotHeld) {
			s.locks.forget(h.token) // released elsewhere, or its lease ran out
			continue
		}
		if err != nil {
			return nil, err
		}
		prefix := h.token
		if len(prefix) > 6 {
			prefix = prefix[:6] + "…"
		}
		d.Held = append(d.Held, panelLock{Name: h.name, TokenPrefix: prefix, Fence: h.fence, Limit: h.limit,
			LeftMS: left.Milliseconds(), HeldMS: time.Since(h.granted).Milliseconds()})
	}
	slices.SortStableFunc(d.Held, func(a, b panelLock) int { return cmp.Compare(a.Name, b.Name) })
	return d, nil
}
