package httpapi

import (
	"log/slog"
	"net/http"
	"time"
)

// accessLog logs each HTTP request at info level once it is answered
// (Server.AccessLog).
func accessLog(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r)
		log.Info("http request", "method", r.Method, "path", r.URL.Path, "status", rec.status,
			"bytes", rec.bytes, "duration_ms", DurationMS(time.Since(start)), "remote", r.RemoteAddr)
	})
}

// DurationMS is d in milliseconds to the microsecond, as the logs give
// durations ("duration_ms"): one number with its unit in its key, the same
// in the text and JSON formats (slog writes a time.Duration as text in one
// and as nanoseconds in the other).
func DurationMS(d time.Duration) float64 {
	return float64(d.Round(time.Microsecond).Microseconds()) / 1000
}

type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(p []byte) (int, error) {
	n, err := r.ResponseWriter.Write(p)
	r.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the writer's Flush and
// deadlines (long polls and event streams use them).
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// Flush flushes the underlying writer, for streams.
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
