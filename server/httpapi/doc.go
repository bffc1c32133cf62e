// Package httpapi implements hourglass's HTTP/JSON API, its live dashboard
// and its Prometheus metrics, over a queue.Queue.
//
// A Server follows http.Server: Serve(l), ServeTLS(l, cert, key),
// Shutdown(ctx), Close; or mount Handler() on a mux of your own. Its zero
// value with Queue set is ready to use; it is safe for concurrent use.
//
// # Routes
//
//	POST   /v1/tubes/{tube}/jobs           put (JSON, or the raw body as application/octet-stream)
//	POST   /v1/reserve                     reserve, a long poll of up to timeout_ms (cut to MaxWait)
//	GET    /v1/jobs/{id}                   peek; /body: the body as it is
//	DELETE /v1/jobs/{id}                   delete
//	POST   /v1/jobs/{id}/release|bury|touch   act on a reservation (Hourglass-Lease)
//	POST   /v1/jobs/{id}/kick              kick one job
//	GET    /v1/jobs/{id}/stats             job statistics
//	GET    /v1/tubes, /v1/tubes/{tube}     tubes; a tube's statistics
//	GET    /v1/tubes/{tube}/peek/{state}   next ready, delayed or buried job
//	POST   /v1/tubes/{tube}/kick|pause     kick up to bound jobs; pause
//	GET    /v1/stats                       store statistics
//	POST   /v1/limits/allow                rate limits: allow now (200) or not (429, Retry-After)
//	POST   /v1/limits/wait                 rate limits: wait for the slot, a long poll (Limiter)
//	GET    /v1/limits                      the named limits (NamedLimits)
//	POST|GET|DELETE /v1/hashes/{hash}/fields   set, get, delete fields (Server.Hashes: hashes.go)
//	GET    /v1/hashes/{hash}[/scan|/ttl]   length; a page of live fields; TTLs
//	POST   /v1/hashes/{hash}/expire|persist   HEXPIRE conditions and codes; HPERSIST
//	GET    /v1/hash-groups                 expiry event statistics
//	POST|DELETE /v1/hash-groups/{group}    create, delete a consumer group
//	POST   /v1/hash-groups/{group}/read|ack   events, a long poll of up to timeout_ms; ack
//	POST   /v1/locks/{name}/obtain         a lock or semaphore slot (with Locks set): try, or a long poll of up to wait_ms
//	POST   /v1/locks/{name}/release|refresh   by the owner token (Hourglass-Lock-Token)
//	GET    /v1/locks/{name}/ttl            the lease's remainder
//	PUT|GET|DELETE /v1/schedules/{name}    set (idempotent), get, delete a schedule (with Schedules set)
//	GET    /v1/schedules                   list schedules in name order (after, limit)
//	POST   /v1/schedules/{name}/pause|resume|trigger   pause, resume; put its job now
//	GET    /v1/schedules/{name}/next       its next n fire times
//	GET    /v1/openapi.json                the OpenAPI 3 document (OpenAPI())
//	GET    /metrics                        Prometheus metrics (Metrics)
//	GET    /healthz                        200 "ok" when the store answers
//	GET    /                               the dashboard
//	GET    /dashboard/panels?view=         its views (tubes, limits, hashes, locks, schedules, store)
//	GET    /dashboard/info|series          its header (StoreKind, uptime), charts of the last hour or day
//	GET    /dashboard/browse|job           its tube view (50 jobs a page by id) and job page
//	POST   /dashboard/tubes/{tube}/delete-buried   up to 1,000 of a tube's buried jobs
//
// The charts' counts are kept in the store (queue.CounterLog), by minute
// for SeriesKeep, shared by every server on it: a goroutine of the
// Server's reads the tubes' counters every 10 s and records those that
// changed, until Shutdown or Close (see docs/http-api.md, "Dashboard").
//
// Durations are whole milliseconds in fields ending in _ms. Bodies are
// base64 in "body_base64" (and text in "body" when valid UTF-8).
//
// # Leases
//
// A reserve returns a lease token with the job. The token is the
// reservation's owner in the store (queue.Queue.WithOwner), so only a call
// carrying it in the Hourglass-Lease header may delete, release, bury or
// touch the job, and any server on the same store honours it. An HTTP
// reservation has no connection whose end could return it: it lasts the
// job's TTR from the reserve, and each touch renews it. A server that stops
// does not return its HTTP reservations; they come back when their TTR
// runs out.
//
// # Locks
//
// With Locks set (a lock.Client, built by the caller as Queue, Hashes and
// Limiter are), obtain grants through it and replies with the owner token
// and the fencing token; release, refresh and ttl act on the lease by the
// token of the Hourglass-Lock-Token header (Client.Release, Refresh, TTL),
// so that any other token gets 409 not_held.
// The server renews no lease: an HTTP holder refreshes its lease itself
// before it runs out.
//
// # Schedules
//
// With Schedules set (a schedule.Client built by the caller), the routes
// manage schedules through it. The Server fires no tick: a Client's Run
// over the same store does (hourglass serve runs that of the very Client
// it gives the Server). Metrics.WatchSchedules counts the fires of such a Client.
//
// # Errors
//
// Every error is {"error":{"code":"…","message":"…"}}, with a stable code
// (the Code constants) and its status: 400 bad input, 401 no or wrong
// token, 403 cross-site, 404 not found, 409 wrong state or not the holder,
// 413 too large, 415 a body neither JSON nor raw bytes, 421 a Host not
// allowed, 429 with Retry-After (limits), 503 store unreachable or shutting down,
// 507 store full. One table maps the sentinel errors of every primitive
// (queue, ttlhash, lock, ratelimit, schedule) to their status and code; an
// error it does not list is a failure of the store: 503 unavailable, the
// cause logged, never sent.
//
// # Security and limits
//
// With AuthToken set, every /v1 call (but the OpenAPI document), the
// dashboard's panels and actions and /metrics need "Authorization: Bearer
// <token>", compared in constant time. A put's body is bounded by the
// queue's MaxJobSize (413 beyond), other bodies by 64 KiB; a long poll by
// MaxWait; Serve sets ReadHeaderTimeout, ReadTimeout and IdleTimeout so that
// slow or idle clients cannot hold connections.
//
// Before any route, every request is checked against pages in a browser:
// its Host header must name one of AllowedHosts (421 misdirected_host,
// against DNS rebinding; /healthz is exempt), and a state-changing request
// (POST, PUT, PATCH, DELETE) is refused when it comes from another site
// (Sec-Fetch-Site: cross-site, or an Origin that does not match the Host:
// 403 cross_site) or carries a body or Content-Type other than
// application/json or application/octet-stream (415). Every reply carries
// X-Content-Type-Options: nosniff, API data and /metrics Cache-Control:
// no-store, and the dashboard a Content-Security-Policy that allows only
// its own script, style and fetches.
//
// # Adding a primitive
//
// Each primitive is one file of routes (jobs.go: a primitive value listed
// in primitives), one OpenAPI fragment (openapi/<name>.json), one dashboard
// template (dashboard/<name>.html defining "panel-<name>") and its metrics,
// registered on Metrics.Registry under the names reserved here
// (MetricLimiterDecisions, MetricExpiryLag, MetricLockGrants).
package httpapi
