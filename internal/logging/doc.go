// Package logging builds the server's slog handlers: text or JSON at a
// level, and Dedup, a handler that passes the first of a run of identical
// warnings and folds the rest into a count, so that an outage that repeats
// one warning several times a second writes one line per window:
// "redis unavailable (repeated 37 times in 10s)".
package logging
