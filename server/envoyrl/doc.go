// Package envoyrl implements Envoy's rate limit service,
// envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit, over gRPC
// on hourglass's ratelimit.Limiter, with gRPC health checking and
// reflection, configured in envoyproxy/ratelimit's YAML format.
//
// A Config is loaded from a file or a directory of .yaml files (one domain
// each) with LoadConfig; Server.Serve polls the files every
// ReloadInterval and swaps a changed, valid configuration in atomically. A
// bad one is refused with an error (wrapping ErrConfig) naming the file and
// line, and the old one stays in force.
//
// Each descriptor of a request that reaches a limit is decided by one
// Limiter.AllowN call on its own store key (the domain and the
// descriptor's entries), charged hits_addend events: that decision is
// atomic. The descriptors of one request are on different keys and are
// decided one after the other: as in envoyproxy/ratelimit, a descriptor
// within its limit is charged even when another descriptor of the same
// request is over (no all-or-none across keys).
//
// Hourglass's extensions to the format, inside rate_limit: algorithm
// (gcra, the default; sliding_log; sliding_window), per (any period, in
// place of unit) and burst (GCRA). See docs/envoy.md.
//
// Server follows http.Server: Serve(l) returns ErrServerClosed after
// Shutdown or Close. Its methods are safe for concurrent use.
package envoyrl
