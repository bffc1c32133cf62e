//go:build !linux

package tmpfstest

import (
	"runtime"
	"testing"
)

// Mount skips the test: a size-limited tmpfs needs Linux.
func Mount(t testing.TB, size int64) string {
	t.Helper()
	t.Skipf("SKIPPED: this test fills a size-limited tmpfs, which needs Linux (running on %s)", runtime.GOOS)
	return ""
}
