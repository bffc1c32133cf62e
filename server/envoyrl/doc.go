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
// The answers are envoyproxy/ratelimit's (unlimited, shadow and quota
// mode, hits_addend, the descriptor's limit override, replaces, unknown
// keys and domains), checked against it by bench/cmd/envoydiff; the
// configuration loads and is refused as there. Where hourglass
// deliberately differs, docs/envoy.md says so in one table: rolling
// windows instead of fixed ones, a refused hit not charged, and the
// descriptors of one request with GCRA limits (outside shadow and quota
// mode) decided together by one Limiter.AllowAll and charged all or none.
// Each descriptor is decided on its own store key (the domain and the
// descriptor's entries).
//
// Hourglass's extensions to the format, inside rate_limit: algorithm
// (gcra, the default; sliding_log; sliding_window), per (any period, in
// place of unit) and burst (GCRA). See docs/envoy.md.
//
// Server follows http.Server: Serve(l) returns ErrServerClosed after
// Shutdown or Close. Its methods are safe for concurrent use.
package envoyrl
